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
step run
test -s reports/default/report.html
step show reports/default
step show reports/default --episode coding-13 --strategies compaction
step run --config configs/default.toml --strategies none,pipeline --name configured
step run --strategies presets --name presets
step sweep
step sweep --grid configs/sweep_presets.toml --name sweep-presets
step import "$repo/tests/fixtures/import/" -o mine.jsonl
step run --dataset mine.jsonl --name mine
step show reports/mine
step usage mine.jsonl --per-call
step validate mine.jsonl
step run --shard 0/2 --out runs/s0
step run --shard 1/2 --out runs/s1
step merge runs/s0 runs/s1 --out runs/all
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
