"""What aider sent at each call of ../shared/traces/aider session0288, rebuilt with aider's own code at the commit
the session ran (Aider-AI/aider e7cdd1d7b, v0.48.2-dev, 2024-08-09 16:16), against the session's `Tokens:` reports.

Until aider read usage from the stream, its `Tokens: N sent, M received` report was its own count, not the
provider's: `Coder.calculate_and_show_tokens_and_cost` falls back to `main_model.token_count` when the streamed
completion has no usage. Received is then cl100k_base of the reply (litellm 1.43's `encode` for a Claude 3 model;
on 41 of the 43 reported aider calls of ../shared/traces: `tests/cli/aider_count.rs`), and sent is
litellm's `token_counter(model, messages)`: for a model that is not OpenAI's, `openai_token_counter` as
gpt-3.5-turbo: cl100k_base, 3 tokens a message + its role + its content, and 3 for the reply.

Everything in a request but the repo map and aider's summaries of older turns is then known: the system prompt
(`EditBlockPrompts` at e7cdd1d7b, examples in the system message and the reminder twice, as `format_messages` does
for claude-3-5-sonnet-20240620), the files in the chat at the commit each call saw (git: aider commits a file after
each edit, and a dirty file before it), and the history (the episode ctxbench imports). The repo map is rebuilt by
`RepoMap.get_repo_map` at e7cdd1d7b over the repository at that commit (its chat files, the message's mentioned
files and identifiers, one RepoMap over the session as aider keeps one). What is left, the record less all that,
is what `done_messages` held (the summaries).

Not run by CI (it needs aider's repository and a venv; docs/trace-fidelity.md has its output). Recipe:
  python3.11 -m venv /tmp/av && /tmp/av/bin/pip install tree-sitter==0.21.3 tree-sitter-languages==1.10.2 \
      grep-ast==0.3.3 networkx==3.2.1 numpy==1.26.4 scipy==1.13.1 diskcache pygments tqdm tiktoken
  git clone https://github.com/Aider-AI/aider /tmp/aider      # or any clone holding e7cdd1d7b..064b0d9
  ctxbench import ../shared/traces/aider/chat-history__session0288__2024-08-09T16-16-42.md -o /tmp/0288.jsonl
  PYTHONHASHSEED=1 /tmp/av/bin/python scripts/aider_reconstruct.py /tmp/aider/.git /tmp/0288.jsonl /tmp/aider-root
(/tmp/aider-root is a scratch folder the repository is written into, commit by commit. aider's map is built
from Python sets, so it moves with PYTHONHASHSEED as aider's own did; docs/trace-fidelity.md gives seeds 0-2.
The platform line of the system prompt is a guess, a few tokens either way.)
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import tiktoken

C1 = tiktoken.get_encoding("cl100k_base")
BASE = "e7cdd1d7b"
BT, SRC = ("```", "```"), ("<source>", "</source>")
BC, CM, MN, AR = "aider/coders/base_coder.py", "aider/commands.py", "aider/main.py", "aider/args.py"
# Recorded `Tokens: N sent` per call point (call point 2 was interrupted with ^C before its report).
RECORDED = {0: 20842, 1: 11077, 3: 14066, 4: 14603, 5: 17577, 6: 17611, 7: 26095}


def git(gitdir, *args):
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], capture_output=True, text=True, check=True).stdout


def n(text):
    return len(C1.encode(text, disallowed_special=()))


def count(messages):
    """litellm 1.43 `token_counter` for a model that is not OpenAI's."""
    return 3 + sum(3 + n(m["role"]) + n(m["content"]) for m in messages)


def load_aider(gitdir, scratch):
    """aider's prompts and RepoMap at BASE, importable without the rest of aider."""
    pkg = Path(scratch) / "_aider" / "aider"
    (pkg / "coders").mkdir(parents=True, exist_ok=True)
    for path in ["aider/repomap.py", "aider/coders/base_prompts.py", "aider/coders/editblock_prompts.py"]:
        (pkg.parent / path).write_text(git(gitdir, "show", f"{BASE}:{path}"))
    for line in git(gitdir, "ls-tree", "-r", "--name-only", BASE, "aider/queries").splitlines():
        (pkg.parent / line).parent.mkdir(parents=True, exist_ok=True)
        (pkg.parent / line).write_text(git(gitdir, "show", f"{BASE}:{line}"))
    (pkg / "__init__.py").write_text("")
    (pkg / "coders" / "__init__.py").write_text("")
    (pkg / "dump.py").write_text("def dump(*a, **k):\n    pass\n")
    (pkg / "utils.py").write_text(
        "class Spinner:\n    def __init__(self, text):\n        pass\n\n    def step(self):\n        pass\n\n"
        "    def end(self):\n        pass\n"
    )
    sys.path.insert(0, str(pkg.parent))
    from aider.coders.editblock_prompts import EditBlockPrompts
    from aider.repomap import RepoMap

    return EditBlockPrompts, RepoMap


def checkout(gitdir, root, commit, overrides):
    """The repository at `commit` (with `overrides`: path -> commit of a file's dirty content) written to `root`;
    the tracked files. Blobs the clone lacks (large media) are written empty: they have no tags."""
    files = []
    for line in git(gitdir, "ls-tree", "-r", commit).splitlines():
        meta, path = line.split("\t", 1)
        files.append((path, meta.split()[2]))
    for path, sha in files:
        src = f"{overrides[path]}:{path}" if path in overrides else sha
        r = subprocess.run(["git", f"--git-dir={gitdir}", "cat-file", "blob", src], capture_output=True)
        data = r.stdout if r.returncode == 0 else b""
        dst = Path(root) / path
        dst.parent.mkdir(parents=True, exist_ok=True)
        if not dst.exists() or dst.read_bytes() != data:
            dst.write_bytes(data)
    return sorted(p for p, _ in files)


def main(gitdir, episode_path, root):
    Prompts, RepoMap = load_aider(gitdir, root + "-aider")
    items = json.loads(open(episode_path).readline())["items"]
    U = lambda i: dict(role="user", content=items[i]["content"])  # noqa: E731
    A = lambda i: dict(role="assistant", content=items[i]["content"])  # noqa: E731
    OK = dict(role="assistant", content="Ok.")
    platform = (
        "- Platform: macOS-14.5-arm64-arm-64bit\n- Shell: SHELL=/bin/zsh\n- Language: en_US\n"
        "- Current date/time: 2024-08-09T16:20:00-0300"
    )
    fmt = lambda s, fence: s.format(fence=fence, lazy_prompt="", platform=platform)  # noqa: E731

    def system(fence):
        s = fmt(Prompts.main_system, fence) + "\n# Example conversations:\n\n"
        for m in Prompts.example_messages:
            s += f"## {m['role'].upper()}: {fmt(m['content'], fence)}\n\n"
        return s.strip() + "\n" + fmt(Prompts.system_reminder, fence)

    # Per call point: fence, the tree, dirty files, the chat files, the user messages in cur_messages.
    calls = {
        0: (SRC, BASE, {CM: "77985f0"}, [BC, CM], [0]),
        1: (SRC, "f9bc52d", {}, [CM], [4]),
        3: (BT, "d0afacd", {BC: "d2bd364"}, [BC], [8, 11]),
        4: (BT, "4a39f7c", {}, [BC], [15]),
        5: (BT, "83b142a", {}, [BC], [19]),
        6: (BT, "210d313", {}, [BC], [23]),
        7: (BT, "ee6641f", {}, [BC, MN, AR], [27]),
    }
    turns = {
        1: [U(0), A(2), U(3), OK],
        3: [U(4), A(6), U(7), OK],
        4: [U(8), U(11), A(13), U(14), OK],
        5: [U(15), A(17), U(18), OK],
        6: [U(19), A(21), U(22), OK],
        7: [U(23), A(25), U(26), OK],
    }

    class Model:
        info = {"max_input_tokens": 200000}

        def token_count(self, text):
            return n(text)

    class IO:
        def tool_error(self, m):
            pass

        def tool_output(self, m=""):
            pass

        def read_text(self, f):
            try:
                return Path(f).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None

    rm = RepoMap(map_tokens=1024, root=root, main_model=Model(), io=IO(), max_context_window=200000)
    print("| call | recorded | known (no history, no map) | repo map | history sent (record less both) |"
          " the transcript's history, unsummarized |")
    print("|---:|---:|---:|---:|---:|---:|")
    shown = []
    for c, (fence, tree, dirty, chat, cur) in calls.items():
        shown += turns.get(c, [])
        tracked = checkout(gitdir, root, tree, dirty)
        files = Prompts.files_content_prefix
        for rel in chat:
            files += "\n" + rel + f"\n{fence[0]}\n" + (Path(root) / rel).read_text() + f"{fence[1]}\n"
        user = [U(i) for i in cur]
        user[-1] = dict(role="user", content=user[-1]["content"] + "\n\n" + fmt(Prompts.system_reminder, fence))
        messages = [
            dict(role="system", content=system(fence)),
            dict(role="user", content=Prompts.repo_content_prefix.format(other="other ")),
            dict(role="assistant", content="Ok, I won't try and edit those files without asking first."),
            dict(role="user", content=files),
            dict(role="assistant", content="Ok, any changes I propose will be to those files."),
        ] + user
        text = "".join(items[i]["content"] + "\n" for i in cur)
        idents = set(re.split(r"\W+", text))
        words = {w.rstrip(",.!;:").strip("\"'`") for w in text.split()}
        addable = [f for f in tracked if f not in chat]
        mentioned = {f for f in addable if f in words}  # Coder.get_file_mentions
        by_name = {}
        for f in addable:
            name = os.path.basename(f)
            if any(ch in name for ch in "/\\._-"):
                by_name.setdefault(name, []).append(f)
        mentioned |= {fs[0] for name, fs in by_name.items() if len(fs) == 1 and name in words}
        for f in tracked:
            base = Path(f).with_suffix("").name.lower()
            if len(base) >= 5 and any(i.lower() == base for i in idents if len(i) >= 5):
                mentioned.add(f)
        abs_all = {os.path.join(root, f) for f in tracked}
        abs_chat = {os.path.join(root, f) for f in chat}
        listing = rm.get_repo_map(abs_chat, abs_all - abs_chat, mentioned, idents) or ""
        known, repo_map = count(messages), n(listing)
        history = sum(3 + n(m["role"]) + n(m["content"]) for m in shown)
        print(f"| {c} | {RECORDED[c]:,} | {known:,} | {repo_map:,} | {RECORDED[c] - known - repo_map:,} |"
              f" {history:,} |")


if __name__ == "__main__":
    main(*sys.argv[1:4])
