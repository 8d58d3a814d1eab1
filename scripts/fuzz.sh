#!/usr/bin/env bash
# Fuzzes the dataset parser and every importer with cargo-fuzz (libFuzzer), each for a bounded time.
# Seeds: the import fixtures, the bad-input corpus and the first lines of the bundled dataset. A crash stops
# with the crashing input under fuzz/artifacts/TARGET/; keep it as a regression fixture in
# tests/fixtures/bad/ with its expected error in cases.toml.
#
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET=30] [TARGET...]
# Needs a nightly toolchain (rustup toolchain install nightly) and cargo-fuzz (cargo install cargo-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
command -v cargo-fuzz > /dev/null || cargo install cargo-fuzz --locked
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
fi
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/$target"
  mkdir -p "$corpus"
  if [ "$target" = dataset ]; then
    cp tests/fixtures/bad/dataset/* "$corpus/" 2>/dev/null || true
    head -n 1 datasets/default.jsonl > "$corpus/bundled-first-line.jsonl"
  else
    cp tests/fixtures/import/* tests/fixtures/bad/import/* "$corpus/" 2>/dev/null || true
    cp tests/fixtures/import/obs/*.* tests/fixtures/import/obs/otel_legacy/* "$corpus/" 2>/dev/null || true
  fi
  echo "== $target: ${seconds}s"
  (cd fuzz && cargo +nightly fuzz run "$target" "corpus/$target" -- -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 2>&1 | grep -E "^(#|Done|stat::number_of_executed_units|==|SUMMARY|artifact)" | tail -4)
done
