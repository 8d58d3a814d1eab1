#!/usr/bin/env python3
"""Per-source figures for imported traces, and ctxbench's baseline prompt tokens against the prompt tokens
the provider reported, where a trace records them.

Usage: scripts/trace_report.py DATASET.jsonl RUN_DIR
  DATASET.jsonl  the output of `ctxbench import` (episodes carry the provider figures in meta)
  RUN_DIR        a `ctxbench run` of that dataset that includes the `none` strategy
Standard library only.
"""
import csv
import json
import sys
from collections import defaultdict


def main(dataset, run_dir):
    episodes = [json.loads(line) for line in open(dataset, encoding="utf-8") if line.strip()]
    steps = defaultdict(list)
    with open(f"{run_dir}/steps.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["strategy"] == "none":
                steps[row["episode"]].append(int(row["tokens_sent"]))
    by_source = defaultdict(lambda: [0, 0, 0, 0])
    comparisons = []
    for ep in episodes:
        s = by_source[ep["meta"].get("format", ep["source"])]
        ours = steps.get(ep["id"], [])
        s[0] += 1
        s[1] += len(ep["items"])
        s[2] += max(ours, default=0)
        s[3] += len(ep["findings"])
        provider = ep["meta"].get("provider_prompt_tokens")
        sent = (ep["meta"].get("model_stats") or {}).get("tokens_sent")
        if provider:
            comparisons.append((ep["id"], "per call", len(ours), len(provider), sum(ours), sum(provider)))
        elif sent:
            comparisons.append((ep["id"], "run total", len(ours), (ep["meta"]["model_stats"].get("api_calls")), sum(ours), sent))
    print("| source | episodes | items | final context tokens (sum) | auto findings |")
    print("|---|---:|---:|---:|---:|")
    for src, (n, items, tokens, findings) in sorted(by_source.items()):
        print(f"| {src} | {n} | {items} | {tokens} | {findings} |")
    print()
    print("| episode | provider figure | our call points | provider calls | our prompt tokens | provider prompt tokens | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for eid, kind, ncalls, pcalls, ours, theirs in comparisons:
        ratio = ours / theirs if theirs else float("nan")
        print(f"| {eid} | {kind} | {ncalls} | {pcalls} | {ours} | {theirs} | {ratio:.3f} |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
