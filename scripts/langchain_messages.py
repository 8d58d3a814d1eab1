"""Shared by langchain_compare.py and external_langchain_trim.py: ctxbench items as LangChain messages, and a
tiktoken counter with ctxbench's accounting (the OpenAI cookbook's: 3 per message + role + content; a tool
call is an assistant message of its arguments, plus its name and 3 tokens of the call's own, the function-call
accounting of hmarr/openai-chat-tokens that ctxbench's Tokenizer::count_item uses)."""

import json

import tiktoken
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

TOKENS_PER_MESSAGE = 3
TOKENS_PER_REPLY = 3
TOKENS_PER_CALL = 3

enc = tiktoken.get_encoding("o200k_base")


def tokens(text):
    return len(enc.encode_ordinary(text))


def count_message(m):
    if isinstance(m, AIMessage) and m.tool_calls:
        call = m.tool_calls[0]
        return (
            TOKENS_PER_MESSAGE
            + tokens("assistant")
            + tokens(m.additional_kwargs["raw_arguments"])
            + tokens(call["name"])
            + TOKENS_PER_CALL
        )
    role = {SystemMessage: "system", HumanMessage: "user", ToolMessage: "tool"}.get(type(m), "assistant")
    return TOKENS_PER_MESSAGE + tokens(role) + tokens(m.content)


def count(messages):
    """The token_counter a user passes to trim_messages: tokenizes every message on every call."""
    return sum(count_message(m) for m in messages)


def to_message(item, mid=None):
    """One LangChain message per ctxbench item (`mid` becomes the message id)."""
    kind = item["type"]
    if kind == "message":
        cls = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}[item["role"]]
        return cls(content=item["content"], id=mid)
    if kind == "tool_call":
        try:
            args = json.loads(item["arguments"])
        except ValueError:
            args = None
        if not isinstance(args, dict):
            args = {"input": item["arguments"]}
        return AIMessage(
            content="",
            id=mid,
            tool_calls=[{"name": item["name"], "args": args, "id": item["id"]}],
            additional_kwargs={"raw_arguments": item["arguments"]},
        )
    return ToolMessage(content=item["content"], tool_call_id=item["call_id"], id=mid)


def to_sent_message(item, mid):
    """The LangChain message of an item a request sends, as the conformance drivers build it: an observation is a
    user message (a HumanMessage); an item with no LangChain message stops the driver, naming it."""
    if item["type"] == "observation":
        return HumanMessage(content=item["content"], id=mid)
    if item["type"] not in ("message", "tool_call", "tool_result"):
        raise SystemExit(f"item {mid}: a {item['type']!r} has no LangChain message in this driver")
    return to_message(item, mid)
