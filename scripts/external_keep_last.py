#!/usr/bin/env python3
"""A ctxbench external strategy with no dependencies: keep the system messages, the first user message and
the newest N items, never a tool result without its call. It shows the protocol (see src/strategy/external.rs):
one JSON line in per call point, one JSON line out.

usage (in a run config):
    [[strategies]]
    name = "keep-last-40"
    type = "external"
    command = ["python3", "scripts/external_keep_last.py", "40"]
"""
import json
import sys


def reduce(contents, keep):
    first_user = next((i for i, it in enumerate(contents) if it.get("role") == "user"), None)
    head = [i for i, it in enumerate(contents) if it.get("role") == "system" or i == first_user]
    body = [i for i in range(len(contents)) if i not in head]
    kept = set(head) | set(body[-keep:] if keep else [])
    calls = {contents[i]["id"] for i in kept if contents[i]["type"] == "tool_call"}
    return [it for i, it in enumerate(contents) if i in kept and (it["type"] != "tool_result" or it["call_id"] in calls)]


def main():
    keep = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    for line in sys.stdin:
        call = json.loads(line)
        request = call["request"]
        if len(request["contents"]) <= keep + 2:
            print(json.dumps({"unchanged": True}), flush=True)
            continue
        request["contents"] = reduce(request["contents"], keep)
        print(json.dumps({"request": request}), flush=True)


if __name__ == "__main__":
    main()
