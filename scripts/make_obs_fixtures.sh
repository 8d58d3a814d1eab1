#!/usr/bin/env bash
# Writes the observability fixtures with the real libraries, and checks what ctxbench makes of them.
#
# usage: scripts/make_obs_fixtures.sh          regenerate into a temporary folder and check (CI: a new library
#                                              version that changes a format fails here)
#        scripts/make_obs_fixtures.sh --write  the same, then replace tests/fixtures/import/obs/ with what it wrote
#
# Three venvs under ~/.cache/ctxbench (made once, remade when a pin below changes), every version pinned:
# - inspect-ai and its built-in mockllm/model, whose custom_outputs make tool calls: a .eval and a .json log,
#   and a .eval per compaction strategy (tests/fixtures/compacted);
# - opentelemetry-instrumentation-openai-v2 2.4b0 (with opentelemetry-util-genai 1.1b0: 1.3b0 fails at import)
#   and openinference-instrumentation-openai, driving the openai client against scripts/obs_fixtures/stub.py on
#   127.0.0.1: the latest experimental GenAI convention (content on spans, then on events) and OpenInference;
# - openai-v2 2.3b0 with SDK 1.37 (the last to write the v1.30 events) and httpx beside openai.
# The OTLP/JSON lines are written as an OTel Collector's file exporter writes them (scripts/obs_fixtures/
# otel_agent.py says how: no Collector binary is installable from the registries this project uses).
# Recorded prompt tokens are what gpt-4o counts for each request (tiktoken o200k_base, OpenAI's chat accounting;
# scripts/obs_fixtures/openai_count.py); tiktoken's vocabulary is seeded from the tiktoken-rs crate.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1
cd "$(dirname "$0")/.."
here=scripts/obs_fixtures
cache="$HOME/.cache/ctxbench"
mkdir -p "$cache"

INSPECT_PINS="inspect-ai==0.3.285 tiktoken==0.14.0"
LATEST_PINS="openai==3.51.0 httpx==0.28.1 tiktoken==0.14.0 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2
  opentelemetry-proto==1.45.2 opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-instrumentation==0.66b2
  opentelemetry-semantic-conventions==0.66b2 opentelemetry-instrumentation-openai-v2==2.4b0
  opentelemetry-util-genai==1.1b0 openinference-instrumentation-openai==0.1.66 openinference-instrumentation==0.1.72
  openinference-semantic-conventions==0.1.42"
LEGACY_PINS="openai==3.51.0 httpx==0.28.1 opentelemetry-api==1.37.0 opentelemetry-sdk==1.37.0
  opentelemetry-proto==1.37.0 opentelemetry-exporter-otlp-proto-common==1.37.0 opentelemetry-instrumentation==0.58b0
  opentelemetry-semantic-conventions==0.58b0 opentelemetry-instrumentation-openai-v2==2.3b0"

venv() { # NAME PINS: a venv with exactly these pins, remade when they change
  local dir="$cache/obs-$1" pins
  pins=$(echo "$2" | tr -s ' \n' ' ')
  if [ ! -x "$dir/bin/python" ] || [ "$(cat "$dir/.pins" 2>/dev/null)" != "$pins" ]; then
    rm -rf "$dir"
    python3 -m venv "$dir"
    # shellcheck disable=SC2086
    "$dir/bin/pip" install --quiet $pins
    echo "$pins" > "$dir/.pins"
  fi
  echo "$dir/bin/python"
}
py_inspect=$(venv inspect "$INSPECT_PINS")
py_latest=$(venv latest "$LATEST_PINS")
py_legacy=$(venv legacy "$LEGACY_PINS")

cargo build --release --quiet
# tiktoken downloads its vocabulary at run time: seed its cache (the SHA-1 of the URL) from the cargo registry.
export TIKTOKEN_CACHE_DIR="$cache/obs-tiktoken"
mkdir -p "$TIKTOKEN_CACHE_DIR"
url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
name=$(printf '%s' "$url" | sha1sum | cut -d' ' -f1)
if [ ! -f "$TIKTOKEN_CACHE_DIR/$name" ]; then
  vocab=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken | sort -V | tail -1)
  cp "$vocab" "$TIKTOKEN_CACHE_DIR/$name"
fi

out=$(mktemp -d)
stub_pid=
cleanup() { [ -n "$stub_pid" ] && kill "$stub_pid" 2>/dev/null; rm -rf "$out"; }
trap cleanup EXIT

# Inspect AI: two samples; the .eval with two epochs, the .json with one.
"$py_inspect" "$here/inspect_task.py" "$out/inspect"
cp "$out"/inspect/eval/*.eval "$out/inspect.eval"
cp "$out"/inspect/json/*.json "$out/inspect.json"
# Inspect AI with each of its compaction strategies (the agent's own compaction, replayed as `as_recorded`).
"$py_inspect" "$here/inspect_compaction.py" "$out/compaction"

# OpenTelemetry and OpenInference: the stub on a free port of 127.0.0.1.
port=$("$py_latest" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$py_latest" "$here/stub.py" "$port" &
stub_pid=$!
for _ in $(seq 50); do
  "$py_latest" -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 0.2
done
"$py_latest" "$here/otel_agent.py" latest-span "$out/otel_latest_span.jsonl" "$port"
"$py_latest" "$here/otel_agent.py" latest-event "$out/otel_latest_event.jsonl" "$port"
"$py_latest" "$here/otel_agent.py" openinference "$out/openinference.jsonl" "$port"
mkdir -p "$out/otel_legacy"
"$py_legacy" "$here/otel_agent.py" legacy "$out/otel_legacy" "$port" 2> >(grep -v "LogDeprecatedInitWarning\|return cls(" >&2)
"$py_latest" "$here/otel_agent.py" tools "$out/otel_tools.json" "$port"
kill "$stub_pid"
stub_pid=

python3 "$here/check.py" target/release/ctxbench "$out"

if [ "${1:-}" = "--write" ]; then
  dest=tests/fixtures/import/obs
  rm -rf "$dest"
  mkdir -p "$dest/otel_legacy"
  cp "$out"/inspect.eval "$out"/inspect.json "$out"/otel_latest_span.jsonl "$out"/otel_latest_event.jsonl \
    "$out"/openinference.jsonl "$dest/"
  # The agent's tool definitions, for --tools: beside the folder, which then holds only traces.
  cp "$out"/otel_tools.json tests/fixtures/obs_tools.json
  cp "$out"/otel_legacy/*.jsonl "$dest/otel_legacy/"
  cp "$out"/compaction/inspect_*.eval tests/fixtures/compacted/
  # The bad-input corpus's malformed copies of them (their lines and expected errors in cases.toml).
  "$py_inspect" tests/fixtures/bad/make_obs_fixtures.py
  echo "wrote $dest and tests/fixtures/bad/import/g_obs_*"
fi
