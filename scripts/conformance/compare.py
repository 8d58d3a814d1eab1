"""Compares what each preset sent (`ctxbench sends`) with what its framework's own code sent (a driver), call point
by call point, and prints a table per preset; exits 1 when a preset is below 100% of its comparable call points
once the departures docs/presets.md lists (with their cause) are set aside.

A call point's request is read as the episode's items: each item of a request is matched to the episode item it
is (kept), to the episode item it stands for (edited: a tool result or call of the same id, another text), or
to none (written: a summary, a marker; compared by role and text, an opaque compaction item by its place only).
Two requests agree when the same items are kept, edited (to the same text) and written, in the same order, and
the same tokens are sent (ctxbench's count over both, the summary text being the same stand-in on both sides).
A call point where the framework raised agrees when the preset failed there too; the call points after it are
not comparable (the framework's sample ended).

usage: compare.py DEPARTURES_MD (LABEL DATASET CTXBENCH_SENDS DRIVER_SENDS)...
"""

import json
import re
import sys

import common

OPAQUE_MARK = "[opaque compaction item]"


def read(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            out[(d["strategy"], d["episode"], d["step"])] = d
    return out


def key(item):
    return json.dumps(item, sort_keys=True)


class Episode:
    def __init__(self, ep):
        self.items = ep["items"]
        self.index = {}
        for i, it in enumerate(self.items):
            self.index.setdefault(key(it), []).append(i)
        self.by_id = {}
        for i, it in enumerate(self.items):
            ident = it.get("id") if it["type"] == "tool_call" else it.get("call_id")
            if ident is not None:
                self.by_id[(it["type"], ident)] = i

    def entries(self, contents):
        """Each sent item as ('kept', i), ('edited', i, text) or ('written', role, text)."""
        out, used = [], set()
        for it in contents:
            found = next((i for i in self.index.get(key(it), []) if i not in used), None)
            if found is not None:
                used.add(found)
                out.append(("kept", found))
                continue
            ident = it.get("id") if it["type"] == "tool_call" else it.get("call_id")
            i = self.by_id.get((it["type"], ident)) if ident is not None else None
            if i is not None and i not in used:
                used.add(i)
                out.append(("edited", i, it.get("content", it.get("arguments"))))
            else:
                text = it.get("content", "")
                opaque = OPAQUE_MARK in text or text == "<opaque compaction item>"
                out.append(("written", common.role_of(it), "<opaque>" if opaque else text))
        return out


def tokens(entries, contents, opaque_tokens):
    n = common.TOKENS_PER_REPLY
    for e, it in zip(entries, contents):
        n += opaque_tokens if e[0] == "written" and e[2] == "<opaque>" else common.count_item(it)
    return n


def departures(path):
    """(preset, window, episode, step) -> cause, from docs/presets.md's departures table."""
    listed = {}
    text = open(path, encoding="utf-8").read()
    section = text.split("## Departures", 1)[1] if "## Departures" in text else ""
    for row in re.findall(r"^\|([^\n]*)\|\s*$", section, re.M):
        cells = [c.strip().strip("`") for c in row.split("|")]
        if len(cells) < 5 or not cells[3].replace(",", "").replace(" ", "").replace("-", "").isdigit():
            continue
        preset, window, episode, steps, cause = cells[:5]
        for part in steps.split(","):
            a, _, b = part.strip().partition("-")
            for s in range(int(a), int(b or a) + 1):
                listed[(preset, window, episode, s)] = cause
    return listed


def compare(episodes, ours, theirs, label, listed):
    rows = {}
    differ = []
    for (strategy, ep_id, step), mine in sorted(ours.items()):
        row = rows.setdefault(strategy, dict(points=0, comparable=0, same=0, listed=0, kept=0, edited=0, dropped=0,
                                             written=0, tokens=0, failed=0, counted=0))
        row["points"] += 1
        other = theirs.get((strategy, ep_id, step))
        if other is None:
            continue
        row["comparable"] += 1
        ep = episodes[ep_id]
        if other["failed"] or mine["failed"]:
            row["failed"] += bool(other["failed"])
            ok = bool(other["failed"]) == bool(mine["failed"])
            for k in ("kept", "edited", "dropped", "written", "tokens"):
                row[k] += ok
        else:
            a = ep.entries(mine["request"]["contents"])
            b = ep.entries(other["request"]["contents"])
            # ctxbench's own count, checked against this script's.
            opaque = next((common.count_item(it) for e, it in zip(a, mine["request"]["contents"])
                           if e[0] == "written" and e[2] == "<opaque>"), 2000)
            counted = common.count_request(mine["request"]["instructions"], mine["request"]["contents"])
            row["counted"] += counted + mine["fixed_tokens"] == mine["tokens"]
            kept = lambda es: [e[1] for e in es if e[0] == "kept"]
            edited = lambda es: [e[1:] for e in es if e[0] == "edited"]
            written = lambda es: [(i, e[1:]) for i, e in enumerate(es) if e[0] == "written"]
            at = mine["item_index"]
            present = lambda es: {e[1] for e in es if e[0] != "written"}
            same = {
                "kept": kept(a) == kept(b),
                "edited": edited(a) == edited(b),
                "dropped": present(a) == present(b),
                "written": written(a) == written(b) and mine["request"]["instructions"] == other["request"]["instructions"],
                "tokens": tokens(a, mine["request"]["contents"], opaque) == tokens(b, other["request"]["contents"], opaque),
            }
            for k, v in same.items():
                row[k] += v
            ok = all(same.values()) and a == b
            if not ok:
                row.setdefault("why", []).append((ep_id, step, at, [k for k, v in same.items() if not v],
                                                  tokens(a, mine["request"]["contents"], opaque),
                                                  tokens(b, other["request"]["contents"], opaque)))
        if ok:
            row["same"] += 1
        elif (strategy, label, ep_id, step) in listed:
            row["listed"] += 1
        else:
            differ.append((strategy, ep_id, step))
    return rows, differ


def main():
    departures_md = sys.argv[1]
    quads = sys.argv[2:]
    datasets = {}
    listed = departures(departures_md)
    failed = False
    print(f"{'preset':<28} {'set':>12} {'points':>6} {'compar.':>7} {'same':>6} {'listed':>6} {'kept':>5} "
          f"{'edited':>6} {'dropped':>7} {'written':>7} {'tokens':>6} {'raised':>6}  agree")
    totals = {}
    for i in range(0, len(quads), 4):
        label, dataset, ours, theirs = quads[i:i + 4]
        if dataset not in datasets:
            datasets[dataset] = {k: Episode(v) for k, v in common.load_dataset(dataset).items()}
        episodes = datasets[dataset]
        rows, differ = compare(episodes, read(ours), read(theirs), label, listed)
        for strategy, r in rows.items():
            share = (r["same"] + r["listed"]) / r["comparable"] if r["comparable"] else 0.0
            print(f"{strategy:<28} {label:>12} {r['points']:>6} {r['comparable']:>7} {r['same']:>6} {r['listed']:>6} "
                  f"{r['kept']:>5} {r['edited']:>6} {r['dropped']:>7} {r['written']:>7} {r['tokens']:>6} "
                  f"{r['failed']:>6}  {100 * r['same'] / max(1, r['comparable']):.1f}%")
            t = totals.setdefault(strategy, [0, 0, 0])
            t[0] += r["comparable"]
            t[1] += r["same"]
            t[2] += r["listed"]
            if r["counted"] + r["failed"] < r["comparable"]:
                print(f"  ctxbench's count differs from this script's at {r['comparable'] - r['counted']} call points")
            for ep_id, step, at, what, ta, tb in r.get("why", [])[:4]:
                print(f"  differs at {ep_id} step {step} (item {at}): {', '.join(what) or 'order'}; tokens {ta} vs {tb}")
            if share < 1.0 or r["comparable"] == 0:
                failed = True
    print()
    for strategy, (comparable, same, listed_n) in totals.items():
        print(f"{strategy}: {same} of {comparable} comparable call points the same "
              f"({100 * same / max(1, comparable):.1f}%), {listed_n} listed departures")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
