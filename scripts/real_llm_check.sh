#!/usr/bin/env bash
# A real model end to end: llama-cpp-python's OpenAI-compatible server running SmolLM2-135M-Instruct on the
# CPU, on 127.0.0.1 with an API key, and ctxbench runs with [llm] on three short episodes
# (tests/fixtures/llm/short.jsonl) with a summarizing strategy, masking and probes. It checks that
#   1. --dry-run sends nothing, and how far its estimate is from what the run then sends;
#   2. the summaries and answers come from the model (llm_calls.jsonl: model smollm2, HTTP 200), and the
#      key is in no file the run wrote;
#   3. a re-run sends no request (the response cache);
#   4. SIGKILL mid-run, then --resume, gives the tables of an uninterrupted run;
#   5. killing the server mid-run makes the run exit non-zero with its journal kept, and --resume finishes
#      it once the server is back.
# The server and the model are installed into ~/.cache/ctxbench (scripts/llm_servers.sh): the first time takes
# a few minutes (the llama.cpp build), later runs reuse them. Prints the figures it measured.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/llm_servers.sh

install_llama
smollm2_model >/dev/null
cargo build --release --quiet
BIN="$PWD/target/release/ctxbench"
DATA="$PWD/tests/fixtures/llm/short.jsonl"
WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    log "FAILED: $*"
    exit 1
}

export CTXBENCH_CHECK_KEY="ctxbench-check-$RANDOM$RANDOM$RANDOM"
PORT="$(free_port)"
start() {
    SERVER_PID="$(start_llama "$PORT" "$CTXBENCH_CHECK_KEY")"
    wait_for "http://127.0.0.1:$PORT/v1/models" 180
}
start
log "llama-cpp-python serving SmolLM2 on 127.0.0.1:$PORT (pid $SERVER_PID)"

# A config: masking, a summarizing pipeline, the baseline; the window small enough for both to act.
config() {
    cat >"$WORK/$1.toml" <<EOF
context_window = 1200
[llm]
base_url = "http://127.0.0.1:$PORT/v1"
model = "smollm2"
api_key_env = "CTXBENCH_CHECK_KEY"
cache_dir = "$WORK/cache-$1"
max_tokens = 48
max_concurrency = ${2:-2}
max_retries = 2
backoff_ms = 200
timeout_s = 120
[judge]
base_url = "http://127.0.0.1:$PORT/v1"
model = "smollm2"
api_key_env = "CTXBENCH_CHECK_KEY"
cache_dir = "$WORK/cache-$1"
max_tokens = 200
response_format = "json_object_schema"
max_concurrency = ${2:-2}
max_retries = 2
backoff_ms = 200
timeout_s = 120
[pricing.models."smollm2"]
input = 0.15
cached_input = 0.15
output = 0.60
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
run() { "$BIN" run --dataset "$DATA" "$@"; }

# 1. The bill first.
CFG="$(config main)"
run --config "$CFG" --dry-run | tee "$WORK/dry.txt"
[ ! -d "$WORK/cache-main" ] || [ -z "$(ls -A "$WORK/cache-main")" ] || fail "the dry run wrote to the cache"
DRY_TOKENS="$(awk -F'|' '/^\| total/ {gsub(/ /,"",$6); gsub(/ /,"",$7); print $6+$7}' "$WORK/dry.txt")"

# 2. A run: the model answers.
run --config "$CFG" --out "$WORK/a" | tee "$WORK/a.txt"
CALLS="$WORK/a/llm_calls.jsonl"
python3 - "$CALLS" "$DRY_TOKENS" <<'PY' || fail "llm_calls.jsonl"
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
summaries = [c for c in calls if c["purpose"] == "strategy"]
probes = [c for c in calls if c["purpose"] == "probe"]
judged = [c for c in calls if c["purpose"] == "judge"]
assert summaries and probes and judged, (len(summaries), len(probes), len(judged))
for c in calls:
    assert c["model"] == "smollm2" and "error" not in c, c
sent = [c for c in calls if c["attempts"] > 0]
assert all(c["status"] == 200 for c in sent), [c.get("status") for c in sent]
assert all(c["text"].strip() for c in summaries), "a summary is empty"
tokens = sum(c["input_tokens"] + c["output_tokens"] for c in sent)
dry = float(sys.argv[2])
print(f"calls: {len(calls)} ({len(summaries)} summaries, {len(probes)} probes, {len(judged)} judge), {len(sent)} sent to the model; "
      f"tokens sent {tokens} against the dry run's estimate {dry:.0f}: {100 * (dry - tokens) / tokens:+.1f}%")
print("a summary by SmolLM2:", summaries[0]["text"][:300].replace("\n", " "))
print("a grade by SmolLM2 as judge:", judged[0]["text"][:200].replace("\n", " "))
PY
python3 - "$WORK/a/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for r in s["strategies"]:
    print(f"judge, {r['strategy']}: graded {r['judge_graded']} of {r['judged']}, overall {r['judge_score']}, "
          f"agreement with exact answers {r['judge_agreement']}")
PY
if grep -rqF "$CTXBENCH_CHECK_KEY" "$WORK/a" "$WORK/cache-main"; then fail "the key is in an output or cache file"; fi

# 3. A re-run sends nothing.
run --config "$CFG" --out "$WORK/b" >"$WORK/b.txt"
grep -q " 0 HTTP requests sent" "$WORK/b.txt" || { cat "$WORK/b.txt"; fail "the re-run sent requests"; }
log "re-run: 0 requests sent"

# Waits until the run writing $1 has journaled at least one episode (in $1.partial until it completes).
wait_journal() {
    local start=$SECONDS
    until [ -f "$1.partial/resume.jsonl" ] && [ "$(wc -l <"$1.partial/resume.jsonl")" -ge 2 ]; do
        (( SECONDS - start < 900 )) || fail "no episode was journaled in $1 after 15 minutes"
        sleep 0.2
    done
}
# The tables without the measured latency (a real call's time differs from run to run).
tables() {
    python3 - "$1" <<'PY'
import csv, sys
for name in ("steps.csv", "episodes.csv"):
    rows = list(csv.reader(open(f"{sys.argv[1]}/{name}")))
    skip = {i for i, h in enumerate(rows[0]) if h == "strategy_llm_ms"}
    for r in rows:
        print(name, ",".join(v for i, v in enumerate(r) if i not in skip))
PY
}

# 4. SIGKILL mid-run, then --resume: the tables of an uninterrupted run with the same answers.
CFG="$(config killed 1)"
# (ctxbench itself in the background, not a shell function: $! must be its PID.)
"$BIN" run --dataset "$DATA" --config "$CFG" --out "$WORK/k" >/dev/null 2>&1 &
RUN_PID=$!
wait_journal "$WORK/k"
kill -9 "$RUN_PID" 2>/dev/null || true
wait "$RUN_PID" 2>/dev/null || true
[ -f "$WORK/k.partial/resume.jsonl" ] || fail "the killed run left no journal"
[ ! -e "$WORK/k" ] || fail "the killed run was swapped in"
run --config "$CFG" --out "$WORK/k" --resume >/dev/null || fail "--resume after SIGKILL"
run --config "$CFG" --out "$WORK/k-again" >"$WORK/k-again.txt"
grep -q " 0 HTTP requests sent" "$WORK/k-again.txt" || fail "the uninterrupted re-run was not served from the cache"
diff <(tables "$WORK/k") <(tables "$WORK/k-again") >/dev/null || fail "the resumed tables differ from an uninterrupted run's"
log "SIGKILL + --resume: the same tables as an uninterrupted run"

# 5. The server killed mid-run: a non-zero exit, the journal kept; --resume finishes once it is back.
CFG="$(config lost 1)"
"$BIN" run --dataset "$DATA" --config "$CFG" --out "$WORK/l" >"$WORK/l.txt" 2>&1 &
RUN_PID=$!
wait_journal "$WORK/l"
kill -9 "$SERVER_PID"
SERVER_PID=""
set +e
wait "$RUN_PID"
CODE=$?
set -e
[ "$CODE" -ne 0 ] || fail "the run exited 0 with the server gone"
[ -f "$WORK/l.partial/resume.jsonl" ] || fail "the journal was not kept"
log "server killed mid-run: exit $CODE, journal kept: $(tail -n 2 "$WORK/l.txt" | tr '\n' ' ')"
start
run --config "$CFG" --out "$WORK/l" --resume >/dev/null || fail "--resume once the server is back"
grep -q '"complete": true' "$WORK/l/summary.json" || fail "the resumed run is not complete"
log "--resume finished the run once the server was back"
log "real LLM check passed"
