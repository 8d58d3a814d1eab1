#!/usr/bin/env bash
# Writes the expected messages of ctxbench's OpenHands import with OpenHands' own code: installs `openhands-ai`
# (default 0.62.0, the release of the commit the shared OpenHands traces were read at) from PyPI into a venv
# outside the repository, then runs scripts/make_openhands_fixture.py on the event stream
# tests/fixtures/import/openhands_session.json, and writes the converter's texts ctxbench ships
# (assets/openhands/fn_call_prompts.json). openhands-ai needs Python 3.12 or later (pyenv's is found).
# Usage: scripts/make_openhands_fixture.sh [OPENHANDS_AI_VERSION]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
ver=${1:-0.62.0}
venv=${CTXBENCH_CACHE:-$HOME/.cache/ctxbench}/venv-openhands-$ver

python=""
for candidate in python3.13 python3.12 "$HOME/.pyenv/versions/3.12.1/bin/python"; do
  if command -v "$candidate" >/dev/null 2>&1 \
    && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    python=$candidate
    break
  fi
done
[ -n "$python" ] || { echo "error: openhands-ai $ver needs Python 3.12 or later" >&2; exit 2; }

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('openhands-ai') == '$ver'" 2>/dev/null; then
  echo "installing openhands-ai==$ver into $venv (a large install) ..."
  "$venv/bin/pip" install -q "openhands-ai==$ver"
fi

fixtures="$repo/tests/fixtures/import"
"$venv/bin/python" "$repo/scripts/make_openhands_fixture.py" \
  "$fixtures/openhands_session.json" \
  "$fixtures/openhands_session_expected.json" \
  "$fixtures/openhands_text_fncall.jsonl" \
  "$repo/assets/openhands/fn_call_prompts.json"
echo "wrote $fixtures/openhands_session_expected.json, $fixtures/openhands_text_fncall.jsonl and assets/openhands/fn_call_prompts.json"
