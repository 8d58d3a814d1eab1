"""OpenHands' V0 condensers (openhands-ai 0.62.0, `openhands/memory/condenser/impl/`) driven as its CodeActAgent
drives them: at every call point `condenser.condensed_history(state)` over the state's history (`View.from_events`);
a `Condensation` is the agent's step (its action joins the history, and the next step asks again); a `View` is
turned into what is sent by `ConversationMemory.process_events` (`openhands/agenthub/codeact_agent/
codeact_agent.py` `CodeActAgent.step` and `_get_messages`).

Every ctxbench item joins the history as the event the agent loop records: the system message a
`SystemMessageAction`, a user message or observation a user `MessageAction`, an assistant turn with calls one
action per call (an `MCPAction`, whose result is sent verbatim) carrying the response in its `tool_call_metadata`,
an assistant turn without calls an agent `MessageAction`, a result an `MCPObservation` with the call's metadata.
The summarizer is a stand-in answering common.STAND_IN. Exploratory: not run by run.sh (docs/presets.md). Its
venv, made by hand (a full `pip install openhands-ai==0.62.0` had not resolved after 30 minutes): Python 3.12,
`pip install --no-deps openhands-ai==0.62.0`, then `pydantic tiktoken==0.12.0 "litellm>=1.74.3,<1.78.0"
"python-json-logger>=3.2.1,<4" termcolor toml "tenacity>=8.5,<10" google-genai google-api-core
google-cloud-storage boto3 uvicorn deprecated json-repair "python-frontmatter>=1.1.0,<2" openhands-aci==0.3.2
fastapi docker psutil pylatexenc python-docx tornado dirhash "kubernetes>=33.1,<34"` (what the condensers' import
chain asked for, at openhands-ai's declared ranges). An episode without a system message gets an empty system
prompt, which is not mapped back (the agent's own prompt would be sent there).

usage: openhands_v0_driver.py DATASET SENDS_JSONL WINDOW OUT_JSONL
"""

import json
import logging
import warnings

from litellm import ModelResponse
from openhands.controller.state.state import State
from openhands.core.config import AgentConfig
from openhands.events.action import MCPAction, MessageAction, SystemMessageAction
from openhands.events.event import EventSource
from openhands.events.observation import MCPObservation
from openhands.events.tool import ToolCallMetadata
from openhands.memory.condenser.condenser import Condensation
from openhands.memory.condenser.impl import (
    AmortizedForgettingCondenser,
    LLMSummarizingCondenser,
    ObservationMaskingCondenser,
    RecentEventsCondenser,
)
from openhands.memory.conversation_memory import ConversationMemory
from openhands.memory.view import View

import common

logging.disable(logging.WARNING)
warnings.filterwarnings("ignore")


class _Config:
    model = "ctxbench-stand-in"


class _Metrics:
    def get(self):
        return {}


class StandIn:
    """The condenser's LLM: every summary is common.STAND_IN."""

    config = _Config()
    metrics = _Metrics()

    def format_messages_for_llm(self, messages):
        return messages

    def completion(self, messages, extra_body=None):
        return ModelResponse(id="summary", choices=[{"message": {"role": "assistant", "content": common.STAND_IN}}])


class NoPrompt:
    """An episode without a system message: the agent's own prompt stands empty, and is not mapped back."""

    def get_system_message(self, *args, **kwargs):
        return ""


def condensers():
    return {
        "openhands_recent": lambda: RecentEventsCondenser(keep_first=1, max_events=100),
        "openhands_observation_masking": lambda: ObservationMaskingCondenser(attention_window=100),
        "openhands_amortized": lambda: AmortizedForgettingCondenser(max_size=100, keep_first=1),
        "openhands_llm": lambda: LLMSummarizingCondenser(llm=StandIn(), max_size=100, keep_first=1),
    }


class History:
    def __init__(self, items):
        self.items = items
        self.state = State(session_id="ctxbench")
        self.metadata = {}
        self.responses = 0
        self.initial = None

    def append(self, event, source):
        event._id = len(self.state.history)
        event._source = source
        self.state.history.append(event)

    def add(self, start, end):
        i = start
        items = self.items
        while i < end:
            it = items[i]
            if not common.is_sent(it):
                i += 1
                continue
            if common.is_assistant_turn(it):
                j = i
                while j < end and (common.is_assistant_turn(items[j]) or not common.is_sent(items[j])):
                    j += 1
                turn = [x for x in items[i:j] if common.is_sent(x)]
                text = "".join(x["content"] for x in turn if x["type"] == "message") or None
                calls = [x for x in turn if x["type"] == "tool_call"]
                if not calls:
                    self.append(MessageAction(content=text or ""), EventSource.AGENT)
                else:
                    self.responses += 1
                    resp = ModelResponse(id=f"resp-{self.responses}", choices=[{"message": {
                        "role": "assistant", "content": text,
                        "tool_calls": [{"id": c["id"], "type": "function",
                                        "function": {"name": c["name"], "arguments": c["arguments"]}}
                                       for c in calls]}}])
                    for c in calls:
                        meta = ToolCallMetadata(function_name=c["name"], tool_call_id=c["id"], model_response=resp,
                                                total_calls_in_response=len(calls))
                        self.metadata[c["id"]] = meta
                        a = MCPAction(name=c["name"], arguments={})
                        a.tool_call_metadata = meta
                        self.append(a, EventSource.AGENT)
                i = j
                continue
            t = it["type"]
            if t == "message" and it["role"] == "system":
                self.append(SystemMessageAction(content=it["content"]), EventSource.AGENT)
            elif t == "tool_result":
                o = MCPObservation(content=it["content"], name=it.get("name") or "tool")
                o.tool_call_metadata = self.metadata.get(it["call_id"])
                self.append(o, EventSource.ENVIRONMENT)
            else:
                m = MessageAction(content=it["content"])
                self.append(m, EventSource.USER)
                if self.initial is None:
                    self.initial = m
            i += 1


def items_of(messages, episode_items):
    unused = {}
    for i, it in enumerate(episode_items):
        if it["type"] in ("message", "observation"):
            unused.setdefault((common.role_of(it), it["content"]), []).append(i)
    calls = {it["id"]: it for it in episode_items if it["type"] == "tool_call"}
    results = {it["call_id"]: it for it in episode_items if it["type"] == "tool_result"}
    out = []
    for m in messages:
        texts = [c.text for c in m.content if hasattr(c, "text")]
        if m.role == "tool":
            r = dict(results[m.tool_call_id])
            r["content"] = "".join(texts)
            out.append(r)
            continue
        if m.role == "system" and not "".join(texts):
            continue
        for t in texts:
            # _apply_user_message_formatting puts two newlines before a user message after a user message.
            for cand in (t, t[2:] if t.startswith("\n\n") else None):
                if cand is not None and unused.get((m.role, cand)):
                    out.append(dict(episode_items[unused[(m.role, cand)].pop(0)]))
                    break
            else:
                out.append({"type": "message", "role": m.role, "content": t})
        for c in m.tool_calls or []:
            out.append(dict(calls[c.id]))
    return out


def replay(name, make, episode, points, writer):
    items = episode["items"]
    h = History(items)
    condenser = make()
    memory = ConversationMemory(AgentConfig(), NoPrompt())
    nxt = 0
    for step, (at, _fixed) in enumerate(points):
        h.add(nxt, at)
        for _ in range(21):
            r = condenser.condensed_history(h.state)
            if isinstance(r, Condensation):
                h.append(r.action, EventSource.AGENT)
                continue
            break
        events = list(r.events) if isinstance(r, View) else []
        messages = memory.process_events(condensed_history=events, initial_user_action=h.initial,
                                         max_message_chars=30_000, vision_is_active=False)
        writer.sent(episode["id"], name, step, at, items_of(messages, items))
        end = common.turn_end(items, at)
        h.add(at, end)
        nxt = end


def main():
    dataset, sends, _window, out, _ = common.args()
    episodes = common.load_dataset(dataset)
    writer = common.Writer(out)
    for name, make in condensers().items():
        for ep_id, points in common.call_points(sends, name).items():
            replay(name, make, episodes[ep_id], points, writer)
    writer.close()


if __name__ == "__main__":
    main()
