#!/usr/bin/env bash
# The floor ratio: a full comparison (`ctxbench run`: every strategy of the config, probes, reports and charts)
# against tokenizing the dataset's text once, in one process, medians of REPEATS. A diagnostic with no target:
# it weighs the harness against the tokenizer's speed (docs/performance-history.md, "Why the floor ratio is not
# 2.0"); the performance guard is the whole run's wall time and peak memory.
#
# usage: scripts/floor_ratio.sh [DATASET=datasets/default.jsonl] [REPEATS=5] [CONFIG=the default config]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --quiet --example floor_ratio -- "${1:-datasets/default.jsonl}" "${2:-5}" ${3:+"$3"}
