"""What every framework driver of the conformance suite shares (scripts/conformance/README.md).

A driver replays the episodes of a dataset through a framework's own code, as the framework's agent loop drives
it, at the call points `ctxbench sends` names: before each call point the items recorded since the previous one
join the framework's history, the framework's context manager turns that history into the request it would
send, and then the recorded assistant turn joins the history whatever was sent (the open-loop replay of
DESIGN.md). What it sends is written back as ctxbench items, one JSON line per call point, in the form `ctxbench
sends` writes, so that `compare.py` reads both sides alike.

Counting: ctxbench's accounting (the OpenAI cookbook's, with tool calls as hmarr/openai-chat-tokens counts
them) over tiktoken's o200k_base, the run's default tokenizer; `count_request` equals the `tokens` ctxbench
prints for the same request (compare.py checks it at every call point). Every summary a framework asks for is
answered with STAND_IN, the text ctxbench's `sends` answers with (src/run/sends.rs), so both sides carry the
same summary.
"""

import json
import os
import sys

import tiktoken

# Must equal src/run/sends.rs STAND_IN_SUMMARY.
STAND_IN = "STAND-IN SUMMARY: the conversation so far, summarized."

TOKENS_PER_MESSAGE = 3
TOKENS_PER_REPLY = 3
TOKENS_PER_CALL = 3

_enc = tiktoken.get_encoding("o200k_base")
_cache = {}


def tokens(text):
    n = _cache.get(text)
    if n is None:
        n = len(_enc.encode_ordinary(text))
        if len(_cache) < 200_000:
            _cache[text] = n
    return n


def role_of(item):
    kind = item["type"]
    if kind == "message":
        return item["role"]
    if kind in ("tool_call", "reasoning"):
        return "assistant"
    if kind == "tool_result":
        return "tool"
    return "user"  # an observation


def count_item(item):
    """One item as ctxbench's Tokenizer::count_item counts it with an OpenAI encoding."""
    kind = item["type"]
    if kind == "tool_call":
        return TOKENS_PER_MESSAGE + tokens("assistant") + tokens(item["arguments"]) + tokens(item["name"]) + TOKENS_PER_CALL
    if kind == "unrecorded":
        return item["tokens"]
    return TOKENS_PER_MESSAGE + tokens(role_of(item)) + tokens(item["content"])


def count_request(instructions, contents, tool_tokens=0):
    return (
        TOKENS_PER_REPLY
        + tool_tokens
        + sum(TOKENS_PER_MESSAGE + tokens("system") + tokens(text) for text in instructions)
        + sum(count_item(i) for i in contents)
    )


def is_assistant_turn(item):
    return item["type"] in ("tool_call", "reasoning") or (item["type"] == "message" and item["role"] == "assistant")


def turn_end(items, at):
    while at < len(items) and is_assistant_turn(items[at]):
        at += 1
    return at


def first_turn(items):
    """Where the first assistant turn starts: what comes before it is the sample's input."""
    return next((i for i, it in enumerate(items) if is_assistant_turn(it)), len(items))


def load_dataset(path):
    episodes = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                ep = json.loads(line)
                episodes[ep["id"]] = ep
    return episodes


def call_points(sends_path, strategy):
    """{episode: [(item_index, fixed_tokens) of each call point]} as ctxbench replayed them (the `sends` lines of
    `strategy`): where each call point is among the episode's items, and the tokens of that request outside its
    contents (the tool schemas and the context the trace did not record), which a provider counts too."""
    points = {}
    with open(sends_path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d["strategy"] == strategy:
                points.setdefault(d["episode"], []).append((d["step"], d["item_index"], d["fixed_tokens"]))
    return {ep: [(at, fixed) for _, at, fixed in sorted(v)] for ep, v in points.items()}


def is_sent(item):
    """Whether an item is sent as part of a request's contents: not a block of unrecorded context (which
    `fixed_tokens` counts), nor reasoning the agent does not send back (src/history/mod.rs Item::is_sent)."""
    if item["type"] == "unrecorded":
        return False
    if item["type"] == "reasoning":
        return bool(item.get("sent_back"))
    return True


class Writer:
    """The driver's side: one line per call point, in `ctxbench sends`' form."""

    def __init__(self, path):
        self.f = open(path, "w", encoding="utf-8")

    def sent(self, episode, strategy, step, at, contents, instructions=(), failed=None, tool_tokens=0):
        line = {
            "episode": episode,
            "strategy": strategy,
            "step": step,
            "item_index": at,
            "tokens": count_request(list(instructions), contents, tool_tokens) if failed is None else None,
            "failed": failed,
            "request": {"instructions": list(instructions), "contents": contents},
        }
        self.f.write(json.dumps(line) + "\n")

    def close(self):
        self.f.close()


def args():
    """DATASET SENDS_JSONL WINDOW OUT_JSONL [STRATEGY...]: what every driver is given by run.sh."""
    if len(sys.argv) < 5:
        sys.exit(f"usage: {os.path.basename(sys.argv[0])} DATASET SENDS_JSONL WINDOW OUT_JSONL [STRATEGY...]")
    return sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
