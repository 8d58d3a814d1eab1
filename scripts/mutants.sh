#!/usr/bin/env bash
# Mutation testing of the code every figure comes from: the metrics (src/metrics/), pricing
# (src/llm/pricing.rs) and retention (src/history/evidence.rs, src/replay/evidence.rs). Each mutant is built
# and the library's tests run against it (they include the hand-computed episode of src/metrics/by_hand.rs);
# a mutant that survives is a figure no test pins. Results land in mutants.out/ (outcomes.json, caught.txt,
# missed.txt, unviable.txt, timeout.txt).
#
# usage: scripts/mutants.sh [JOBS=2] [extra cargo-mutants arguments, e.g. -f src/metrics/cost.rs]
# Installs cargo-mutants (pinned) when it is missing. About 45 minutes on 2 cores for the ~680 mutants.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=27.1.0
if ! cargo mutants --version 2>/dev/null | grep -q "$VERSION"; then
    cargo install --locked --version "$VERSION" cargo-mutants
fi
jobs="${1:-2}"
shift || true
files=(
    -f 'src/metrics/*.rs'
    -f src/llm/pricing.rs
    -f src/history/evidence.rs
    -f src/replay/evidence.rs
)
# Test-only files hold no code to mutate.
exclude=(-e src/metrics/by_hand.rs)
if [ "$#" -gt 0 ]; then
    files=()
fi
cargo mutants --no-shuffle -j "$jobs" "${files[@]}" "${exclude[@]}" "$@" -- --lib
