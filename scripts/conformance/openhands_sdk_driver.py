"""OpenHands' software-agent-sdk condenser driven as its Agent drives it (openhands-sdk 1.58.2): the condenser
is the one the SDK's settings build for an agent, `LLMSummarizingCondenserSettings().build_condenser(llm)`
(`openhands/sdk/settings/model.py`: `max_size=240`, `keep_first=2`, `minimum_progress=0.1`, and, no token limit
being configured, `max_tokens` the agent LLM's `effective_max_input_tokens`, here the run's window).

Every ctxbench item joins the conversation as the event the SDK records for it: the system message is the
`SystemPromptEvent` (with the episode's tools); a user message or an observation a user `MessageEvent`; an
assistant turn with tool calls one `ActionEvent` per call sharing the response's `llm_response_id`, the turn's
text the first one's `thought` (`agent.py` turns a response into actions so); an assistant turn without calls an
agent `MessageEvent`; a tool result an `ObservationEvent`. The view is the conversation state's, maintained by
`View.append_event` as events are appended (`conversation/state.py` `view`: no `enforce_properties` on a linear
append). At every call point the agent's step runs `prepare_llm_messages(state.view, condenser, llm)`
(`agent/utils.py`; `agent.py` `Agent.step`): a `Condensation` is appended to the conversation and the step
ends, the next step asking again (so a view still over a limit is condensed again); else the messages it returns
are what is sent. The summary event (`CondensationSummaryEvent`, a user message with the summary's text) sits at
the condensation's `summary_offset`, and is an event of the view like any other: the next condensation forgets
and summarizes it too.

The agent's LLM stands for a provider that counts as ctxbench does: `get_token_count` is ctxbench's count of the
messages (each text part, tool call and result as the item it is) plus the call point's `fixed_tokens` (tool
schemas and unrecorded context), and its `max_input_tokens` is the window. Its summaries (`generate`) are
common.STAND_IN. A condensation the condenser cannot make where it must (it raises) fails the call point.

usage: openhands_sdk_driver.py DATASET SENDS_JSONL WINDOW OUT_JSONL
"""

import logging
import os
import warnings

# The SDK refuses a context window under 16,384 tokens unless told (`llm.py` `_validate_context_window_size`,
# the override it names); the condenser does not read it. The 8k set needs it.
os.environ.setdefault("ALLOW_SHORT_CONTEXT_WINDOWS", "true")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from litellm.types.utils import ModelResponse
from openhands.sdk.agent.utils import prepare_llm_messages
from openhands.sdk.context.view import View
from openhands.sdk.event import ActionEvent, MessageEvent, ObservationEvent, SystemPromptEvent
from openhands.sdk.event.condenser import Condensation
from openhands.sdk.llm import LLM, Message, MessageToolCall, TextContent
from openhands.sdk.llm.llm_response import LLMResponse
from openhands.sdk.settings.model import LLMSummarizingCondenserSettings
from openhands.sdk.tool.schema import Observation

import common

STRATEGY = "openhands_sdk"
# Condensations in a row after which the driver stops: the SDK would condense at every step without end
# (src/strategy/openhands_sdk.rs MAX_ROUNDS).
MAX_ROUNDS = 20

logging.disable(logging.WARNING)
warnings.filterwarnings("ignore")


class TextObservation(Observation):
    """A tool's output as text."""


class StandIn(LLM):
    """The agent's (and so the condenser's) model: counts as ctxbench, summarizes with common.STAND_IN."""

    fixed: int = 0
    summaries: int = 0

    def get_token_count(self, messages, tools=None, add_security_risk_prediction=False):
        return common.count_request([], items_of(messages)) + self.fixed

    def generate(self, messages, tools=None, include=None, store=None, add_security_risk_prediction=False,
                 on_token=None, call_context=None, **kwargs):
        self.summaries += 1
        raw = ModelResponse(id=f"summary-{self.summaries}", choices=[], model=self.model)
        return LLMResponse(message=Message(role="assistant", content=[TextContent(text=common.STAND_IN)]),
                           metrics=self.metrics.get_snapshot(), raw_response=raw)


def items_of(messages):
    """Messages as ctxbench items (text parts, tool calls, results), for counting and mapping back."""
    out = []
    for m in messages:
        texts = [c.text for c in m.content if isinstance(c, TextContent)]
        if m.role == "tool":
            out.append({"type": "tool_result", "call_id": m.tool_call_id, "name": m.name, "content": "".join(texts)})
            continue
        for t in texts:
            out.append({"type": "message", "role": m.role, "content": t})
        for c in m.tool_calls or []:
            out.append({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments})
    return out


class Conversation:
    """One episode's events and the view the conversation state keeps of them."""

    def __init__(self, episode, tools_fixed=0):
        self.items = episode["items"]
        self.events = []
        self.view = View()
        self.action_of = {}
        self.responses = 0
        self.condensations = 0

    def append(self, event):
        self.events.append(event)
        self.view.append_event(event)

    def add(self, start, end):
        i = start
        while i < end:
            it = self.items[i]
            if not common.is_sent(it):
                i += 1
                continue
            t = it["type"]
            if t == "reasoning":
                raise SystemExit(f"item {i}: reasoning sent back has no SDK event here")
            if common.is_assistant_turn(it):
                j = i
                turn = []
                while j < end and (common.is_assistant_turn(self.items[j]) or not common.is_sent(self.items[j])):
                    if common.is_sent(self.items[j]):
                        turn.append(self.items[j])
                    j += 1
                self.responses += 1
                response = f"response-{self.responses}"
                texts = [TextContent(text=x["content"]) for x in turn if x["type"] == "message"]
                calls = [x for x in turn if x["type"] == "tool_call"]
                if not calls:
                    self.append(MessageEvent(id=f"e{len(self.events)}", source="agent", llm_response_id=response,
                                             llm_message=Message(role="assistant", content=texts)))
                for k, c in enumerate(calls):
                    ev = ActionEvent(id=f"e{len(self.events)}", thought=texts if k == 0 else [], action=None,
                                     tool_name=c["name"], tool_call_id=c["id"], llm_response_id=response,
                                     tool_call=MessageToolCall(id=c["id"], name=c["name"], arguments=c["arguments"],
                                                               origin="completion"))
                    self.action_of[c["id"]] = ev.id
                    self.append(ev)
                i = j
                continue
            if t == "message" and it["role"] == "system":
                self.append(SystemPromptEvent(id=f"e{len(self.events)}", system_prompt=TextContent(text=it["content"]),
                                              tools=[]))
            elif t == "tool_result":
                self.append(ObservationEvent(id=f"e{len(self.events)}",
                                             observation=TextObservation.from_text(it["content"]),
                                             action_id=self.action_of.get(it["call_id"], "unknown"),
                                             tool_name=it.get("name") or "tool", tool_call_id=it["call_id"]))
            else:
                self.append(MessageEvent(id=f"e{len(self.events)}", source="user",
                                         llm_message=Message(role="user", content=[TextContent(text=it["content"])])))
            i += 1

    def sent(self, messages):
        """What is sent, as the episode's items where they are the same."""
        unused = {}
        for i, it in enumerate(self.items):
            if it["type"] in ("message", "observation"):
                unused.setdefault((common.role_of(it), it["content"]), []).append(i)
        calls = {it["id"]: it for it in self.items if it["type"] == "tool_call"}
        results = {it["call_id"]: it for it in self.items if it["type"] == "tool_result"}
        out = []
        for item in items_of(messages):
            if item["type"] == "tool_call":
                out.append(dict(calls[item["id"]]))
            elif item["type"] == "tool_result":
                r = dict(results[item["call_id"]])
                r["content"] = item["content"]
                out.append(r)
            else:
                known = unused.get((item["role"], item["content"]))
                out.append(dict(self.items[known.pop(0)]) if known else item)
        return out


def replay(episode, points, window, writer):
    llm = StandIn(model="ctxbench-stand-in", usage_id="agent", max_input_tokens=window)
    condenser = LLMSummarizingCondenserSettings().build_condenser(llm)
    conv = Conversation(episode)
    items = episode["items"]
    nxt = 0
    for step, (at, fixed) in enumerate(points):
        conv.add(nxt, at)
        condenser.llm.fixed = llm.fixed = fixed
        failed = None
        for rounds in range(MAX_ROUNDS + 1):
            try:
                result = prepare_llm_messages(conv.view, condenser=condenser, llm=llm)
            except Exception as e:  # the agent's step raises: the conversation errors out here
                failed = f"{type(e).__name__}: {e}"
                break
            if isinstance(result, Condensation):
                if rounds == MAX_ROUNDS:
                    failed = f"{MAX_ROUNDS} condensations in a row and the view still needs one"
                    break
                conv.condensations += 1
                conv.append(result)
                continue
            break
        if failed is not None:
            writer.sent(episode["id"], STRATEGY, step, at, [], failed=failed)
            return
        writer.sent(episode["id"], STRATEGY, step, at, conv.sent(result))
        end = common.turn_end(items, at)
        conv.add(at, end)
        nxt = end


def main():
    dataset, sends, window, out, _ = common.args()
    episodes = common.load_dataset(dataset)
    writer = common.Writer(out)
    for ep_id, points in common.call_points(sends, STRATEGY).items():
        replay(episodes[ep_id], points, window, writer)
    writer.close()


if __name__ == "__main__":
    main()
