#!/usr/bin/env bash
# Opens a run's report.html in headless Chromium, takes a screenshot and checks that the rendered page holds
# every table and chart. Installs Debian's chromium when it is missing (CI on a fresh machine).
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

chromium "${flags[@]}" --window-size=1200,4200 --screenshot="$shot" "file://$html" >/dev/null 2>&1
chromium "${flags[@]}" --dump-dom "file://$html" 2>/dev/null > "$profile/dom.html"

python3 - "$profile/dom.html" "$shot" <<'PY'
import sys, zlib, struct
dom = open(sys.argv[1], encoding="utf-8").read()
checks = {
    "comparison table": "<h2>Comparison</h2>" in dom and dom.count("<table>") >= 4,
    "five inline charts": sum(dom.count(f'id="{c}"') for c in
        ["context_tokens", "retention_over_steps", "cumulative_cost", "retention_vs_savings", "llm_calls"]) == 5,
    "chart svgs rendered": dom.count("<svg") >= 5,
    "configuration": "<h2>Configuration</h2>" in dom,
}
png = open(sys.argv[2], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "screenshot is not a PNG"
width, height = struct.unpack(">II", png[16:24])
# Decode enough of the image to see that it is not blank: count distinct bytes of the raw scanlines.
idat = b"".join(png[i + 8:i + 8 + struct.unpack(">I", png[i:i + 4])[0]]
                for i in range(8, len(png)) if png[i + 4:i + 8] == b"IDAT")
raw = zlib.decompress(idat)
checks["screenshot not blank"] = len(set(raw[: 4_000_000])) > 16
failed = [k for k, ok in checks.items() if not ok]
print(f"report.html in headless chromium: {width}x{height} screenshot, " + ", ".join(f"{k}: {'ok' if ok else 'FAILED'}" for k, ok in checks.items()))
sys.exit(1 if failed else 0)
PY
echo "screenshot: $shot"
