"""Writes Inspect AI logs of a small tool-using agent, in both log formats (`.eval` and `.json`).

usage: inspect_task.py OUT_DIR

inspect-ai's own `mockllm/model` plays the model: `custom_outputs` is a function that asks for tool calls and
then answers. Its usage is set to what gpt-4o would count for the request Inspect built (openai_count.py, on the
messages and tools rendered as Inspect's OpenAI provider sends them), instead of mockllm's default estimate, so
that the recorded prompt tokens mean something.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openai_count import n, prompt_tokens  # noqa: E402

from inspect_ai import Task, eval, task  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer import includes  # noqa: E402
from inspect_ai.solver import generate, system_message, use_tools  # noqa: E402
from inspect_ai.tool import tool  # noqa: E402
from inspect_ai.util._json import json_schema_dump  # noqa: E402

FILES = {
    "config.ini": "[server]\nport = 8443\nworkers = 4\n# the cache directory is created at start-up\ncache_dir = /var/cache/app\nlog_level = info\n",
    "build.log": "\n".join(f"[{i:03d}] compiling module_{i}.c ... ok" for i in range(12))
    + "\nerror: undefined reference to `zlib_inflate_init' in module_7.o\nbuild failed with 1 error\n",
}


@tool
def read_file():
    async def execute(path: str) -> str:
        """Read a file of the project.

        Args:
            path: The file's path, relative to the project root.
        """
        return FILES.get(path, f"error: no such file: {path}")

    return execute


@tool
def run():
    async def execute(cmd: str) -> str:
        """Run a shell command and return its output.

        Args:
            cmd: The command line.
        """
        return f"$ {cmd}\n" + "\n".join(f"line {i}: output of {cmd}" for i in range(8)) + "\nexit status 0\n"

    return execute


def wire(messages):
    """The messages as OpenAI's chat API takes them."""
    out = []
    for m in messages:
        d = {"role": m.role, "content": m.text}
        if m.role == "assistant" and m.tool_calls:
            d["content"] = m.text or None
            d["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.function, "arguments": json.dumps(c.arguments)}}
                for c in m.tool_calls
            ]
        if m.role == "tool":
            d["tool_call_id"] = m.tool_call_id
        out.append(d)
    return out


def model_fn(input, tools, tool_choice, config):
    """Reads the task's two files, runs one command, then answers."""
    done = sum(1 for m in input if m.role == "tool")
    task_text = next(m.text for m in input if m.role == "user")
    steps = [
        ("read_file", {"path": "config.ini"}, "Let me look at the configuration first."),
        ("read_file", {"path": "build.log"}, None),
        ("run", {"cmd": "grep -rn zlib_inflate_init src/"}, "The link fails on zlib; checking who calls it."),
    ]
    if "port" in task_text:
        steps = steps[:1]
    if done < len(steps):
        name, args, text = steps[done]
        out = ModelOutput.for_tool_call("mockllm/model", name, args, tool_call_id=f"call_{done + 1}", content=text)
        completion = (text or "") + json.dumps(args) + name
    else:
        answer = "The server listens on port 8443." if "port" in task_text else (
            "The build fails because module_7.o needs zlib_inflate_init: link with -lz. ANSWER: -lz")
        out = ModelOutput.from_content("mockllm/model", answer)
        completion = answer
    schemas = [
        {"type": "function", "function": {"name": t.name, "description": t.description,
                                           "parameters": json_schema_dump(t.parameters)}}
        for t in tools
    ]
    prompt = prompt_tokens(wire(input), schemas)
    out.usage = ModelUsage(input_tokens=prompt, output_tokens=n(completion), total_tokens=prompt + n(completion))
    return out


@task
def fix_build(epochs=2):
    return Task(
        dataset=[
            Sample(id="build", input="The build of our project fails. Find out why and say which library to link.",
                   target="-lz"),
            Sample(id="port", input="Which port does the server listen on? Read config.ini.", target="8443"),
        ],
        solver=[system_message("You are a careful build engineer. Use the tools to inspect the project."),
                use_tools(read_file(), run()), generate()],
        scorer=includes(),
        epochs=epochs,
    )


if __name__ == "__main__":
    out_dir = sys.argv[1]
    # The .eval log with two epochs of each sample, the .json log with one.
    for fmt, epochs in (("eval", 2), ("json", 1)):
        logs = eval(fix_build(epochs), model=get_model("mockllm/model", custom_outputs=model_fn),
                    log_dir=os.path.join(out_dir, fmt), log_format=fmt, display="none")
        assert logs[0].status == "success", logs[0].error
