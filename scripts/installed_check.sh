#!/usr/bin/env bash
# ctxbench installed, run from an empty folder: `cargo install --path . --root TMP` (which reuses the release
# build of target/, so after `cargo build --release` it only copies the binary), then every command the README
# shows, in a folder that holds nothing of the repository. The bundled dataset is generated in memory and the
# bundled configurations are read from the binary; traces come from the clone's fixtures by absolute path.
#
#   scripts/installed_check.sh            # exits non-zero, naming the command, when one fails
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

time cargo install --quiet --locked --path "$repo" --root "$tmp/root"
bin="$tmp/root/bin/ctxbench"
mkdir "$tmp/work"
cd "$tmp/work"

step() {
  echo "+ ctxbench $*" >&2
  if ! "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; then
    cat "$tmp/out" "$tmp/err" >&2
    echo "installed_check: 'ctxbench $*' failed from an empty folder" >&2
    exit 1
  fi
}

step --version
# Every `ctxbench` command of the README's shell blocks, in its order and as written (`cargo run --release --`
# is the installed `ctxbench`; `traces/` is the clone's samples, tests/fixtures/import/, as its comment says;
# the shard line runs once per shard), then the commands its text names.
readme_commands() {
  python3 - "$repo/README.md" "$repo/tests/fixtures/import/" <<'PY'
import re, sys
readme, samples = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2]
for block in re.findall(r"^```sh\n(.*?)^```", readme, flags=re.S | re.M):
    for line in block.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        line = re.sub(r"^cargo run --release -- ", "ctxbench ", line)
        if not line.startswith("ctxbench "):
            continue
        line = line.removeprefix("ctxbench ").replace("traces/", samples)
        shard = re.search(r"--shard 0/(\d+) --out (\S+)0\b", line)
        for k in range(int(shard.group(1)) if shard else 1):
            print(line.replace("0/", f"{k}/").replace(f"{shard.group(2)}0", f"{shard.group(2)}{k}") if shard else line)
PY
}
mapfile -t commands < <(readme_commands)
test "${#commands[@]}" -ge 8 || { echo "installed_check: found ${#commands[@]} README commands" >&2; exit 1; }
for line in "${commands[@]}"; do
  read -ra args <<<"$line"
  step "${args[@]}"
done
test -s reports/default/report.html
test -s reports/mine/report.html
test -s runs/all/summary.json
step run --config configs/default.toml --strategies none,pipeline --name configured
step run --strategies presets --name presets
step sweep
step sweep --grid configs/sweep_presets.toml --name sweep-presets
step run --dataset mine.jsonl --name mine-8000 --window 8000
step usage mine.jsonl --per-call
step validate mine.jsonl
step strategies -v
step init
step run --config ctxbench.toml --strategies none,compaction
step init sweep
step gen --seed 42
cmp datasets/default.jsonl "$repo/datasets/default.jsonl"

# A failing command: its cause once, a hint, every line within 100 columns, exit 2.
set +e
"$bin" run --dataset missing.jsonl >/dev/null 2>"$tmp/err"
code=$?
set -e
test "$code" -eq 2 || { echo "installed_check: a missing dataset exited $code, not 2" >&2; exit 1; }
grep -q '^  hint: ' "$tmp/err" || { cat "$tmp/err" >&2; echo "installed_check: no hint" >&2; exit 1; }
if awk 'length > 100' "$tmp/err" | grep -q .; then
  cat "$tmp/err" >&2
  echo "installed_check: an error line is over 100 columns" >&2
  exit 1
fi
echo "installed_check: every README command works from an empty folder with the installed binary" >&2
