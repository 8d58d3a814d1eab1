#!/usr/bin/env bash
# Mutation testing of the code every figure comes from: the metrics (src/metrics/), pricing
# (src/llm/pricing/) and retention (src/history/evidence.rs, src/replay/evidence.rs). Each mutant is built
# and the library's tests run against it (they include the hand-computed episode of src/metrics/by_hand.rs);
# a mutant that survives is a figure no test pins. Results land in mutants.out/ (outcomes.json, caught.txt,
# missed.txt, unviable.txt, timeout.txt).
#
# usage: scripts/mutants.sh [JOBS=2] [extra cargo-mutants arguments, e.g. -f src/metrics/cost.rs]
# Installs cargo-mutants (pinned) when it is missing. About 960 mutants; see docs/mutants.md for the last
# outcome and how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=27.1.0
if ! cargo mutants --version 2>/dev/null | grep -q "$VERSION"; then
    cargo install --locked --version "$VERSION" cargo-mutants
fi
jobs="${1:-2}"
shift || true
# The files every headline figure is computed in. Left out: the catalog's plumbing (src/metrics/mod.rs), chart
# series and timing percentiles (src/metrics/series.rs, timing.rs) and LLM-use counts (llm_use.rs), which the
# CLI and determinism tests cover.
files=(
    -f src/metrics/aggregate.rs -f src/metrics/cost.rs -f src/metrics/retention.rs -f src/metrics/needs.rs
    -f src/metrics/probes.rs -f src/metrics/acted.rs -f src/metrics/intervals/mod.rs
    -f src/metrics/intervals/share.rs -f src/metrics/bootstrap.rs
    -f src/metrics/tokens.rs -f src/metrics/token_share.rs -f src/metrics/judge.rs
    -f src/metrics/floor.rs -f src/metrics/fidelity.rs -f src/report/recommend.rs -f src/run/recommend.rs
    -f src/run/advice.rs -f src/replay/unrecorded.rs
    # Prices, the cache's economics, the recorded cost and the table's lookups (tests.rs is the module's tests).
    -f src/llm/pricing/mod.rs -f src/llm/pricing/episode.rs -f src/llm/pricing/table.rs
    -f src/llm/pricing/genai.rs
    -f src/history/evidence.rs
    -f src/history/evidence/canon.rs
    -f src/replay/evidence.rs
    # The replay's incremental counts, checked against the plain reference replay (src/replay/reference.rs).
    -f src/replay/tally.rs
)
exclude=()
if [ "$#" -gt 0 ]; then
    files=()
fi
# `-C --lib` builds and runs the library's tests only: with `-- --lib` alone every mutant also rebuilt tests/cli.
cargo mutants --no-shuffle --profile mutants -j "$jobs" -C --lib "${files[@]}" ${exclude[@]+"${exclude[@]}"} "$@"
