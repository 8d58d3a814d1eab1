#!/usr/bin/env python3
"""A ctxbench external strategy that wraps langchain-core's trim_messages, so that a LangChain agent's own
trimming can be scored by ctxbench as it is. Needs langchain-core and tiktoken (scripts/langchain_compare.sh
installs both in target/langchain-venv, and seeds tiktoken's vocabulary offline).

usage (in a run config; the venv's python):
    [[strategies]]
    name = "langchain-trim"
    type = "external"
    command = ["target/langchain-venv/bin/python", "scripts/external_langchain_trim.py", "16000"]
"""
import json
import sys

import tiktoken
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, trim_messages

enc = tiktoken.get_encoding("o200k_base")


def tokens(text):
    return len(enc.encode_ordinary(text))


def to_message(index, item):
    """One LangChain message per ctxbench item; its id is the item's index, to map the kept ones back."""
    mid = str(index)
    if item["type"] == "message":
        cls = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}[item["role"]]
        return cls(content=item["content"], id=mid)
    if item["type"] == "tool_call":
        try:
            args = json.loads(item["arguments"])
        except ValueError:
            args = None
        if not isinstance(args, dict):
            args = {"input": item["arguments"]}
        return AIMessage(content="", id=mid, tool_calls=[{"name": item["name"], "args": args, "id": item["id"]}],
                         additional_kwargs={"raw": item["arguments"]})
    return ToolMessage(content=item["content"], tool_call_id=item["call_id"], id=mid)


def count(messages):
    """ctxbench's accounting: 3 per message + role + content (a tool call: its JSON {name, arguments})."""
    total = 0
    for m in messages:
        if isinstance(m, AIMessage) and m.tool_calls:
            body = json.dumps({"name": m.tool_calls[0]["name"], "arguments": m.additional_kwargs["raw"]},
                              separators=(",", ":"), ensure_ascii=False)
            total += 3 + tokens("assistant") + tokens(body)
        else:
            role = {SystemMessage: "system", HumanMessage: "user", ToolMessage: "tool"}.get(type(m), "assistant")
            total += 3 + tokens(role) + tokens(m.content)
    return total


def main():
    max_tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 16000
    for line in sys.stdin:
        request = json.loads(line)["request"]
        if request["instructions"]:
            # trim_messages sees one list; instructions would be system messages in front of it.
            print(json.dumps({"unchanged": True}), flush=True)
            continue
        contents = request["contents"]
        messages = [to_message(i, it) for i, it in enumerate(contents)]
        kept = trim_messages(messages, max_tokens=max_tokens - 3, token_counter=count, strategy="last",
                             include_system=True, start_on="human", allow_partial=False)
        request["contents"] = [contents[int(m.id)] for m in kept]
        print(json.dumps({"request": request}), flush=True)


if __name__ == "__main__":
    main()
