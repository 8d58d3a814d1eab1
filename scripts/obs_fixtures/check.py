"""Checks what ctxbench makes of fixtures written by the real libraries.

usage: check.py CTXBENCH DIR

For each fixture in DIR (see EXPECTED): `ctxbench import --format auto` (with the agent's tool definitions where
the convention does not record them), then `ctxbench usage --per-call`: the number of episodes, call points
equal to recorded calls in each, and every call's replayed prompt tokens within 3% of the recorded ones. Prints
one line per fixture; exits 1 when a check fails. Columns are found by their header, not their place.
"""
import os
import subprocess
import sys
import tempfile

CTXBENCH, DIR = sys.argv[1], sys.argv[2]
# fixture → (expected episodes, expected call points per episode, in order, whether --tools is needed)
EXPECTED = {
    "inspect.eval": (4, [4, 4, 2, 2], False),
    "inspect.json": (2, [4, 2], False),
    "otel_latest_span.jsonl": (2, [3, 1], True),
    "otel_latest_event.jsonl": (2, [3, 1], True),
    "otel_legacy": (2, [3, 1], True),
    "openinference.jsonl": (2, [3, 1], False),
}


def tables(text):
    """Every Markdown table of `text`, as lists of {header: cell} rows."""
    out, header = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            out.append([])
        elif not set(line) <= set("|-: "):
            out[-1].append(dict(zip(header, cells)))
    return out


failed = False
for name, (episodes, points, needs_tools) in EXPECTED.items():
    path = os.path.join(DIR, name)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.jsonl")
        cmd = [CTXBENCH, "import", path, "-o", data]
        if needs_tools:
            cmd += ["--tools", os.path.join(DIR, "otel_tools.json")]
        imported = subprocess.run(cmd, capture_output=True, text=True)
        if imported.returncode != 0:
            print(f"FAIL {name}: import: {imported.stderr.strip()}")
            failed = True
            continue
        usage = subprocess.run([CTXBENCH, "usage", data, "--per-call"], capture_output=True, text=True, check=True)
    found = tables(usage.stdout)
    summary = found[0]
    calls = [t for t in found[1:] if t and "call" in t[0]]  # per-call tables; the per-format table has no `call`
    problems = []
    if len(summary) != episodes:
        problems.append(f"{len(summary)} episodes, expected {episodes}")
    got_points = [int(r["call points"]) for r in summary]
    if got_points != points:
        problems.append(f"call points {got_points}, expected {points}")
    for r in summary:
        if r["recorded calls"] != r["call points"]:
            problems.append(f"{r['episode']}: {r['call points']} call points, {r['recorded calls']} recorded calls")
    ratios = [int(c["replayed"]) / int(c["recorded"]) for table in calls for c in table]
    if len(ratios) != sum(points):
        problems.append(f"{len(ratios)} per-call rows, expected {sum(points)}")
    worst = max(ratios, key=lambda x: abs(1 - x)) if ratios else float("nan")
    if not ratios or abs(1 - worst) > 0.03:
        problems.append(f"worst replay/recorded {worst:.3f} (more than 3% off)")
    status = "FAIL" if problems else "ok"
    print(f"{status:4} {name}: {len(summary)} episodes, call points {got_points} = recorded calls, "
          f"{len(ratios)} calls, replay/recorded from {min(ratios):.3f} to {max(ratios):.3f}"
          + ("; " + "; ".join(problems) if problems else ""))
    failed |= bool(problems)
sys.exit(1 if failed else 0)
