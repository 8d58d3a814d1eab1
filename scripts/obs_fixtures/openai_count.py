"""The prompt tokens an OpenAI chat model counts for a request: tiktoken's o200k_base and OpenAI's chat accounting.

Used by the stub server (stub.py) and by the Inspect AI task (inspect_task.py) to report the usage a real
gpt-4o-class model would report for the request they were sent, so that `ctxbench usage` compares the replay with
a count of what was on the wire rather than with a made-up number.

Accounting (the rules of hmarr/openai-chat-tokens, checked by its author against the API's `prompt_tokens`):
- every message: 3 tokens, plus its role and its text (plus 1 and the name when it has a `name`);
- every tool call of an assistant message: 3 tokens, plus the role, the arguments and the function name (the
  message's own 3 tokens and role only when it also has text);
- the reply is primed with 3 tokens;
- tool definitions are rendered as a TypeScript `namespace functions { ... }` block: its tokens plus 9, 4 fewer
  when the request has a system message (then the first system message also gains a trailing newline).
"""
import json

import tiktoken

ENC = tiktoken.get_encoding("o200k_base")


def n(text):
    return len(ENC.encode(text or "", disallowed_special=()))


def text_of(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("text"))


def _type(schema, indent):
    t = schema.get("type")
    if t == "string":
        return " | ".join(json.dumps(v) for v in schema["enum"]) if schema.get("enum") else "string"
    if t in ("number", "integer"):
        return " | ".join(str(v) for v in schema["enum"]) if schema.get("enum") else "number"
    if t == "boolean":
        return "boolean"
    if t == "null":
        return "null"
    if t == "array":
        items = schema.get("items")
        return (_type(items, indent) if isinstance(items, dict) else "any") + "[]"
    if t == "object":
        return "{\n" + _props(schema, indent + 2) + "\n}"
    return "any"


def _props(obj, indent):
    required = set(obj.get("required") or [])
    lines = []
    for name, p in (obj.get("properties") or {}).items():
        if p.get("description"):
            lines.append(" " * indent + "// " + p["description"])
        q = "" if name in required else "?"
        lines.append(" " * indent + f"{name}{q}: {_type(p, indent)},")
    return "\n".join(lines)


def render_tools(tools):
    lines = ["namespace functions {", ""]
    for t in tools:
        f = t.get("function", t)
        if f.get("description"):
            lines.append("// " + f["description"])
        params = f.get("parameters") or {}
        if params.get("properties"):
            lines += [f"type {f['name']} = (_: {{", _props(params, 0), "}) => any;"]
        else:
            lines.append(f"type {f['name']} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def prompt_tokens(messages, tools=None):
    """Prompt tokens of an OpenAI chat-completions request's `messages` and `tools`."""
    total = 3
    has_system = any(m.get("role") in ("system", "developer") for m in messages)
    first_system = True
    for m in messages:
        role = m.get("role")
        text = text_of(m.get("content"))
        if role in ("system", "developer") and tools and first_system:
            text += "\n"
            first_system = False
        calls = m.get("tool_calls") or []
        if text or not calls:
            total += 3 + n(role) + n(text)
            if m.get("name"):
                total += 1 + n(m["name"])
        for c in calls:
            f = c["function"]
            total += 3 + n("assistant") + n(f.get("arguments") or "{}") + n(f["name"]) + 3
    if tools:
        total += n(render_tools(tools)) + 9 - (4 if has_system else 0)
    return total
