#!/usr/bin/env bash
# Refreshes ctxbench's pinned price table from the public tables it is trimmed from (docs/pricing.md):
# LiteLLM's model_prices_and_context_window.json (read from the litellm wheel, not installed) and pydantic's
# genai-prices (installed in a venv). Both from PyPI, cached under ~/.cache/ctxbench/prices. Writes
# assets/prices/prices.json (with the versions, the date and the licences), the licence texts beside it, and
# tests/fixtures/prices/genai_matches.json (what genai-prices itself matches names to, for the matcher's test).
#
# usage: scripts/refresh_prices.sh [LITELLM_VERSION [GENAI_PRICES_VERSION]]   (default: the newest of each)
# Then: cargo test --lib llm::pricing, read the diff of prices.json, and say what changed in the commit.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${CTXBENCH_CACHE:-$HOME/.cache/ctxbench}/prices
litellm=${1:+==$1}
genai=${2:+==$2}
mkdir -p "$cache/wheels" assets/prices tests/fixtures/prices
if [ ! -x "$cache/venv/bin/python" ]; then
  python3 -m venv "$cache/venv"
fi
"$cache/venv/bin/pip" install --quiet --upgrade "genai-prices$genai"
rm -f "$cache"/wheels/litellm-*.whl
python3 -m pip download --quiet --no-deps "litellm$litellm" -d "$cache/wheels"
wheel=$(ls "$cache"/wheels/litellm-*.whl)
"$cache/venv/bin/python" scripts/refresh_prices.py "$wheel" assets/prices tests/fixtures/prices/genai_matches.json
