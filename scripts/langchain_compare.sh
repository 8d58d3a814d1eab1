#!/usr/bin/env bash
# ctxbench against langchain-core's trim_messages on the same replay of the same episodes.
#
# usage: scripts/langchain_compare.sh [EPISODES=42] [MAX_TOKENS=16000]
#
# Installs langchain-core and tiktoken from PyPI into target/langchain-venv. Python tiktoken downloads its
# vocabulary at run time; the o200k_base file that ships inside the tiktoken-rs crate (already in the cargo
# registry after a build) seeds its cache, so no other download is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
episodes=${1:-42}
max_tokens=${2:-16000}
work=target/langchain-compare
venv=target/langchain-venv
mkdir -p "$work"

cargo build --release --quiet
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "langchain-core>=0.3,<2" "tiktoken>=0.7,<1"
fi

# Seed tiktoken's cache: the file name is the SHA-1 of the URL it would download.
cache="$work/tiktoken-cache"
mkdir -p "$cache"
url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
name=$(printf '%s' "$url" | sha1sum | cut -d' ' -f1)
if [ ! -f "$cache/$name" ]; then
  vocab=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken 2>/dev/null | sort -V | tail -1)
  if [ -z "$vocab" ]; then
    echo "o200k_base.tiktoken not found in the cargo registry (build ctxbench first)" >&2
    exit 2
  fi
  cp "$vocab" "$cache/$name"
fi
export TIKTOKEN_CACHE_DIR="$PWD/$cache"

head -n "$episodes" datasets/default.jsonl > "$work/subset.jsonl"
cat > "$work/config.toml" <<EOF
context_window = 128000
[[strategies]]
name = "none"
type = "none"
[[strategies]]
name = "langchain_trim"
type = "sliding_window"
max_tokens = $max_tokens
keep_first_user = false
start_on_user = true
EOF

start=$(date +%s.%N)
./target/release/ctxbench run --dataset "$work/subset.jsonl" --config "$work/config.toml" --out "$work/run" > /dev/null
end=$(date +%s.%N)
seconds=$(python3 -c "print($end - $start)")

total=$(wc -l < datasets/default.jsonl)
if [ "$episodes" -lt "$total" ]; then
  echo "note: the first $episodes of the bundled dataset's $total episodes, its smallest: ctxbench's time is mostly its"
  echo "start-up (process, threads, the pre-tokenizer, the reports), so the speed ratio is far below the whole dataset's; run without arguments"
  echo "for the figure the target is about"
fi
"$venv/bin/python" scripts/langchain_compare.py "$work/subset.jsonl" "$work/run/steps.csv" "$seconds" "$max_tokens" langchain_trim
