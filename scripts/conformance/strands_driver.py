"""Strands Agents' `context_manager="auto"` driven as its event loop drives it (strands-agents 1.62.0,
`strands/_context_manager/context_manager.py` and `strands/event_loop/event_loop.py`): an `Agent` with the
ContextManager plugin, its default stash and retrieval tool; every message joins `agent.messages` through
`Agent._append_messages`, which fires `MessageAddedEvent` (the stash, and the eager truncation of tool results
over 1,500 tokens); before every model call `_estimate_input_tokens(agent)` projects the input (the last
assistant message's usage plus the model's `count_tokens` of the messages after it; on the first call the
count of everything, the system prompt and tool specs included) and `BeforeModelCallEvent` runs the strategy
pipeline (truncation, summarization at 85% keeping the 4 newest messages and the task, emergency truncation);
what `agent.messages` then holds is sent. The recorded assistant turn joins as one assistant message whose
usage is the request as sent (ctxbench's count, `fixed_tokens` included) and the turn's tokens.

Strands messages from ctxbench items: system messages are the system prompt; an assistant turn (its text and
calls) is one assistant message; the results of a turn, one user message; each user message or observation,
one user message. Back to items: an assistant message's text blocks, then its calls (as an OpenAI-compatible
provider is sent them). The model is this driver's: its window the run's, `count_tokens` Strands' own default
(characters / 4, JSON / 2: what Strands uses for models without a native count, OpenAI's chat completions and
LiteLLM among them), every summary answered with common.STAND_IN.

usage: strands_driver.py DATASET SENDS_JSONL WINDOW OUT_JSONL
"""

import asyncio
import json
import logging
import warnings

from strands import Agent
from strands.event_loop.event_loop import _estimate_input_tokens
from strands.hooks.events import BeforeModelCallEvent
from strands.models.model import Model

import common  # noqa: E402

STRATEGY = "strands_auto"

logging.getLogger("strands").setLevel(logging.ERROR)
warnings.filterwarnings("ignore")


class CtxbenchModel(Model):
    """A provider without a native token count, whose window is the run's and whose every answer is the
    stand-in summary."""

    def __init__(self, window):
        self.config = {"model_id": "ctxbench", "context_window_limit": window}

    def update_config(self, **model_config):
        self.config.update(model_config)

    def get_config(self):
        return self.config

    def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
        raise NotImplementedError

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": common.STAND_IN}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}
        yield {"metadata": {"usage": {"inputTokens": 0, "outputTokens": 1, "totalTokens": 1}, "metrics": {"latencyMs": 0}}}


def _input(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class Items:
    """ctxbench items <-> Strands messages; each block built from an item remembers it."""

    def __init__(self, items):
        self.items = items
        self.calls = {it["id"]: it for it in items if it["type"] == "tool_call"}
        self.results = {it["call_id"]: it for it in items if it["type"] == "tool_result"}
        self.source = {}  # id(block) -> (block, item)

    def _text(self, text, item):
        block = {"text": text}
        self.source[id(block)] = (block, item)
        return block

    def messages(self, start, end):
        out = []
        kind_of_last = None
        for i in range(start, end):
            it = self.items[i]
            if not common.is_sent(it):
                continue
            kind = it["type"]
            if kind == "message" and it["role"] == "system":
                raise SystemExit(f"item {i}: a system message after the start has no Strands message here")
            if common.is_assistant_turn(it):
                if kind == "reasoning":
                    raise SystemExit(f"item {i}: reasoning sent back has no Strands block here")
                if kind_of_last != "assistant":
                    out.append({"role": "assistant", "content": []})
                block = (
                    {"toolUse": {"toolUseId": it["id"], "name": it["name"], "input": _input(it["arguments"])}}
                    if kind == "tool_call"
                    else self._text(it["content"], it)
                )
                out[-1]["content"].append(block)
                kind_of_last = "assistant"
            elif kind == "tool_result":
                if kind_of_last != "results":
                    out.append({"role": "user", "content": []})
                status = "error" if it.get("is_error") else "success"
                out[-1]["content"].append(
                    {"toolResult": {"toolUseId": it["call_id"], "status": status, "content": [{"text": it["content"]}]}}
                )
                kind_of_last = "results"
            else:
                out.append({"role": "user", "content": [self._text(it["content"], it)]})
                kind_of_last = "user"
        return out

    def back(self, messages):
        out = []
        for m in messages:
            texts, calls = [], []
            for block in m["content"]:
                if "text" in block:
                    known = self.source.get(id(block))
                    if known is not None and known[0] is block and known[1].get("content") == block["text"]:
                        texts.append(dict(known[1]))
                    else:
                        texts.append({"type": "message", "role": m["role"], "content": block["text"]})
                elif "toolUse" in block:
                    calls.append(dict(self.calls[block["toolUse"]["toolUseId"]]))
                elif "toolResult" in block:
                    tr = block["toolResult"]
                    item = dict(self.results[tr["toolUseId"]])
                    item["content"] = "\n".join(c.get("text", "") for c in tr["content"])
                    texts.append(item)
                else:
                    raise SystemExit(f"a block this driver does not map back: {sorted(block)}")
            out += texts + calls
        return out


async def replay(episode, points, window, writer):
    items = episode["items"]
    mapping = Items(items)
    system = []
    first = 0
    while first < len(items) and (items[first]["type"] == "message" and items[first]["role"] == "system"
                                  or not common.is_sent(items[first])):
        if common.is_sent(items[first]):
            system.append(items[first])
        first += 1
    if len(system) > 1:
        raise SystemExit(f"{episode['id']}: more than one system message")
    agent = Agent(
        model=CtxbenchModel(window),
        system_prompt=system[0]["content"] if system else None,
        context_manager="auto",
        callback_handler=None,
    )
    nxt = first
    for step, (at, fixed) in enumerate(points):
        await agent._append_messages(*mapping.messages(nxt, at))
        projected = await _estimate_input_tokens(agent)
        await agent.hooks.invoke_callbacks_async(
            BeforeModelCallEvent(agent=agent, invocation_state={}, projected_input_tokens=projected)
        )
        sent = [dict(s) for s in system] + mapping.back(agent.messages)
        writer.sent(episode["id"], STRATEGY, step, at, sent)
        end = common.turn_end(items, at)
        turn = mapping.messages(at, end)
        if turn:
            tokens_sent = common.count_request([], sent) + fixed
            output = sum(common.count_item(it) for it in items[at:end] if common.is_sent(it))
            turn[-1]["metadata"] = {
                "usage": {"inputTokens": tokens_sent, "outputTokens": output, "totalTokens": tokens_sent + output}
            }
            await agent._append_messages(*turn)
        nxt = end


async def main():
    dataset, sends, window, out, _ = common.args()
    episodes = common.load_dataset(dataset)
    writer = common.Writer(out)
    for ep_id, points in common.call_points(sends, STRATEGY).items():
        await replay(episodes[ep_id], points, window, writer)
    writer.close()


if __name__ == "__main__":
    asyncio.run(main())
