#!/usr/bin/env bash
# The episode explorer in headless Chromium: writes the pages of a finished run (`ctxbench show RUN_DIR`, the
# episodes its report names and its largest episode, and the largest's page of one strategy, beside), then scripts/check_explorer.js opens them in Debian's
# chromium through playwright-core: sizes (at most 5 MB), time to ready (the largest under 2 s), no script
# error, no request off the disk; from report.html, the link of a finding lost to masking opens the call point
# where it was masked with the placeholder and the finding named; a click on a call point, ← →, the strategy
# picker; 900 px wide. Screenshots at 1400 and 900 px. Installs chromium (apt) and playwright-core (npm, into
# ~/.cache/ctxbench) when missing.
# Usage: scripts/check_explorer.sh RUN_DIR [SHOT_DIR]      (CTXBENCH: the binary, default target/release/ctxbench)
set -euo pipefail
cd "$(dirname "$0")/.."
run_dir=${1:?usage: scripts/check_explorer.sh RUN_DIR [SHOT_DIR]}
shots=${2:-$run_dir/screenshots}
ctxbench=${CTXBENCH:-target/release/ctxbench}
[ -s "$run_dir/summary.json" ] || { echo "error: '$run_dir' holds no finished run (summary.json)" >&2; exit 2; }

if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium (Debian package) ..."
  apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null; apt-get install -y -q chromium >/dev/null; }
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "installing node and npm (Debian packages) ..."
  apt-get install -y -q nodejs npm >/dev/null 2>&1 || { apt-get update -q >/dev/null; apt-get install -y -q nodejs npm >/dev/null; }
fi
tools=${CTXBENCH_CACHE:-$HOME/.cache/ctxbench}/explorer-check
if [ ! -d "$tools/node_modules/playwright-core" ]; then
  echo "installing playwright-core (npm) into $tools ..."
  mkdir -p "$tools"
  (cd "$tools" && npm install --no-audit --no-fund --silent playwright-core@1.64.1 >/dev/null)
fi

# The largest episode of the run's dataset (most items), and the pages: the report's episodes and it.
largest=$(python3 - "$run_dir/summary.json" <<'PY'
import json, sys
dataset = json.load(open(sys.argv[1]))["dataset"]["path"]
best = max((len(e["items"]), e["id"]) for e in map(json.loads, filter(str.strip, open(dataset))))
print(best[1])
PY
)
"$ctxbench" show "$run_dir" >/dev/null
"$ctxbench" show "$run_dir" --episode "$largest"
# A page of one strategy beside the baseline goes beside the page with every strategy, never over it.
one=$(python3 -c 'import json,sys; print(next(s["name"] for s in json.load(open(sys.argv[1]))["config"]["strategies"] if s["type"] != "none"))' "$run_dir/summary.json")
"$ctxbench" show "$run_dir" --episode "$largest" --strategies "$one"
PLAYWRIGHT_CORE="$tools/node_modules/playwright-core" node scripts/check_explorer.js "$run_dir" "$shots" "$largest"
echo "screenshots: $shots/explorer-1400.png $shots/explorer-900.png $shots/explorer-largest-1400.png $shots/explorer-largest-900.png"
