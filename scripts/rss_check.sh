#!/usr/bin/env bash
# Peak memory against the number of episodes: a run streams its dataset (a bounded read-ahead window), so
# peak RSS must not follow the dataset's size. Generates 42, 84, 168 and 336 distinct episodes (seeds 1..8
# of the generator, ids made unique) and runs the default comparison on each with /usr/bin/time's maximum
# resident set size.
#
# usage: scripts/rss_check.sh [MAX_SEEDS=8]
set -euo pipefail
cd "$(dirname "$0")/.."
max=${1:-8}
work=target/rss-check
mkdir -p "$work"
cargo build --release --quiet
bin=./target/release/ctxbench
for seed in $(seq 1 "$max"); do
  [ -f "$work/seed$seed.jsonl" ] || $bin gen --seed "$seed" --out "$work/seed$seed.jsonl" > /dev/null
done
peak() { # dataset -> max RSS in KB (GNU time, or Python's resource module where it is missing)
  python3 - "$bin" "$1" "$work/out" <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "run", "--dataset", sys.argv[2], "--out", sys.argv[3]], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
}
printf "%-9s %-7s %-10s %s\n" episodes items "MB in" "peak RSS (MB)"
seeds=1
first=""
while [ "$seeds" -le "$max" ]; do
  data="$work/data-$seeds.jsonl"
  for seed in $(seq 1 "$seeds"); do
    # Unique ids per seed: the generator numbers episodes the same way for every seed.
    sed "s/\"id\":\"\\([^\"]*\\)\"/\"id\":\"s$seed-\\1\"/" "$work/seed$seed.jsonl"
  done > "$data"
  episodes=$(wc -l < "$data")
  items=$(python3 -c "import json,sys; print(sum(len(json.loads(l)['items']) for l in open(sys.argv[1])))" "$data")
  mb=$(du -m "$data" | cut -f1)
  kb=$(peak "$data")
  printf "%-9s %-7s %-10s %s\n" "$episodes" "$items" "$mb" "$((kb / 1024))"
  first=${first:-$kb}
  last=$kb
  seeds=$((seeds * 2))
done
# Streaming: the largest dataset may not take 1.3x the peak of the smallest (a runner that held its episodes
# would take about 8x for 8x the episodes). What remains is bounded by design: the token-count cache's two
# generations (at most 32 k counts), the mock's per-episode answer cache (sized by the largest episode) and the
# compute-time histograms fill up over the first few hundred episodes, then stay (31 -> 36 MB from 42 to 1,344
# episodes). Every table's rows are streamed to disk, and the per-strategy results kept as running totals.
if [ $((last * 10)) -ge $((first * 13)) ]; then
  echo "peak RSS grew from $((first / 1024)) MB to $((last / 1024)) MB: 1.3x or more" >&2
  exit 1
fi
echo "peak RSS grew from $((first / 1024)) MB to $((last / 1024)) MB: under 1.3x"
