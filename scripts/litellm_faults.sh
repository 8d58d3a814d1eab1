#!/usr/bin/env bash
# Faults against a real OpenAI-compatible server that ctxbench's team did not write: LiteLLM proxy, its
# models answering with `mock_response` (no provider is called), a master key, an rpm limit. Checks that
#   - its 429 (`llm_provider-retry-after: 60`, no Retry-After) is waited out: the run ends with the figures of
#     an unlimited model and no failed call;
#   - a model that answers 500, a refused key and a server that is down stop the run before anything is
#     written, with exit 2 and the endpoint named;
#   - a server killed mid-run makes the run exit non-zero with its journal kept, and --resume finishes it;
#   - with more episodes than max_concurrency, requests in flight stay at the limit (prints the occupancy)
#     and identical requests are sent once (prints requests sent against distinct requests).
# LiteLLM is installed into ~/.cache/ctxbench (scripts/llm_servers.sh). About 3 minutes, most of it the
# minute the rate limit asks for.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/llm_servers.sh

install_litellm
cargo build --release --quiet
BIN="$PWD/target/release/ctxbench"
WORK="$(mktemp -d)"
PROXY_PID=""
cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    log "FAILED: $*"
    exit 1
}

export CTXBENCH_PROXY_KEY="sk-ctxbench-$RANDOM$RANDOM"
PORT="$(free_port)"
cat >"$WORK/proxy.yaml" <<EOF
model_list:
  - model_name: ok
    litellm_params: {model: openai/gpt-4o-mini, api_key: unused, mock_response: "The missing header is foo.h"}
  - model_name: slow
    litellm_params: {model: openai/gpt-4o-mini, api_key: unused, mock_response: "foo.h", mock_delay: 0.25}
  - model_name: limited
    litellm_params: {model: openai/gpt-4o-mini, api_key: unused, mock_response: "The missing header is foo.h", rpm: 8}
  - model_name: broken
    litellm_params: {model: openai/gpt-4o-mini, api_key: unused, mock_response: "litellm.InternalServerError"}
  # Two replicas of one model, the first dead (nothing listens on port 9): LiteLLM's router retries the other
  # and cools the dead one down, so ctxbench sees one healthy endpoint.
  - model_name: replicas
    litellm_params: {model: openai/gpt-4o-mini, api_key: unused, api_base: "http://127.0.0.1:9/v1", num_retries: 3}
  - model_name: replicas
    litellm_params: {model: openai/gpt-4o-mini, api_key: unused, mock_response: "The missing header is foo.h", num_retries: 3}
litellm_settings:
  num_retries: 0
router_settings:
  routing_strategy: usage-based-routing-v2
  allowed_fails: 0
  cooldown_time: 5
general_settings:
  master_key: $CTXBENCH_PROXY_KEY
EOF
start() {
    "$LITELLM_VENV/bin/litellm" --config "$WORK/proxy.yaml" --host 127.0.0.1 --port "$PORT" \
        >"$WORK/proxy.log" 2>&1 &
    PROXY_PID=$!
    wait_for "http://127.0.0.1:$PORT/health/liveliness" 120
}
start
log "LiteLLM proxy on 127.0.0.1:$PORT (pid $PROXY_PID)"

# The short episodes, copied with a different system message each: more episodes than max_concurrency, all
# their requests distinct but for the ones a strategy sends unchanged.
python3 - "$PWD/tests/fixtures/llm/short.jsonl" "$WORK/many.jsonl" <<'PY'
import json, sys
episodes = [json.loads(l) for l in open(sys.argv[1])]
with open(sys.argv[2], "w") as out:
    for k in range(8):
        for e in episodes:
            e = json.loads(json.dumps(e))
            e["id"] = f"{e['id']}-{k}"
            e["items"][0]["content"] += f" (run {k})"
            out.write(json.dumps(e) + "\n")
PY
DATA="$PWD/tests/fixtures/llm/short.jsonl"

config() {
    cat >"$WORK/$1.toml" <<EOF
context_window = 1200
[llm]
base_url = "${3:-http://127.0.0.1:$PORT/v1}"
model = "$2"
api_key_env = "${4:-CTXBENCH_PROXY_KEY}"
cache_dir = "$WORK/cache-$1"
max_concurrency = ${5:-4}
max_retries = 2
backoff_ms = 200
timeout_s = 30
[[strategies]]
name = "none"
type = "none"
[[strategies]]
name = "summarization"
type = "pipeline"
threshold = 0.5
[[strategies.stages]]
type = "summarization"
keep_recent = 3
[[strategies]]
name = "compaction"
type = "compaction"
keep_last = 1
min_chars = 0
EOF
    echo "$WORK/$1.toml"
}
# The console's comparison table: from its header line to the first blank line (never empty).
tables() {
    awk '/^strategy /{t=1} t&&/^$/{exit} t' "$1" | grep . || { cat "$1"; fail "no comparison table in $1"; }
}
expect_exit() {
    local want="$1" what="$2"
    shift 2
    set +e
    "$@" >"$WORK/out.txt" 2>&1
    local code=$?
    set -e
    [ "$code" -eq "$want" ] || { cat "$WORK/out.txt"; fail "$what: exit $code, not $want"; }
    log "$what: exit $code: $(tr '\n' ' ' <"$WORK/out.txt" | cut -c1-300)"
}

# The reference: an unlimited model.
"$BIN" run --dataset "$DATA" --config "$(config ok ok)" --out "$WORK/ok" >"$WORK/ok.txt"

# 429 from the rpm limit, with only llm_provider-retry-after: waited out, the same figures, nothing failed.
"$BIN" run --dataset "$DATA" --config "$(config limited limited)" --out "$WORK/limited" >"$WORK/limited.txt" \
    || { cat "$WORK/limited.txt"; fail "the rate-limited run failed"; }
tables "$WORK/ok.txt" >"$WORK/ok.table"
tables "$WORK/limited.txt" >"$WORK/limited.table"
diff "$WORK/ok.table" "$WORK/limited.table" || fail "the rate-limited run's figures differ"
grep -q " 0 failed" "$WORK/limited.txt" || fail "a rate-limited call failed"
grep -Eq "\(([1-9][0-9]*) retries\)" "$WORK/limited.txt" || fail "the rate limit was never hit"
log "429 with llm_provider-retry-after: $(grep '^LLM:' "$WORK/limited.txt")"

# Several replicas behind LiteLLM's router, one of them dead: the run succeeds with the figures of one healthy
# endpoint and no failed call (the way to spread ctxbench's requests over a fleet: README, Scaling).
"$BIN" run --dataset "$DATA" --config "$(config replicas replicas)" --out "$WORK/replicas" >"$WORK/replicas.txt" \
    || { cat "$WORK/replicas.txt"; fail "the run against replicas with a dead one failed"; }
tables "$WORK/replicas.txt" >"$WORK/replicas.table"
diff "$WORK/ok.table" "$WORK/replicas.table" || fail "the replicas run's figures differ"
grep -q " 0 failed" "$WORK/replicas.txt" || fail "a call to the replicas failed"
log "two replicas behind LiteLLM's router, one dead: $(grep '^LLM:' "$WORK/replicas.txt")"

# A model that answers 500, a refused key, a server down from the start: exit 2 before anything is written.
expect_exit 2 "500" "$BIN" run --dataset "$DATA" --config "$(config broken broken)" --out "$WORK/broken"
[ ! -e "$WORK/broken" ] || fail "the 500 run wrote files"
export CTXBENCH_WRONG_KEY="sk-not-the-master-key"
expect_exit 2 "refused key" "$BIN" run --dataset "$DATA" \
    --config "$(config refused ok "" CTXBENCH_WRONG_KEY)" --out "$WORK/refused"
grep -q "preflight" "$WORK/out.txt" || fail "the refused key was not caught by the preflight"
DOWN="http://127.0.0.1:$(free_port)/v1"
expect_exit 2 "server down" "$BIN" run --dataset "$DATA" --config "$(config down ok "$DOWN")" --out "$WORK/down"
grep -q "cannot connect" "$WORK/out.txt" || fail "the message does not say the server is down"

# Throughput: 24 episodes, max_concurrency 4, 250 ms per answer.
"$BIN" run --dataset "$WORK/many.jsonl" --config "$(config slow slow)" --out "$WORK/slow" >"$WORK/slow.txt"
log "throughput: $(grep '^LLM:' "$WORK/slow.txt")"

# The server killed mid-run: non-zero exit, journal kept; --resume finishes once it is back.
CFG="$(config lost slow "" "" 1)"
"$BIN" run --dataset "$WORK/many.jsonl" --config "$CFG" --out "$WORK/lost" >"$WORK/lost.txt" 2>&1 &
RUN_PID=$!
start_time=$SECONDS
# Until it completes, a run is in OUT.partial.
until [ -f "$WORK/lost.partial/resume.jsonl" ] && [ "$(wc -l <"$WORK/lost.partial/resume.jsonl")" -ge 3 ]; do
    (( SECONDS - start_time < 120 )) || fail "no episode was journaled"
    sleep 0.2
done
kill -9 "$PROXY_PID"
PROXY_PID=""
set +e
wait "$RUN_PID"
CODE=$?
set -e
[ "$CODE" -ne 0 ] || fail "the run exited 0 with the proxy gone"
[ -f "$WORK/lost.partial/resume.jsonl" ] || fail "the journal was not kept"
[ ! -e "$WORK/lost" ] || fail "an incomplete run was swapped in"
log "proxy killed mid-run: exit $CODE, journal kept"
start
"$BIN" run --dataset "$WORK/many.jsonl" --config "$CFG" --out "$WORK/lost" --resume >/dev/null \
    || fail "--resume once the proxy is back"
grep -q '"complete": true' "$WORK/lost/summary.json" || fail "the resumed run is not complete"
if grep -rqF "$CTXBENCH_PROXY_KEY" "$WORK/ok" "$WORK/limited" "$WORK/slow" "$WORK/lost" "$WORK"/cache-*; then
    fail "the key is in an output or cache file"
fi
log "LiteLLM faults check passed"
