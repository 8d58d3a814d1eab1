"""Inspect AI's compaction driven as `react()` drives it (inspect_ai/agent/_react.py, 0.3.285): the handler is
created once per sample by `_agent_compact` with the sample's input as its prefix (system messages and every
message tagged `source="input"`: the sample's input messages, i.e. everything before the first assistant turn),
and at every call point `_model_generate` calls `compact_input(state.messages)`, appends the summary message it
returns to the history, sends the input it returns, and `record_output` calibrates the next count with the
call's usage. A `RuntimeError` from the handler ("Compaction insufficient") ends the sample: react() does not
catch it.

The model is a ModelAPI of this driver's (`ctxbench/…`): its window is the run's (set_model_info), it counts
as ctxbench does (common.count_item; the reply's priming with the tool schemas, which the bundled episodes do
not have), answers every summary with common.STAND_IN, reports the request's tokens as its usage, and stands
for OpenAI's compact endpoint (all user messages, then one opaque compaction item) for CompactionNative.

usage: inspect_driver.py DATASET SENDS_JSONL WINDOW OUT_JSONL
"""

import asyncio
import json

from inspect_ai._util.content import ContentData
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    CompactionEdit,
    CompactionNative,
    CompactionSummary,
    CompactionTrim,
    GenerateConfig,
    ModelAPI,
    ModelInfo,
    ModelOutput,
    ModelUsage,
    compaction,
    get_model,
    modelapi,
    set_model_info,
)
from inspect_ai.model._trim import partition_messages
from inspect_ai.tool import ToolCall

import common  # noqa: E402

OPAQUE = "<opaque compaction item>"
# ctxbench's size of an opaque compaction item (src/strategy/presets/servers.rs OPAQUE_ITEM_TOKENS).
OPAQUE_TOKENS = 2000

STRATEGIES = {
    "inspect_compaction_summary": CompactionSummary,
    "inspect_compaction_trim": CompactionTrim,
    "inspect_compaction_edit": CompactionEdit,
    "inspect_compaction_native": CompactionNative,
}


class Items:
    """ctxbench items <-> Inspect messages: each message remembers the items it was built from."""

    def __init__(self, items):
        self.items = items
        self.calls = {it["id"]: it for it in items if it["type"] == "tool_call"}
        self.results = {it["call_id"]: it for it in items if it["type"] == "tool_result"}
        self.by_message = {f"m{i}": it for i, it in enumerate(items)}

    def messages(self, start, end, source=None):
        out = []
        for i in range(start, end):
            it = self.items[i]
            kind = it["type"]
            mid = f"m{i}"
            if not common.is_sent(it):
                continue
            if kind == "message" and it["role"] == "system":
                out.append(ChatMessageSystem(id=mid, content=it["content"], source=source))
            elif kind == "message" and it["role"] == "user" or kind == "observation":
                out.append(ChatMessageUser(id=mid, content=it["content"], source=source))
            elif kind == "message" and it["role"] == "assistant":
                out.append(ChatMessageAssistant(id=mid, content=it["content"], source=source))
            elif kind == "tool_call":
                call = ToolCall(id=it["id"], function=it["name"], arguments=_arguments(it["arguments"]))
                last = out[-1] if out else None
                if isinstance(last, ChatMessageAssistant):
                    last.tool_calls = (last.tool_calls or []) + [call]
                else:
                    out.append(ChatMessageAssistant(id=mid, content="", tool_calls=[call], source=source))
            elif kind == "tool_result":
                out.append(ChatMessageTool(id=mid, content=it["content"], tool_call_id=it["call_id"], function=it["name"]))
            else:
                raise SystemExit(f"item {i} of type {kind!r} has no Inspect message in this driver")
        return out

    def back(self, messages):
        """The ctxbench items a list of Inspect messages sends."""
        out = []
        for m in messages:
            text = _text(m)
            if m.role == "system":
                out.append({"type": "message", "role": "system", "content": text})
            elif m.role == "user":
                # A user message as it was recorded (an observation stays one) while its text is unchanged.
                original = self.by_message.get(m.id)
                if original is not None and original.get("content") == text:
                    out.append(dict(original))
                else:
                    out.append({"type": "message", "role": "user", "content": OPAQUE if _opaque(m) else text})
            elif m.role == "assistant":
                if text:
                    out.append({"type": "message", "role": "assistant", "content": text})
                for tc in m.tool_calls or []:
                    out.append(dict(self.calls[tc.id]))
            else:
                item = dict(self.results[m.tool_call_id])
                item["content"] = text
                out.append(item)
        return out


def _arguments(raw):
    try:
        args = json.loads(raw)
    except ValueError:
        args = None
    return args if isinstance(args, dict) else {"input": raw}


def _text(m):
    if isinstance(m.content, str):
        return m.content
    return "".join(getattr(c, "text", "") for c in m.content)


def _opaque(m):
    return not isinstance(m.content, str) and any(isinstance(c, ContentData) for c in m.content)


def count_messages(messages):
    """ctxbench's count of messages (the reply's priming is counted with the tools)."""
    return sum(OPAQUE_TOKENS if _opaque(m) else sum(common.count_item(i) for i in CURRENT.back([m])) for m in messages)


CURRENT = None  # the episode's Items, for counting


@modelapi(name="ctxbench")
def _provider():
    return CtxbenchAPI


class CtxbenchAPI(ModelAPI):
    def __init__(self, model_name, base_url=None, api_key=None, config=GenerateConfig(), **model_args):
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)

    async def generate(self, input, tools, tool_choice, config):
        usage = ModelUsage(input_tokens=count_messages(input) + common.TOKENS_PER_REPLY, output_tokens=1)
        return ModelOutput.from_content(model=self.model_name, content=common.STAND_IN, stop_reason="stop").model_copy(
            update={"usage": usage}
        )

    async def count_tokens(self, input, config=None):
        if isinstance(input, str):
            return common.tokens(input)
        return count_messages(input)

    async def compact(self, input, tools, config, instructions=None):
        # OpenAI's compact endpoint: "all user messages, followed by a single compaction item".
        users = [m for m in input if m.role == "user" and not _opaque(m)]
        item = ChatMessageUser(content=[ContentData(data={"type": "compaction", "encrypted_content": OPAQUE})])
        return users + [item], None


async def replay(episode, points, strategy_name, window, writer):
    global CURRENT
    items = episode["items"]
    CURRENT = Items(items)
    model = get_model(f"ctxbench/w{window}")
    # What the provider counts besides the messages: the reply's priming, and at each call point the tool
    # schemas and the context the trace did not record (`fixed_tokens` of ctxbench's line).
    fixed = {"tokens": 0}

    async def tools_tokens(_tools):
        return common.TOKENS_PER_REPLY + fixed["tokens"]

    model.count_tool_tokens = tools_tokens
    start = common.first_turn(items)
    first = points[0][0] if points else start
    history = CURRENT.messages(0, min(start, first), source="input")
    partitioned = partition_messages(history)
    compact = compaction(STRATEGIES[strategy_name](), prefix=partitioned.system + partitioned.input, model=model)
    nxt = len(history)
    for step, (at, fixed_tokens) in enumerate(points):
        fixed["tokens"] = fixed_tokens
        tool_tokens = await tools_tokens(None)
        history += CURRENT.messages(nxt, at)
        try:
            sent, summary = await compact.compact_input(history)
        except RuntimeError as e:
            writer.sent(episode["id"], strategy_name, step, at, [], failed=str(e))
            return
        if summary is not None:
            history.append(summary)
        writer.sent(episode["id"], strategy_name, step, at, CURRENT.back(sent), tool_tokens=0)
        end = common.turn_end(items, at)
        turn = CURRENT.messages(at, end)
        usage = ModelUsage(input_tokens=count_messages(sent) + tool_tokens, output_tokens=1)
        output = ModelOutput.from_content(model="x", content="").model_copy(update={"usage": usage})
        await compact.record_output(sent, output)
        history += turn
        nxt = end


async def main():
    dataset, sends, window, out, names = common.args()
    set_model_info(f"ctxbench/w{window}", ModelInfo(context_length=window))
    episodes = common.load_dataset(dataset)
    writer = common.Writer(out)
    for name in names or list(STRATEGIES):
        for ep_id, points in common.call_points(sends, name).items():
            await replay(episodes[ep_id], points, name, window, writer)
    writer.close()


if __name__ == "__main__":
    asyncio.run(main())
