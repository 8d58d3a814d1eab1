"""LangChain's `trim_messages` driven as an agent's pre-model hook drives it (langchain-core 1.8.1,
`langchain_core/messages/utils.py`): before every model call the whole history is trimmed with
`strategy="last", include_system=True, start_on="human", max_tokens=16000` and the kept messages are sent; the
history itself keeps everything (a pre-model hook's `llm_input_messages`). The token counter is the one a user
passes: ctxbench's accounting over o200k_base (scripts/langchain_messages.py); the budget is the request's, as the
preset states it: 16,000 tokens less what is sent beside the messages (the reply's priming, the tool schemas and
the context an imported trace did not record, `fixed_tokens`), which a pre-model hook leaves room for.

LangChain messages from ctxbench items: one message per item (a tool call is an assistant message with that
call); an observation is a human message, as it is sent with the user role.

usage: langchain_driver.py DATASET SENDS_JSONL WINDOW OUT_JSONL
"""

import os
import sys

from langchain_core.messages import trim_messages

import common  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from langchain_messages import TOKENS_PER_REPLY, count, to_sent_message  # noqa: E402

STRATEGY = "langchain_trim"
MAX_TOKENS = 16_000


def main():
    dataset, sends, _window, out, _ = common.args()
    episodes = common.load_dataset(dataset)
    writer = common.Writer(out)
    for ep_id, points in common.call_points(sends, STRATEGY).items():
        items = episodes[ep_id]["items"]
        sent = [(i, it) for i, it in enumerate(items) if common.is_sent(it)]
        history = [to_sent_message(it, str(i)) for i, it in sent]
        for step, (at, fixed) in enumerate(points):
            upto = sum(1 for i, _ in sent if i < at)
            kept = trim_messages(
                history[:upto],
                max_tokens=MAX_TOKENS - TOKENS_PER_REPLY - fixed,
                token_counter=count,
                strategy="last",
                include_system=True,
                start_on="human",
                allow_partial=False,
            )
            writer.sent(ep_id, STRATEGY, step, at, [dict(items[int(m.id)]) for m in kept])
    writer.close()


if __name__ == "__main__":
    main()
