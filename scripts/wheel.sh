#!/usr/bin/env bash
# The Python wheel (pyproject.toml: maturin, the binary as `bin` bindings), built for this platform and checked
# as a Python user gets it:
# - maturin builds it with cargo's release profile and checks its manylinux tag itself (its auditwheel, the
#   lowest manylinux tag the binary's glibc symbols allow, one PyPI accepts); the wheel's name carries
#   Cargo.toml's version, and holds the binary and the `ctxbench` Python package;
# - `pip install` of the wheel into a fresh venv, then, from an empty folder: `ctxbench --version`, `python -m
#   ctxbench --version` and `ctxbench.__version__` say Cargo.toml's version; `ctxbench run` writes its report;
#   `ctxbench import` of a real trace (../shared/traces; a committed fixture, saying so, when that folder is
#   absent) and a run of what it wrote; the CLI's exit codes (0 done, 1 a check failed, 2 a harness error)
#   through the binary, `python -m ctxbench` and uvx;
# - `python -m ctxbench` finds the binary after `pip install --target` and `--prefix` too;
# - `uvx --from WHEEL ctxbench --help`, with uv from PyPI, offline;
# - `pip install .` in this clone (pip's build isolation fetches maturin from PyPI), a second fresh venv.
#
# usage: scripts/wheel.sh
#
# maturin and uv (pinned, from PyPI) live in ~/.cache/ctxbench/venv-wheel (CTXBENCH_CACHE), made once and remade
# when a pin changes. maturin builds into this clone's target/ with the release profile and no flags of its own,
# so after `cargo build --release` (CI's first command) it only links and packs; without it, it builds (several
# minutes on 2 cores). The wheel is written to target/wheels/.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 UV_PYTHON_DOWNLOADS=never
cd "$(dirname "$0")/.."
repo=$PWD
cache=${CTXBENCH_CACHE:-$HOME/.cache/ctxbench}
tools=$cache/venv-wheel
pins="maturin==1.16.0 uv==0.13.8"
started=$(date +%s.%N)
lap() { # NAME: the seconds since the last lap
  local now
  now=$(date +%s.%N)
  awk -v a="${last:-$started}" -v b="$now" -v n="$1" 'BEGIN { printf "  %-46s %6.1f s\n", n, b - a }'
  last=$now
}
fail() { echo "error: $*" >&2; exit 1; }
expect_code() { # WANT LABEL COMMAND...: runs COMMAND (output discarded), fails unless it exits with WANT
  local want=$1 label=$2 got=0
  shift 2
  "$@" >/dev/null 2>&1 || got=$?
  [ "$got" = "$want" ] || fail "$label exited with $got, not $want: $*"
}

if [ ! -x "$tools/bin/maturin" ] || [ "$(cat "$tools/.pins" 2>/dev/null)" != "$pins" ]; then
  echo "installing $pins (PyPI) into $tools ..."
  rm -rf "$tools"
  python3 -m venv "$tools"
  # shellcheck disable=SC2086
  "$tools/bin/pip" install --quiet $pins
  echo "$pins" > "$tools/.pins"
fi
echo "wheel: times"
lap "maturin and uv ready"

version=$(python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["package"]["version"])')
out=target/wheels
rm -f "$out"/ctxbench-*.whl
"$tools/bin/maturin" build --release --locked --auditwheel check --compatibility pypi --out "$out" \
  > target/wheel-build.log 2>&1 || { cat target/wheel-build.log >&2; fail "maturin build failed"; }
lap "maturin build (release profile)"
wheels=("$out"/ctxbench-*.whl)
[ "${#wheels[@]}" = 1 ] && [ -f "${wheels[0]}" ] || fail "expected one wheel in $out, found: ${wheels[*]}"
wheel=$repo/${wheels[0]}
case "$(basename "$wheel")" in
  "ctxbench-$version-py3-none-manylinux_"*"_$(uname -m).whl") ;;
  *) fail "$(basename "$wheel"): not ctxbench-$version-py3-none-manylinux_*_$(uname -m).whl (Cargo.toml says $version)" ;;
esac
python3 - "$wheel" "$version" <<'PY' || fail "the wheel's contents are not what pip needs"
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
want = {f"ctxbench-{sys.argv[2]}.data/scripts/ctxbench", "ctxbench/__init__.py", "ctxbench/__main__.py"}
missing = want - names
if missing:
    sys.exit(f"missing from the wheel: {sorted(missing)}")
PY

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --no-index "$wheel"
lap "fresh venv, pip install of the wheel"

bin=$tmp/venv/bin
empty=$tmp/empty
mkdir "$empty"
cd "$empty"
[ "$("$bin/ctxbench" --version)" = "ctxbench $version" ] || fail "ctxbench --version: $("$bin/ctxbench" --version)"
[ "$("$bin/python" -m ctxbench --version)" = "ctxbench $version" ] || fail "python -m ctxbench --version"
[ "$("$bin/python" -c 'import ctxbench; print(ctxbench.__version__)')" = "$version" ] || fail "ctxbench.__version__"
[ "$("$bin/python" -c 'import ctxbench; print(ctxbench.find_ctxbench_bin())')" = "$bin/ctxbench" ] \
  || fail "find_ctxbench_bin() is not the venv's binary"

"$bin/ctxbench" run > run.txt || { cat run.txt >&2; fail "ctxbench run from an empty folder failed"; }
for f in summary.json report.html report.md; do
  [ -s "reports/default/$f" ] || fail "ctxbench run from an empty folder wrote no reports/default/$f"
done
lap "ctxbench run (bundled dataset), empty folder"

trace=$repo/../shared/traces/claude-code/stop-hook-reflection-first-stop.jsonl
if [ ! -f "$trace" ]; then
  echo "  ../shared/traces is absent (the real traces are not part of the repository): importing the committed" \
    "fixture tests/fixtures/import/claude_code.jsonl instead" >&2
  trace=$repo/tests/fixtures/import/claude_code.jsonl
fi
"$bin/ctxbench" import "$trace" -o mine.jsonl > import.txt || { cat import.txt >&2; fail "ctxbench import failed"; }
"$bin/ctxbench" run --dataset mine.jsonl --name mine --window 1000 --out mine > mine.txt \
  || { cat mine.txt >&2; fail "ctxbench run on the imported trace failed"; }
[ -s mine/summary.json ] || fail "the run of the imported trace wrote no summary.json"
lap "ctxbench import and run of one trace"

# Exit codes are the CLI's, whichever way it is started: a raw trace given to `validate` is a failed check (1),
# a missing dataset and an unknown flag harness errors (2).
expect_code 0 "ctxbench validate" "$bin/ctxbench" validate mine.jsonl
expect_code 1 "ctxbench validate (raw trace)" "$bin/ctxbench" validate "$trace"
expect_code 1 "python -m ctxbench validate (raw trace)" "$bin/python" -m ctxbench validate "$trace"
expect_code 2 "ctxbench run (missing dataset)" "$bin/ctxbench" run --dataset missing.jsonl --out missing
expect_code 2 "python -m ctxbench run (missing dataset)" "$bin/python" -m ctxbench run --dataset missing.jsonl
expect_code 2 "python -m ctxbench (unknown flag)" "$bin/python" -m ctxbench run --no-such-flag

# `python -m ctxbench` where pip put the package somewhere else than an environment's site-packages.
pip_other() { "$bin/pip" install --quiet --no-index --no-deps "$@" "$wheel"; }
pip_other --target "$tmp/target"
[ "$(PYTHONPATH=$tmp/target "$bin/python" -m ctxbench --version)" = "ctxbench $version" ] \
  || fail "python -m ctxbench after pip install --target"
pip_other --prefix "$tmp/prefix"
site=$("$bin/python" -c 'import sys, sysconfig; print(sysconfig.get_path("purelib", vars={"base": sys.argv[1]}))' \
  "$tmp/prefix")
[ "$(PYTHONPATH=$site "$bin/python" -m ctxbench --version)" = "ctxbench $version" ] \
  || fail "python -m ctxbench after pip install --prefix"
lap "exit codes; python -m after --target, --prefix"

# uvx, with uv from PyPI: offline and without uv's cache, so the wheel alone must do.
uvx=("$tools/bin/uvx" --offline --no-cache --from "$wheel")
"${uvx[@]}" ctxbench --help > uvx-help.txt 2> uvx.err || { cat uvx.err >&2; fail "uvx --from WHEEL ctxbench --help"; }
grep -q '^Usage: ctxbench' uvx-help.txt || fail "uvx ... ctxbench --help printed no usage"
expect_code 2 "uvx ctxbench run (missing dataset)" "${uvx[@]}" ctxbench run --dataset missing.jsonl
lap "uvx --from WHEEL ctxbench"

# The clone's route: `pip install .`, which builds with maturin as pyproject.toml says (the same target/).
cd "$repo"
python3 -m venv "$tmp/venv-source"
"$tmp/venv-source/bin/pip" install --quiet . > "$tmp/pip-source.log" 2>&1 \
  || { cat "$tmp/pip-source.log" >&2; fail "pip install . failed"; }
[ "$(cd "$empty" && "$tmp/venv-source/bin/python" -m ctxbench --version)" = "ctxbench $version" ] \
  || fail "python -m ctxbench --version after pip install ."
lap "fresh venv, pip install . (this clone)"

last=$started
lap total
echo "wheel: $(basename "$wheel") ($(du -h "$wheel" | cut -f1)), checked installed by pip (wheel and clone) and uvx"
