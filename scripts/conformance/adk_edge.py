"""Writes the episodes that check the paths of ADK's compaction the bundled episodes and the real traces do not
take (run.sh runs adk_compaction on them beside the other sets). Written here rather than by an agent because no
recorded session has these shapes on purpose; each is ctxbench's own episode format.

- edge-tiny: ten invocations of one short question and one short answer (summaries of small ranges, each
  range's saving priced against the previous summary's size).
- edge-calls: nine invocations of a question, a call, its result and an answer, where the calls of invocations
  2 and 6 are never answered (an interrupted turn): the first range ends before the open call (its invocation
  is the newest), a later one summarizes past it once it is provably dead, and the open call is not sent.

usage: adk_edge.py OUT_JSONL
"""

import json
import sys


def message(role, content):
    return {"type": "message", "role": role, "content": content}


def call(ident, name, arguments):
    return {"type": "tool_call", "id": ident, "name": name, "arguments": arguments}


def result(ident, name, content):
    return {"type": "tool_result", "call_id": ident, "name": name, "content": content}


def episode(ident, items):
    return {"id": ident, "source": "conformance/adk_edge", "task": items[1]["content"], "items": items}


def main():
    tiny = [message("system", "Answer in one word.")]
    for k in range(10):
        tiny += [message("user", f"q{k}"), message("assistant", f"a{k}")]
    calls = [message("system", "Use the look tool to answer.")]
    for k in range(9):
        calls += [message("user", f"question {k}: " + "word " * 30), call(f"c{k}", "look", json.dumps({"k": k}))]
        if k not in (2, 6):
            calls.append(result(f"c{k}", "look", f"fact {k} " * 40))
        calls.append(message("assistant", f"answer {k}"))
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        for ep in (episode("edge-tiny", tiny), episode("edge-calls", calls)):
            out.write(json.dumps(ep) + "\n")


if __name__ == "__main__":
    main()
