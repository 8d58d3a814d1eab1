"""Writes Inspect AI logs of a react() agent that compacts its own context, one per compaction strategy.

usage: inspect_compaction.py OUT_DIR

inspect-ai's own `mockllm/model` plays the model (offline, no key): `custom_outputs` runs a build step five
times, each returning a dozen lines, then answers. react() is given a compaction strategy with a small absolute
threshold (700 tokens), so that the agent compacts twice or more in one sample:

- CompactionSummary(threshold=700): the summarization request is answered by the same mock, which recognises
  Inspect's summary prompt and writes an <analysis>/<summary> completion naming the last step done;
- CompactionTrim(threshold=700, preserve=0.5);
- CompactionEdit(threshold=700, keep_tool_uses=1).

Step 3's output holds the fact the answer needs (an undefined `zlib_inflate_init`), so that ctxbench finds a
finding and measures whether each compaction kept it. The mock reads how far it got from the call ids in its
input or the "steps done: N" line of a summary (compaction may have hidden the earlier calls). Its usage is what
gpt-4o would count for the request Inspect built (openai_count.py), as in inspect_task.py.

Writes OUT_DIR/inspect_summary.eval, inspect_trim.eval and inspect_edit.eval.
"""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inspect_task import wire  # noqa: E402
from openai_count import n, prompt_tokens  # noqa: E402

from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.agent import react  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.model._compaction import CompactionEdit, CompactionSummary, CompactionTrim  # noqa: E402
from inspect_ai.scorer import includes  # noqa: E402
from inspect_ai.tool import tool  # noqa: E402
from inspect_ai.util._json import json_schema_dump  # noqa: E402

STEPS = 5
THRESHOLD = 700


@tool
def run():
    async def execute(cmd: str) -> str:
        """Run a shell command and return its output.

        Args:
            cmd: The command line.
        """
        step = cmd.split()[-1]
        lines = [f"{i:03d} {step}: module_{i}.c compiled, 0 warnings" for i in range(12)]
        if step == "step3":
            lines[7] = "007 step3: error: undefined reference to `zlib_inflate_init' in module_7.o"
        return f"$ {cmd}\n" + "\n".join(lines) + "\nexit status 0\n"

    return execute


def steps_done(input) -> int:
    """The last step the agent ran, from the call ids or from a summary."""
    done = 0
    for m in input:
        for c in getattr(m, "tool_calls", None) or []:
            k = re.fullmatch(r"call_(\d+)", c.id or "")
            if k:
                done = max(done, int(k.group(1)))
        k = re.search(r"steps done: (\d+)", m.text or "")
        if k:
            done = max(done, int(k.group(1)))
    return done


def model_fn(input, tools, tool_choice, config):
    last = input[-1]
    n_done = steps_done(input)
    if last.role == "user" and "tasked with summarizing conversations" in last.text:
        text = (f"<analysis>\nThe agent ran the build steps one by one.\n</analysis>\n\n<summary>\n"
                f"1. Primary Request and Intent: find why the build fails.\n"
                f"8. Current Work: running build steps; steps done: {n_done}.\n"
                f"9. Optional Next Step: run step {n_done + 1}.\n</summary>")
        out = ModelOutput.from_content("mockllm/model", text)
        completion = text
    elif n_done < STEPS:
        text = f"Running build step {n_done + 1}."
        args = {"cmd": f"make step{n_done + 1}"}
        out = ModelOutput.for_tool_call("mockllm/model", "run", args, tool_call_id=f"call_{n_done + 1}",
                                        content=text)
        completion = text + json.dumps(args) + "run"
    else:
        args = {"answer": "module_7.o calls zlib_inflate_init: link with -lz"}
        out = ModelOutput.for_tool_call("mockllm/model", "submit", args, tool_call_id="call_submit")
        completion = json.dumps(args) + "submit"
    schemas = [
        {"type": "function", "function": {"name": t.name, "description": t.description,
                                           "parameters": json_schema_dump(t.parameters)}}
        for t in tools
    ]
    prompt = prompt_tokens(wire(input), schemas)
    out.usage = ModelUsage(input_tokens=prompt, output_tokens=n(completion), total_tokens=prompt + n(completion))
    return out


def build_task(strategy):
    return Task(
        dataset=[Sample(id="build", input="The build fails. Run the build steps 1 to 5 and say which library to link.",
                        target="-lz")],
        solver=react(prompt="You are a build engineer.", tools=[run()], compaction=strategy),
        scorer=includes(),
    )


if __name__ == "__main__":
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    model = get_model("mockllm/model", custom_outputs=model_fn)
    for name, strategy in (("summary", CompactionSummary(threshold=THRESHOLD)),
                           ("trim", CompactionTrim(threshold=THRESHOLD, preserve=0.5)),
                           ("edit", CompactionEdit(threshold=THRESHOLD, keep_tool_uses=1))):
        with tempfile.TemporaryDirectory() as tmp:
            logs = eval(build_task(strategy), model=model, log_dir=tmp, log_format="eval", display="none")
            assert logs[0].status == "success", logs[0].error
            (written,) = [f for f in os.listdir(tmp) if f.endswith(".eval")]
            shutil.copy(os.path.join(tmp, written), os.path.join(out_dir, f"inspect_{name}.eval"))
