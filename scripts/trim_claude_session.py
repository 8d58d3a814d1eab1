"""Trims a Claude Code session JSONL to a small test fixture, keeping what ctxbench's importer reads.

usage: trim_claude_session.py SESSION.jsonl OUT.jsonl

Made for tests/fixtures/compacted/claude_code_2.1.39_auto_compact.jsonl, from the public session
258c7280-ae70-4798-800f-63464d01a85d.jsonl of marot/spotter (MIT, "Copyright (c) 2026 marot"),
test/fixtures/transcripts/, commit 0c7102a37a16a869d8e069b168cb3ab0d7441c12: written by Claude Code 2.1.39 (its
author's redaction: home paths, e-mails, thinking signatures), 2,759,678 bytes, one auto-compact at 167,094
tokens. Every record is kept, in order, with its uuid, parentUuid, type and subtype, so that the parent chain
(through progress and system records, over the compact_boundary by logicalParentUuid) is the session's own.
What goes:

- fields the importer never reads (toolUseResult: the UI's copy of a result; cwd, gitBranch, slug, sessionId,
  userType, version, timestamp, requestId, permissionMode, todos, thinkingMetadata, ...);
- the payload of progress records (only data.type stays) and of file-history snapshots (emptied);
- a progress record whose parent is a progress record: its children take its parent (so that a run of them
  between two messages is its first one);
- isSidechain when false (the importer reads only true);
- a usage's breakdowns (only input_tokens, cache_creation_input_tokens, cache_read_input_tokens and
  output_tokens stay, what the importer reads);
- the length of ids: each uuid (uuid, parentUuid, logicalParentUuid, a snapshot's messageId) becomes "u" and the
  record's line number where the uuid is defined (the same id everywhere it occurs);
- the middle of long texts: a tool result's text, a tool call's string arguments, an assistant's text or
  thinking, a user message over LIMIT characters keeps its first HEAD and last TAIL characters around a marker
  "[... N characters trimmed ...]". The compaction summary (isCompactSummary) is kept whole.

The usage each assistant record holds is left as recorded: the replay of the trimmed session sends fewer tokens
than the record says, and `ctxbench usage` shows the gap.
"""
import json
import sys

LIMIT, HEAD, TAIL = 300, 200, 60
KEEP = {"type", "subtype", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "message", "isCompactSummary",
        "compactMetadata", "isMeta", "content", "data", "snapshot", "messageId", "leafUuid", "summary", "operation"}
USAGE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
IDS = ("uuid", "parentUuid", "logicalParentUuid", "messageId", "leafUuid")


def cut(s):
    if not isinstance(s, str) or len(s) <= LIMIT:
        return s
    return f"{s[:HEAD]}\n[... {len(s) - HEAD - TAIL} characters trimmed ...]\n{s[-TAIL:]}"


def trim_value(v):
    if isinstance(v, str):
        return cut(v)
    if isinstance(v, list):
        return [trim_value(x) for x in v]
    if isinstance(v, dict):
        return {k: trim_value(x) for k, x in v.items()}
    return v


def trim_block(b):
    if not isinstance(b, dict):
        return b
    b = dict(b)
    for k in ("text", "thinking"):
        if k in b:
            b[k] = cut(b[k])
    if b.get("type") == "tool_use":
        b["input"] = trim_value(b.get("input"))
    if b.get("type") == "tool_result":
        c = b.get("content")
        b["content"] = cut(c) if isinstance(c, str) else [trim_block(x) for x in c or []]
    return b


def trim(e):
    out = {k: v for k, v in e.items() if k in KEEP and not (k == "isSidechain" and v is False)}
    if e.get("type") == "progress":
        out["data"] = {"type": (e.get("data") or {}).get("type")}
    if e.get("type") == "file-history-snapshot":
        out["snapshot"] = {"messageId": e.get("messageId"), "trackedFileBackups": {}}
    m = out.get("message")
    if isinstance(m, dict) and not e.get("isCompactSummary"):
        m = {k: v for k, v in m.items() if k in ("id", "role", "model", "content", "usage")}
        if isinstance(m.get("usage"), dict):
            m["usage"] = {k: v for k, v in m["usage"].items() if k in USAGE}
        c = m.get("content")
        m["content"] = cut(c) if isinstance(c, str) else [trim_block(b) for b in c or []]
        out["message"] = m
    if "content" in out and e.get("type") == "system":
        out["content"] = cut(out["content"])
    return out


def short_ids(records):
    """Each uuid becomes "u" and the line number of the record that defines it."""
    short = {e["uuid"]: f"u{k}" for k, e in enumerate(records) if isinstance(e.get("uuid"), str)}
    for e in records:
        for k in IDS:
            if isinstance(e.get(k), str):
                e[k] = short.get(e[k], e[k])
        if isinstance(e.get("snapshot"), dict) and isinstance(e["snapshot"].get("messageId"), str):
            e["snapshot"]["messageId"] = short.get(e["snapshot"]["messageId"], e["snapshot"]["messageId"])
    return records


def first_progress_only(records):
    """Drops each progress record whose parent is a progress record, its children re-parented to that parent."""
    by_uuid = {e["uuid"]: e for e in records if isinstance(e.get("uuid"), str)}

    def kept_parent(uuid):
        while uuid in by_uuid and by_uuid[uuid]["type"] == "progress":
            parent = by_uuid[uuid].get("parentUuid")
            if parent not in by_uuid or by_uuid[parent]["type"] != "progress":
                return uuid
            uuid = parent
        return uuid

    out = []
    for e in records:
        if e["type"] == "progress" and e.get("parentUuid") in by_uuid and by_uuid[e["parentUuid"]]["type"] == "progress":
            continue
        for k in ("parentUuid", "logicalParentUuid"):
            if isinstance(e.get(k), str):
                e[k] = kept_parent(e[k])
        out.append(e)
    return out


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        records = [trim(json.loads(line)) for line in f if line.strip()]
    with open(sys.argv[2], "w") as o:
        for e in short_ids(first_progress_only(records)):
            o.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")
