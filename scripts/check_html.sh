#!/usr/bin/env bash
# Opens a run's report.html in headless Chromium, takes screenshots 1400 px and 900 px wide and checks that the
# rendered page holds what to pick, every table (each in a scrolling box; at 1400 px the comparison fits, and a
# table wider than the window says that it scrolls), every chart or the sentence that says why it is left out,
# the glossary, figures aligned right and text left, no raw backticks outside code, the mock's summaries named
# as the mock's, a link to every episode page the run wrote, and in every chart, as laid out at 1400 and 900 px,
# no text over another (point labels off the title and off each other) and text at least 11 px at 900 px.
# Installs Debian's chromium when it is missing (CI on a fresh machine).
# Usage: scripts/check_html.sh RUN_DIR [SCREENSHOT.png]
set -euo pipefail
run_dir=$(cd "${1:?usage: scripts/check_html.sh RUN_DIR [SCREENSHOT.png]}" && pwd)
shot=${2:-$run_dir/report-screenshot.png}
mkdir -p "$(dirname "$shot")"
shot="$(cd "$(dirname "$shot")" && pwd)/$(basename "$shot")"
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
chromium "${flags[@]}" --window-size=1400,5000 --dump-dom "file://$html" 2>/dev/null > "$profile/dom.html"
chromium "${flags[@]}" --window-size=900,5000 --dump-dom "file://$html" 2>/dev/null > "$profile/dom-900.html"
# The charts as laid out at 1400 and 900 px: a copy of the page with a script at its end that measures each
# chart's text (its size on the page, and whether one text covers another) and writes what it found in the page.
python3 - "$html" "$profile/probe.html" <<'PY'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
probe = r"""<script>(() => {
  const out = { charts: 0, texts: 0, minPx: null, small: [], over: [] };
  const cut = (s) => s.replace(/\s+/g, " ").trim().slice(0, 40);
  for (const div of document.querySelectorAll("div.chart")) {
    const svg = div.querySelector("svg");
    if (!svg) continue;
    out.charts++;
    const scale = svg.getBoundingClientRect().width / (svg.viewBox.baseVal.width || svg.width.baseVal.value);
    const boxes = [];
    for (const t of svg.querySelectorAll("text")) {
      const label = cut(t.textContent);
      if (!label) continue;
      out.texts++;
      const px = parseFloat(getComputedStyle(t).fontSize) * scale;
      out.minPx = out.minPx === null ? px : Math.min(out.minPx, px);
      if (px < 11) out.small.push(`${div.id}: "${label}" at ${px.toFixed(1)} px`);
      const r = t.getBoundingClientRect();
      // Glyph boxes include the font's line gap: a pixel off each side, so that neighbours that touch pass.
      boxes.push([label, { l: r.left + 1, r: r.right - 1, t: r.top + 1, b: r.bottom - 1 }]);
    }
    boxes.forEach(([a, p], i) => {
      for (const [b, q] of boxes.slice(i + 1)) {
        if (p.l < q.r && q.l < p.r && p.t < q.b && q.t < p.b) out.over.push(`${div.id}: "${a}" over "${b}"`);
      }
    });
  }
  const pre = document.createElement("pre");
  pre.id = "chart-probe";
  pre.textContent = JSON.stringify(out);
  document.body.append(pre);
})();</script>"""
at = page.rfind("</body>")
open(sys.argv[2], "w", encoding="utf-8").write(page[:at] + probe + page[at:] if at >= 0 else page + probe)
PY
chromium "${flags[@]}" --window-size=1400,5000 --dump-dom "file://$profile/probe.html" 2>/dev/null > "$profile/probe-1400.html"
chromium "${flags[@]}" --window-size=900,5000 --dump-dom "file://$profile/probe.html" 2>/dev/null > "$profile/probe-900.html"

python3 - "$profile/dom.html" "$shot" "$narrow" "$profile/dom-900.html" "$run_dir" "$profile" <<'PY'
import html, json, os, re, sys, zlib, struct
dom = open(sys.argv[1], encoding="utf-8").read()
dom_900 = open(sys.argv[4], encoding="utf-8").read()
run_dir = sys.argv[5]

def probe(width):
    # What the script measured in the charts at this width (None when the page has no chart).
    d = open(os.path.join(sys.argv[6], f"probe-{width}.html"), encoding="utf-8").read()
    m = re.search(r'<pre id="chart-probe">(.*?)</pre>', d, flags=re.S)
    return json.loads(html.unescape(m.group(1))) if m else {"charts": -1}
probes = {w: probe(w) for w in (1400, 900)}
charts = ["context_tokens", "retention_over_steps", "cumulative_cost", "retention_vs_savings", "llm_calls"]

def wide_tables_say_so(d):
    # Every table wider than its box at this width has the line above it that says it scrolls, shown.
    boxes = re.findall(r'(<p class="wider"( hidden="")?>[^<]*</p>)?<div class="scroll( wide)?">', d)
    return all(not wide or (hint and not hidden) for hint, hidden, wide in boxes)

def figures_right_text_left(d):
    # A right-aligned cell holds a figure: digits and no word but "of" or a unit; a share may carry the note
    # "(too few episodes)" in place of its interval, and a cost without a price reads "unknown".
    cells = re.findall(r'<td class="n">(.*?)</td>', d)
    text = [re.sub(r"<[^>]+>", "", c).replace("(too few episodes)", "").replace("unknown", "–") for c in cells]
    return all(not any(ch.isalpha() for w in t.split() if w not in ("of", "pts", "pt", "ms", "s") for ch in w) for t in text)

def no_raw_backticks(d):
    body = re.sub(r"<(pre|script|style|code)\b.*?</\1>", "", d, flags=re.S)
    return "`" not in re.sub(r"<[^>]+>", "", body)

pages = sorted(f for f in os.listdir(os.path.join(run_dir, "episodes")) if f.endswith(".html")) \
    if os.path.isdir(os.path.join(run_dir, "episodes")) else []
mock = '"llm":' not in dom.split("<h2>Configuration</h2>")[-1].split("</pre>")[0]
examples = re.findall(r"<p><b>[^<]*</b>, episode .*?\(([^()]*)\):</p>\n<pre>", dom)
checks = {
    "what to pick first": "<h2>What to pick</h2>" in dom
        and dom.index("<h2>What to pick</h2>") < dom.index("<h2>Comparison</h2>"),
    "every table scrolls": dom.count("<table>") == len(re.findall(r'<div class="scroll( wide)?"><table>', dom)),
    "glossary": "<h2>Glossary</h2>" in dom and dom.count("<dt>") >= 10,
    "comparison table": "<h2>Comparison</h2>" in dom and dom.count("<table>") >= 4,
    "every chart drawn, or left out with the reason": all(
        f'<div class="chart" id="{c}"><svg' in dom or re.search(f'<p class="left-out" id="{c}">[^<]+ is left out: ', dom)
        for c in charts) if "<h2>Charts</h2>" in dom else True,
    "chart svgs rendered": dom.count("<svg") == dom.count('<div class="chart"'),
    "the comparison fits 1400 px": '<h2>Comparison</h2>\n<p class="wider" hidden="">' in dom,
    "a table wider than the window says it scrolls (1400 and 900 px)": wide_tables_say_so(dom) and wide_tables_say_so(dom_900),
    "figures right-aligned, text left": figures_right_text_left(dom) and "td a,td code{white-space:nowrap}" in dom,
    "no raw backticks outside code": no_raw_backticks(dom),
    "the mock's summaries named as the mock's": not mock or all("mock LLM" in e for e in examples),
    f"every episode page linked ({len(pages)})": all(f'href="episodes/{p}' in dom for p in pages),
    "configuration": "<h2>Configuration</h2>" in dom,
}
for w, p in probes.items():
    if p["charts"] < 0:
        checks[f"charts measured at {w} px"] = False
        continue
    if p["charts"] == 0:
        continue
    # The issue's bar: chart text at least 11 px on a page 900 px wide; at 1400 px what it is, said.
    if w == 900:
        checks[f"chart text at least 11 px at 900 px (smallest {p['minPx']:.1f} px of {p['texts']} texts in {p['charts']} charts)"] = not p["small"]
    else:
        checks[f"chart text at 1400 px: smallest {p['minPx']:.1f} px"] = True
    checks[f"no chart text over another at {w} px (labels off titles and each other)"] = not p["over"]
    for problem in (p["small"] if w == 900 else [])[:5] + p["over"][:5]:
        print(f"  {w} px: {problem}")
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
