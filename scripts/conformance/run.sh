#!/usr/bin/env bash
# The presets against the frameworks' own code, call point by call point (docs/presets.md).
#
# usage: scripts/conformance/run.sh [FRAMEWORK...]     (inspect strands langchain langmem adk openhands; default: all)
#
# Each framework's pinned release is installed from PyPI into its own venv under
# ~/.cache/ctxbench/venv-conformance/ (kept between runs; the installs run side by side), its driver replays the
# episodes through the library's own code as its agent loop drives it, `ctxbench sends` writes what the presets
# send at the same call points, and compare.py prints a table per preset and fails below 100% of the comparable
# call points, the departures docs/presets.md lists aside. Episodes: the bundled dataset's coding-05, coding-07,
# coding-08, research-06, research-07, support-05, support-07 and support-09 at windows of 8k, 16k and 32k; and
# the real traces of ../shared/traces at 8k and 16k when that folder is there (skipped, saying so, when it is not);
# for ADK also the two episodes adk_edge.py writes, at 8k.
#
# OpenHands installs only into Python 3.12 or newer: run.sh takes python3.12 or python3.13 from PATH, else one of
# pyenv's, else asks uv (installed from PyPI into the cache) for one (`uv python install`, which downloads
# python-build-standalone from GitHub); where none is found it skips OpenHands, saying so.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=scripts/conformance
frameworks=("$@")
[ ${#frameworks[@]} -gt 0 ] || frameworks=(inspect strands langchain langmem adk openhands)
work=target/conformance
venvs=${CTXBENCH_CACHE:-$HOME/.cache/ctxbench}/venv-conformance
mkdir -p "$work" "$venvs"
started=$(date +%s)

# The pinned releases, one venv each (its name carries the pins, so a new pin makes a new venv).
declare -A pins=(
  [inspect]="inspect-ai==0.3.285 tiktoken==0.12.0"
  [strands]="strands-agents==1.62.0 tiktoken==0.12.0"
  [langchain]="langchain-core==1.8.1 tiktoken==0.12.0"
  [langmem]="langmem==0.0.30 langchain-core==1.8.1 langgraph==1.2.24 tiktoken==0.12.0"
  [adk]="google-adk==2.15.0 tiktoken==0.12.0"
  [openhands]="openhands-sdk==1.58.2 tiktoken==0.12.0"
)
declare -A presets=(
  [inspect]="inspect_compaction_summary,inspect_compaction_trim,inspect_compaction_edit,inspect_compaction_native"
  [strands]="strands_auto"
  [langchain]="langchain_trim"
  [langmem]="langmem_summary"
  [adk]="adk_compaction"
  [openhands]="openhands_sdk"
)
# The Python each framework's venv is made with (python3 unless it needs a newer one).
declare -A python=()
declare -A drivers=([openhands]=openhands_sdk)
for fw in "${frameworks[@]}"; do
  [ -n "${pins[$fw]:-}" ] || { echo "unknown framework '$fw' (known: ${!pins[*]})" >&2; exit 2; }
done
venv_of() { echo "$venvs/$1-$(printf '%s' "${pins[$1]}" | sha1sum | cut -c1-10)"; }

# A Python of 3.12 or newer: PATH's, pyenv's, or uv's (which it may have to download).
py312() {
  local p
  for p in python3.13 python3.12 python3; do
    if command -v "$p" > /dev/null && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2> /dev/null; then
      command -v "$p"; return 0
    fi
  done
  for p in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 2> /dev/null | sort -rV); do
    "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2> /dev/null && { echo "$p"; return 0; }
  done
  local uv=$venvs/uv
  [ -x "$uv/bin/uv" ] || { python3 -m venv "$uv" && "$uv/bin/pip" install --quiet --disable-pip-version-check uv; } \
    > "$work/install-uv.log" 2>&1 || return 1
  export UV_PYTHON_INSTALL_DIR=$venvs/uv-python
  p=$("$uv/bin/uv" python find 3.12 2> /dev/null) \
    || { timeout 300 "$uv/bin/uv" python install 3.12 >> "$work/install-uv.log" 2>&1 \
         && p=$("$uv/bin/uv" python find 3.12 2> /dev/null); } || return 1
  echo "$p"
}
if [[ " ${frameworks[*]} " == *" openhands "* ]]; then
  if p=$(py312); then
    python[openhands]=$p
  else
    echo "skipping OpenHands (openhands_sdk): openhands-sdk installs only into Python 3.12 or newer, and none was found (not python3.12/3.13 on PATH, not pyenv's, and uv could not install one: $(tail -1 "$work/install-uv.log" 2> /dev/null))" >&2
    rest=()
    for fw in "${frameworks[@]}"; do [ "$fw" = openhands ] || rest+=("$fw"); done
    frameworks=("${rest[@]}")
    [ ${#frameworks[@]} -gt 0 ] || exit 0
  fi
fi
for fw in "${frameworks[@]}"; do
  v=$(venv_of "$fw")
  if [ ! -f "$v/.installed" ]; then
    (rm -rf "$v" && "${python[$fw]:-python3}" -m venv "$v" \
      && "$v/bin/pip" install --quiet --disable-pip-version-check ${pins[$fw]} \
      && touch "$v/.installed") > "$work/install-$fw.log" 2>&1 &
  fi
done

cargo build --release --quiet
bin=target/release/ctxbench

# Python tiktoken downloads its vocabulary at run time; the o200k_base file inside the tiktoken-rs crate (in the
# cargo registry after a build) seeds its cache instead: the file name is the SHA-1 of the URL.
cache="$work/tiktoken-cache"
mkdir -p "$cache"
url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
name=$(printf '%s' "$url" | sha1sum | cut -d' ' -f1)
if [ ! -f "$cache/$name" ]; then
  vocab=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken 2>/dev/null | sort -V | tail -1)
  [ -n "$vocab" ] || { echo "o200k_base.tiktoken not found in the cargo registry (build ctxbench first)" >&2; exit 2; }
  cp "$vocab" "$cache/$name"
fi
export TIKTOKEN_CACHE_DIR="$PWD/$cache"

# The episodes.
python3 - "$work/bundled.jsonl" <<'EOF'
import json, sys
ids = "coding-05 coding-07 coding-08 research-06 research-07 support-05 support-07 support-09".split()
with open(sys.argv[1], "w") as out:
    for line in open("datasets/default.jsonl", encoding="utf-8"):
        if json.loads(line)["id"] in ids:
            out.write(line)
EOF
sets=("bundled:8000" "bundled:16000" "bundled:32000")
if [ -d ../shared/traces ]; then
  "$bin" import ../shared/traces -o "$work/traces.jsonl" > /dev/null 2> "$work/import.log"
  sets+=("traces:8000" "traces:16000")
else
  echo "skipping the real traces: ../shared/traces is absent (they are not part of the repository)" >&2
fi
echo "not checked: the OpenHands V0 condensers (openhands_recent, openhands_observation_masking, openhands_amortized, openhands_llm: docs/presets.md says why)" >&2
# ADK's compaction on the shapes the episodes above do not have (scripts/conformance/adk_edge.py).
if [[ " ${frameworks[*]} " == *" adk "* ]]; then
  python3 "$here/adk_edge.py" "$work/adk_edge.jsonl"
  sets+=("adk_edge:8000:adk")
fi

wait
for fw in "${frameworks[@]}"; do
  v=$(venv_of "$fw")
  [ -f "$v/.installed" ] || { echo "installing $fw failed:" >&2; cat "$work/install-$fw.log" >&2; exit 2; }
done
installed=$(date +%s)

args=()
for set in "${sets[@]}"; do
  # NAME:WINDOW, or NAME:WINDOW:FRAMEWORK for a set only that framework's preset is checked on.
  name=${set%%:*}
  rest=${set#*:}
  w=${rest%%:*}
  if [ "$rest" != "$w" ]; then fws=("${rest#*:}"); else fws=("${frameworks[@]}"); fi
  data=$work/$name.jsonl
  label="$name/$((w / 1000))k"
  all=$(for fw in "${fws[@]}"; do echo -n "${presets[$fw]},"; done)
  ours=$work/ctxbench-$name-$w.jsonl
  theirs=$work/frameworks-$name-$w.jsonl
  "$bin" sends --dataset "$data" --strategies "${all%,}" --window "$w" > "$ours"
  for fw in "${fws[@]}"; do
    "$(venv_of "$fw")/bin/python" "$here/${drivers[$fw]:-$fw}_driver.py" "$data" "$ours" "$w" "$work/$fw-$name-$w.jsonl" &
  done
  wait
  for fw in "${fws[@]}"; do cat "$work/$fw-$name-$w.jsonl"; done > "$theirs"
  args+=("$label" "$data" "$ours" "$theirs")
done
status=0
"$(venv_of "${frameworks[0]}")/bin/python" "$here/compare.py" docs/presets.md "${args[@]}" || status=$?
ended=$(date +%s)
echo "conformance: $((ended - started)) s in all, $((installed - started)) s of it building ctxbench and installing what was not cached"
exit $status
