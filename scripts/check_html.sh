#!/usr/bin/env bash
# Opens a run's report.html in headless Chromium, takes screenshots 1400 px and 900 px wide and checks that the
# rendered page holds what to pick, every table (each in a scrolling box, so a narrow window never cuts one),
# every chart and the glossary. Installs Debian's chromium when it is missing (CI on a fresh machine).
# Usage: scripts/check_html.sh RUN_DIR [SCREENSHOT.png]
set -euo pipefail
run_dir=$(cd "${1:?usage: scripts/check_html.sh RUN_DIR [SCREENSHOT.png]}" && pwd)
shot=${2:-$run_dir/report-screenshot.png}
html="$run_dir/report.html"
[ -s "$html" ] || { echo "error: '$html' is missing or empty" >&2; exit 2; }

if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium (Debian package) ..."
  if ! apt-get install -y -q chromium >/dev/null 2>&1; then
    apt-get update -q >/dev/null
    apt-get install -y -q chromium >/dev/null
  fi
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars)

narrow="${shot%.png}-900.png"
chromium "${flags[@]}" --window-size=1400,5000 --screenshot="$shot" "file://$html" >/dev/null 2>&1
chromium "${flags[@]}" --window-size=900,5000 --screenshot="$narrow" "file://$html" >/dev/null 2>&1
chromium "${flags[@]}" --dump-dom "file://$html" 2>/dev/null > "$profile/dom.html"

python3 - "$profile/dom.html" "$shot" "$narrow" <<'PY'
import sys, zlib, struct
dom = open(sys.argv[1], encoding="utf-8").read()
checks = {
    "what to pick first": "<h2>What to pick</h2>" in dom
        and dom.index("<h2>What to pick</h2>") < dom.index("<h2>Comparison</h2>"),
    "every table scrolls": dom.count("<table>") == dom.count('<div class="scroll"><table>'),
    "glossary": "<h2>Glossary</h2>" in dom and dom.count("<dt>") >= 10,
    "comparison table": "<h2>Comparison</h2>" in dom and dom.count("<table>") >= 4,
    "five inline charts": sum(dom.count(f'id="{c}"') for c in
        ["context_tokens", "retention_over_steps", "cumulative_cost", "retention_vs_savings", "llm_calls"]) == 5,
    "chart svgs rendered": dom.count("<svg") >= 5,
    "configuration": "<h2>Configuration</h2>" in dom,
}
sizes = []
for path in sys.argv[2:4]:
    png = open(path, "rb").read()
    assert png[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", png[16:24])
    sizes.append(f"{width}x{height}")
    # Decode enough of the image to see that it is not blank: count distinct bytes of the raw scanlines.
    idat = b"".join(png[i + 8:i + 8 + struct.unpack(">I", png[i:i + 4])[0]]
                    for i in range(8, len(png)) if png[i + 4:i + 8] == b"IDAT")
    raw = zlib.decompress(idat)
    checks[f"{width} px screenshot not blank"] = len(set(raw[: 4_000_000])) > 16
failed = [k for k, ok in checks.items() if not ok]
print(f"report.html in headless chromium: {' and '.join(sizes)} screenshots, " + ", ".join(f"{k}: {'ok' if ok else 'FAILED'}" for k, ok in checks.items()))
sys.exit(1 if failed else 0)
PY
echo "screenshots: $shot $narrow"
