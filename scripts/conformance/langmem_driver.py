"""LangMem's `SummarizationNode` driven as a LangGraph agent runs it before every model call (langmem 0.0.30,
`langmem/short_term/summarization.py`): the graph's `messages` keep everything, the node is invoked with them and
the graph's `context` (where its `RunningSummary` lives) and what it writes under `summarized_messages` is what
the model is sent; the node's `context` update is merged back into the graph's. Its parameters are the preset's:
`max_tokens` half the run's window, `max_tokens_before_summary` left to default to it, `max_summary_tokens` 256.
Its model is a stand-in chat model that answers every summary request with common.STAND_IN; its
`token_counter` is the one a user passes: ctxbench's accounting over o200k_base (scripts/langchain_messages.py).

LangChain messages from ctxbench items as in langchain_driver.py (one message per item, an observation a human
message); each message's id is its item's index, by which what is sent is read back as the episode's items; the
summary LangMem writes is a system message without one.

usage: langmem_driver.py DATASET SENDS_JSONL WINDOW OUT_JSONL
"""

import os
import sys
import warnings

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import SystemMessage
from langmem.short_term import SummarizationNode

import common  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from langchain_messages import count, to_sent_message  # noqa: E402

STRATEGY = "langmem_summary"

# LangMem warns where it cannot trim what its summarizer is shown; that is the summarizer's input, not what is sent.
warnings.filterwarnings("ignore", category=RuntimeWarning, module="langmem")


def main():
    dataset, sends, window, out, _ = common.args()
    episodes = common.load_dataset(dataset)
    writer = common.Writer(out)
    for ep_id, points in common.call_points(sends, STRATEGY).items():
        items = episodes[ep_id]["items"]
        sent = [(i, it) for i, it in enumerate(items) if common.is_sent(it)]
        history = [to_sent_message(it, str(i)) for i, it in sent]
        node = SummarizationNode(
            model=FakeListChatModel(responses=[common.STAND_IN]),
            max_tokens=window // 2,
            max_summary_tokens=256,
            token_counter=count,
        )
        context = {}
        failed = None
        for step, (at, _fixed) in enumerate(points):
            if failed is not None:
                break
            upto = sum(1 for i, _ in sent if i < at)
            try:
                update = node.invoke({"messages": history[:upto], "context": context})
            except ValueError as e:
                # The node raises: the graph's run ends here.
                failed = f"LangMem raises ValueError: {e}"
                writer.sent(ep_id, STRATEGY, step, at, [], failed=failed)
                continue
            context = update.get("context", context)
            contents = []
            for m in update["summarized_messages"]:
                if m.id is not None:
                    contents.append(dict(items[int(m.id)]))
                elif isinstance(m, SystemMessage):
                    contents.append({"type": "message", "role": "system", "content": m.content})
                else:
                    raise SystemExit(f"{ep_id} step {step}: a message without an id that is no summary: {m!r}")
            writer.sent(ep_id, STRATEGY, step, at, contents)
    writer.close()


if __name__ == "__main__":
    main()
