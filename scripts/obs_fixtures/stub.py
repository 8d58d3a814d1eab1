"""A small OpenAI-compatible chat-completions server on 127.0.0.1 that plays a scripted tool-using agent's model.

usage: stub.py PORT

POST /v1/chat/completions answers from the request: tool calls until the conversation holds the tool results
its script needs, then a final answer. `usage.prompt_tokens` is what gpt-4o would count for the request it was
sent (openai_count.py: tiktoken o200k_base and OpenAI's chat accounting, tools included), so a trace's recorded
prompt tokens measure what was on the wire. Serves until killed.
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openai_count import n, prompt_tokens, text_of  # noqa: E402

# Per task (recognised by a word of the first user message), the replies in order: (text, [(tool, args)]).
SCRIPTS = {
    "build": [
        ("Let me look at the configuration and the build log.",
         [("read_file", {"path": "config.ini"}), ("read_file", {"path": "build.log"})]),
        (None, [("run", {"cmd": "grep -rn zlib_inflate_init src/"})]),
        ("The build fails because module_7.o needs zlib_inflate_init from zlib: link with -lz.", []),
    ],
    "port": [
        ("Reading the configuration.", [("read_file", {"path": "config.ini"})]),
        ("The server listens on port 8443.", []),
    ],
}


def reply(body):
    messages = body["messages"]
    task = text_of(next(m["content"] for m in messages if m["role"] == "user"))
    script = SCRIPTS["port" if "port" in task else "build"]
    turn = sum(1 for m in messages if m["role"] == "assistant")
    text, calls = script[min(turn, len(script) - 1)]
    tool_calls = [
        {"id": f"call_{turn}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)
    ]
    message = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    prompt = prompt_tokens(messages, body.get("tools"))
    completion = n(text) + sum(n(c["function"]["arguments"]) + n(c["function"]["name"]) for c in tool_calls)
    return {
        "id": f"chatcmpl-stub-{turn}",
        "object": "chat.completion",
        "created": 1767225600,
        "model": body.get("model", "gpt-4o-mini"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        out = json.dumps(reply(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
