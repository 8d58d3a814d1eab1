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

from langchain_core.messages import trim_messages

from langchain_messages import TOKENS_PER_REPLY, count, to_message


def main():
    max_tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 16000
    for line in sys.stdin:
        request = json.loads(line)["request"]
        if request["instructions"]:
            # trim_messages sees one list; instructions would be system messages in front of it.
            print(json.dumps({"unchanged": True}), flush=True)
            continue
        contents = request["contents"]
        messages = [to_message(it, str(i)) for i, it in enumerate(contents)]
        kept = trim_messages(messages, max_tokens=max_tokens - TOKENS_PER_REPLY, token_counter=count, strategy="last",
                             include_system=True, start_on="human", allow_partial=False)
        request["contents"] = [contents[int(m.id)] for m in kept]
        print(json.dumps({"request": request}), flush=True)


if __name__ == "__main__":
    main()
