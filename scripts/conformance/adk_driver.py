"""Google ADK's events compaction driven as its Runner drives it (google-adk 2.15.0): an `App` whose
`events_compaction_config` is the preset's, `EventsCompactionConfig(compaction_interval=3, overlap_size=1)`
with no summarizer of its own, so that ADK builds its `LlmEventSummarizer` from the root agent's model
(`apps/compaction.py` `_ensure_compaction_summarizer`).

Every ctxbench item joins the session as the event ADK would have recorded (through the session service's
`append_event`): a user message starts an invocation (`Runner.run_async`'s new message); an assistant turn
(its text and calls) is one model event of the agent; the results of a turn one event of the agent carrying
the function responses (`{"result": text}`); an observation a user event inside the invocation. When an
invocation has ended, before the next user message joins, the Runner's post-invocation compaction runs
(`runners.py` `Runner._run_post_invocation_compaction`): `_run_compaction_for_sliding_window_config` over the
session, whose compaction event (if any) is appended to the session. At every call point what is sent is what
the `contents` request processor builds (`flows/llm_flows/context/_contents.py`, `_get_contents` over the
session's events, ids kept as for a provider that pairs calls by id: OpenAI through LiteLLM, Anthropic), which
applies the compaction events (`flows/llm_flows/context/_compaction.py` `_process_compaction_events`: every
summary no later one subsumes, as the agent's own turn at its range's end); the system prompt is the agent's
instruction, sent first.

The agent's model is this driver's `BaseLlm`: every summary request is answered with common.STAND_IN.

usage: adk_driver.py DATASET SENDS_JSONL WINDOW OUT_JSONL
"""

import asyncio
import json
import logging
import warnings

from google.adk.agents import LlmAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.apps.compaction import _run_compaction_for_sliding_window_config
from google.adk.events.event import Event
from google.adk.flows.llm_flows.context._contents import _get_contents
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.sessions import InMemorySessionService
from google.genai import types

import common  # noqa: E402

STRATEGY = "adk_compaction"
AGENT = "agent"

logging.getLogger("google_adk").setLevel(logging.ERROR)
warnings.filterwarnings("ignore")


class StandIn(BaseLlm):
    """A model whose every answer is the stand-in summary."""

    model: str = "ctxbench-stand-in"
    calls: int = 0

    async def generate_content_async(self, llm_request, stream=False):
        self.calls += 1
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=common.STAND_IN)]))


def _args(raw):
    try:
        value = json.loads(raw)
    except ValueError:
        return {"input": raw}
    return value if isinstance(value, dict) else {"input": value}


class Session:
    """One episode's ADK session, fed ctxbench items."""

    def __init__(self, items, service, session, app):
        self.items = items
        self.service = service
        self.session = session
        self.app = app
        self.invocations = 0
        self.invocation = None
        self.compactions = 0

    async def _append(self, event):
        await self.service.append_event(session=self.session, event=event)

    async def _end_invocation(self):
        """The Runner's post-invocation compaction (`_run_post_invocation_compaction`)."""
        gen = _run_compaction_for_sliding_window_config(
            config=self.app.events_compaction_config,
            session=self.session,
            session_service=self.service,
            agent=self.app.root_agent,
        )
        async for event in gen:
            self.compactions += 1
            await self._append(event)

    async def add(self, start, end):
        """Items [start, end) as the events ADK would record."""
        group, kind = [], None

        async def flush():
            if not group:
                return
            last = group[-1][0]
            if kind == "model":
                parts = []
                for _, it in group:
                    if it["type"] == "tool_call":
                        parts.append(types.Part(function_call=types.FunctionCall(
                            id=it["id"], name=it["name"], args=_args(it["arguments"]))))
                    else:
                        parts.append(types.Part(text=it["content"]))
                content = types.Content(role="model", parts=parts)
            else:
                content = types.Content(role="user", parts=[
                    types.Part(function_response=types.FunctionResponse(
                        id=it["call_id"], name=it.get("name") or "tool", response={"result": it["content"]}))
                    for _, it in group
                ])
            await self._append(Event(invocation_id=self.invocation, author=AGENT, content=content,
                                     timestamp=1000.0 + last))
            group.clear()

        for i in range(start, end):
            it = self.items[i]
            if not common.is_sent(it):
                continue
            t = it["type"]
            if t == "message" and it["role"] == "system":
                raise SystemExit(f"item {i}: a system message after the start has no ADK event here")
            if t == "reasoning":
                raise SystemExit(f"item {i}: reasoning sent back has no ADK part here")
            now = "model" if common.is_assistant_turn(it) else "results" if t == "tool_result" else "user"
            if now != kind or now == "user":
                await flush()
            kind = now
            if now == "user":
                if t == "message" and it["role"] == "user":
                    if self.invocation is not None:
                        await self._end_invocation()
                    self.invocations += 1
                    self.invocation = f"inv-{self.invocations}"
                elif self.invocation is None:
                    self.invocations += 1
                    self.invocation = f"inv-{self.invocations}"
                await self._append(Event(invocation_id=self.invocation, author="user",
                                         content=types.Content(role="user", parts=[types.Part(text=it["content"])]),
                                         timestamp=1000.0 + i))
                kind = None
            else:
                if self.invocation is None:
                    self.invocations += 1
                    self.invocation = f"inv-{self.invocations}"
                group.append((i, it))
        await flush()

    def sent(self):
        """What the contents request processor sends, as ctxbench items."""
        contents = _get_contents(None, self.session.events, AGENT, preserve_function_call_ids=True)
        unused = {}
        for i, it in enumerate(self.items):
            if it["type"] == "message" and it["role"] != "system" or it["type"] == "observation":
                unused.setdefault((common.role_of(it), it["content"]), []).append(i)
        calls = {it["id"]: it for it in self.items if it["type"] == "tool_call"}
        results = {it["call_id"]: it for it in self.items if it["type"] == "tool_result"}
        out = []
        for c in contents:
            role = "assistant" if c.role == "model" else "user"
            for p in c.parts or []:
                if p.function_call is not None:
                    out.append(dict(calls[p.function_call.id]))
                elif p.function_response is not None:
                    item = dict(results[p.function_response.id])
                    response = p.function_response.response
                    if response != {"result": item["content"]}:
                        item["content"] = json.dumps(response)
                    out.append(item)
                elif p.text is not None:
                    known = unused.get((role, p.text))
                    if known:
                        out.append(dict(self.items[known.pop(0)]))
                    else:
                        out.append({"type": "message", "role": role, "content": p.text})
                else:
                    raise SystemExit(f"a part this driver does not map back: {p!r}")
        return out


async def replay(service, episode, points, writer):
    items = episode["items"]
    system, first = [], 0
    while first < len(items) and (items[first]["type"] == "message" and items[first]["role"] == "system"
                                  or not common.is_sent(items[first])):
        if common.is_sent(items[first]):
            system.append(items[first])
        first += 1
    if len(system) > 1:
        raise SystemExit(f"{episode['id']}: more than one system message")
    agent = LlmAgent(name=AGENT, model=StandIn(), instruction=system[0]["content"] if system else "")
    app = App(name="ctxbench", root_agent=agent,
              events_compaction_config=EventsCompactionConfig(compaction_interval=3, overlap_size=1))
    adk = await service.create_session(app_name="ctxbench", user_id="user", session_id=episode["id"])
    session = Session(items, service, adk, app)
    nxt = first
    for step, (at, _fixed) in enumerate(points):
        await session.add(nxt, at)
        writer.sent(episode["id"], STRATEGY, step, at, [dict(s) for s in system] + session.sent())
        end = common.turn_end(items, at)
        await session.add(at, end)
        nxt = end
    return session.compactions


async def main():
    dataset, sends, _window, out, _ = common.args()
    episodes = common.load_dataset(dataset)
    writer = common.Writer(out)
    service = InMemorySessionService()
    for ep_id, points in common.call_points(sends, STRATEGY).items():
        await replay(service, episodes[ep_id], points, writer)
    writer.close()


if __name__ == "__main__":
    asyncio.run(main())
