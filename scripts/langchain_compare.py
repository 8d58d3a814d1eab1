#!/usr/bin/env python3
"""The Python peer most users would write, against ctxbench, on the same replay of the same dataset.

At every call point of every episode, langchain-core's `trim_messages(strategy="last", include_system=True,
start_on="human")` trims the history with a tiktoken-based counter; ctxbench replays the same episodes through
its `sliding_window` with `keep_first_user = false, start_on_user = true` (the same semantics). The script
checks that both keep the same number of messages with the same token count at every call point and prints
the speed ratio. Run through scripts/langchain_compare.sh, which installs the packages in a virtual environment.

usage: langchain_compare.py DATASET STEPS_CSV CTXBENCH_SECONDS MAX_TOKENS STRATEGY
"""

import csv
import json
import sys
import time

from langchain_core.messages import trim_messages

from langchain_messages import TOKENS_PER_REPLY, count, to_message


def is_assistant_turn(item):
    return item["type"] == "tool_call" or (item["type"] == "message" and item["role"] == "assistant")


def call_points(items):
    """Before each assistant turn, and the end when items follow the last turn (as ctxbench replays)."""
    points = [
        i for i, it in enumerate(items) if is_assistant_turn(it) and (i == 0 or not is_assistant_turn(items[i - 1]))
    ]
    last_end = 0
    if points:
        last_end = points[-1]
        while last_end < len(items) and is_assistant_turn(items[last_end]):
            last_end += 1
    if not points or last_end < len(items):
        points.append(len(items))
    return points


def main():
    dataset, steps_csv, ctxbench_seconds, max_tokens, strategy = sys.argv[1:6]
    max_tokens, ctxbench_seconds = int(max_tokens), float(ctxbench_seconds)
    episodes = [json.loads(line) for line in open(dataset, encoding="utf-8") if line.strip()]
    histories = [(ep["id"], ep["items"], [to_message(it) for it in ep["items"]]) for ep in episodes]

    ours = {}
    with open(steps_csv, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["strategy"] == strategy:
                ours[(row["episode"], int(row["step"]))] = (int(row["items_sent"]), int(row["tokens_sent"]))

    started = time.perf_counter()
    theirs = {}
    for ep_id, items, messages in histories:
        for step, cp in enumerate(call_points(items)):
            # ctxbench's budget includes the reply priming; trim_messages' counter does not.
            kept = trim_messages(
                messages[:cp],
                max_tokens=max_tokens - TOKENS_PER_REPLY,
                token_counter=count,
                strategy="last",
                include_system=True,
                start_on="human",
                allow_partial=False,
            )
            theirs[(ep_id, step)] = (len(kept), count(kept) + TOKENS_PER_REPLY)
    python_seconds = time.perf_counter() - started

    same = sum(1 for k, v in theirs.items() if ours.get(k) == v)
    differ = [(k, ours.get(k), v) for k, v in theirs.items() if ours.get(k) != v]
    print(f"episodes {len(histories)}, call points {len(theirs)}, budget {max_tokens} tokens")
    print(f"same messages kept (count and tokens): {same} of {len(theirs)} call points")
    for k, a, b in differ[:10]:
        print(f"  differ at {k}: ctxbench {a} (items, tokens) vs langchain {b}")
    print(f"langchain-core trim_messages: {python_seconds:.2f} s (trimming loop only)")
    print(f"ctxbench run (whole process, baseline + strategy, reports): {ctxbench_seconds:.3f} s")
    ratio = python_seconds / ctxbench_seconds
    print(f"speed ratio: {ratio:.0f}x (target >= 50x)")
    sys.exit(0 if not differ and len(ours) == len(theirs) else 1)


if __name__ == "__main__":
    main()
