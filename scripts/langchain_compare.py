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

import tiktoken
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages import trim_messages

TOKENS_PER_MESSAGE = 3
TOKENS_PER_REPLY = 3

enc = tiktoken.get_encoding("o200k_base")


def tokens(text):
    return len(enc.encode_ordinary(text))


def count_message(m):
    """ctxbench's accounting (the OpenAI cookbook's): 3 per message + role + content; a tool call is an
    assistant message whose content is the JSON {"name", "arguments"}."""
    if isinstance(m, SystemMessage):
        return TOKENS_PER_MESSAGE + tokens("system") + tokens(m.content)
    if isinstance(m, HumanMessage):
        return TOKENS_PER_MESSAGE + tokens("user") + tokens(m.content)
    if isinstance(m, ToolMessage):
        return TOKENS_PER_MESSAGE + tokens("tool") + tokens(m.content)
    if m.tool_calls:
        call = m.tool_calls[0]
        body = json.dumps(
            {"name": call["name"], "arguments": m.additional_kwargs["raw_arguments"]},
            separators=(",", ":"),
            ensure_ascii=False,
        )
        return TOKENS_PER_MESSAGE + tokens("assistant") + tokens(body)
    return TOKENS_PER_MESSAGE + tokens("assistant") + tokens(m.content)


def count(messages):
    """The token_counter a user passes to trim_messages: tokenizes every message on every call."""
    return sum(count_message(m) for m in messages)


def to_message(item):
    kind = item["type"]
    if kind == "message":
        cls = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}[item["role"]]
        return cls(content=item["content"])
    if kind == "tool_call":
        try:
            args = json.loads(item["arguments"])
        except ValueError:
            args = None
        if not isinstance(args, dict):
            args = {"input": item["arguments"]}
        return AIMessage(
            content="",
            tool_calls=[{"name": item["name"], "args": args, "id": item["id"]}],
            additional_kwargs={"raw_arguments": item["arguments"]},
        )
    return ToolMessage(content=item["content"], tool_call_id=item["call_id"])


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
