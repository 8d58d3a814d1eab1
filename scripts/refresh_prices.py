#!/usr/bin/env python3
"""Writes ctxbench's pinned price table (assets/prices/prices.json) from two public tables, trimmed to what
ctxbench reads, and the matching vectors its tests check the Rust matcher against
(tests/fixtures/prices/genai_matches.json). docs/pricing.md says why both and how they are combined.

- LiteLLM's model_prices_and_context_window_backup.json, read from the `litellm` wheel (not installed): chat
  and responses models with token prices; per million tokens: input, cache read, cache write (5 minutes) and
  1-hour write, output, the tiers above a prompt size, the input limit and the shortest cached prompt.
- pydantic's genai-prices, imported from its installed package: every provider's match rules and models with
  token prices, the price in force at the snapshot's date (12:00 UTC: a price that varies with the time of day
  is its daytime one), its tiers and its context window.

Run by scripts/refresh_prices.sh, which installs both (pinned, or the newest) into ~/.cache/ctxbench.

usage: refresh_prices.py LITELLM_WHEEL OUT_DIR VECTORS_FILE
"""

import datetime
import decimal
import json
import re
import sys
import zipfile
from importlib import metadata

import genai_prices
from genai_prices import types as gt
from genai_prices.data import providers as genai_providers

LITELLM_FILE = "litellm/model_prices_and_context_window_backup.json"
MODES = {"chat", "responses"}
TIER = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost)"
    r"_above_(\d+)k_tokens$"
)
TIER_FIELD = {
    "input_cost_per_token": "input",
    "output_cost_per_token": "output",
    "cache_read_input_token_cost": "cache_read",
    "cache_creation_input_token_cost": "cache_write",
}


def per_million(value):
    """A price per token as a number per million tokens, exact in decimal (5e-06 -> 5)."""
    if value is None:
        return None
    d = decimal.Decimal(str(value)) * 1_000_000
    d = d.normalize()
    return int(d) if d == d.to_integral_value() else float(d)


def plain(value):
    """A genai-prices Decimal as a JSON number."""
    if value is None:
        return None
    d = decimal.Decimal(value).normalize()
    return int(d) if d == d.to_integral_value() else float(d)


def drop_none(d):
    return {k: v for k, v in d.items() if v is not None}


def litellm_table(wheel):
    with zipfile.ZipFile(wheel) as z:
        raw = json.loads(z.read(LITELLM_FILE))
        licence = next(
            z.read(n).decode() for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE")
        )
    version = re.search(r"litellm-([^-]+)-", wheel.split("/")[-1]).group(1)
    models = {}
    for key, v in sorted(raw.items()):
        if key == "sample_spec" or not isinstance(v, dict) or v.get("mode") not in MODES:
            continue
        if v.get("input_cost_per_token") is None or v.get("output_cost_per_token") is None:
            continue
        tiers = {}
        for field, value in v.items():
            m = TIER.match(field)
            if m and value is not None:
                tiers.setdefault(int(m.group(2)) * 1000, {})[TIER_FIELD[m.group(1)]] = per_million(value)
        window = v.get("max_input_tokens") or v.get("max_tokens")
        min_prefix = v.get("prompt_cache_min_tokens")
        models[key] = drop_none(
            {
                "provider": v.get("litellm_provider"),
                "input": per_million(v["input_cost_per_token"]),
                "cache_read": per_million(v.get("cache_read_input_token_cost")),
                "cache_write": per_million(v.get("cache_creation_input_token_cost")),
                "cache_write_1h": per_million(v.get("cache_creation_input_token_cost_above_1hr")),
                "output": per_million(v["output_cost_per_token"]),
                "window": int(window) if window else None,
                "min_cached_prefix": int(min_prefix) if min_prefix else None,
                "tiers": [dict(above=k, **t) for k, t in sorted(tiers.items())] or None,
            }
        )
    prefixes = sorted(
        {k.split("/", 1)[0] for k in models if "/" in k}
        | {m["provider"] for m in models.values() if m.get("provider")}
    )
    return version, licence, {"prefixes": prefixes, "models": models}


def clause(c):
    """A genai-prices match clause as its own data form ({"starts_with": …}, {"or": […]}, …)."""
    if isinstance(c, gt.ClauseOr):
        return {"or": [clause(x) for x in c.or_]}
    if isinstance(c, gt.ClauseAnd):
        return {"and": [clause(x) for x in c.and_]}
    for cls, key in [
        (gt.ClauseStartsWith, "starts_with"),
        (gt.ClauseEndsWith, "ends_with"),
        (gt.ClauseContains, "contains"),
        (gt.ClauseRegex, "regex"),
        (gt.ClauseEquals, "equals"),
    ]:
        if isinstance(c, cls):
            return {key: getattr(c, key)}
    raise SystemExit(f"unknown genai-prices clause {c!r}: teach scripts/refresh_prices.py and src/llm/pricing/genai.rs")


def base_and_tiers(value):
    if isinstance(value, gt.TieredPrices):
        return plain(value.base), [(t.start, plain(t.price)) for t in value.tiers]
    return plain(value), []


def genai_price(model, at):
    p = model.get_prices(at)
    fields = {
        "input": p.input_mtok,
        "cache_read": p.cache_read_mtok,
        "cache_write": p.cache_write_mtok,
        "cache_write_1h": getattr(p, "cache_write_1h_mtok", None),
        "output": p.output_mtok,
    }
    if fields["input"] is None or fields["output"] is None:
        return None
    out, tiers = {}, {}
    for name, value in fields.items():
        base, t = base_and_tiers(value)
        out[name] = base
        for start, price in t:
            tiers.setdefault(start, {})[name] = price
    out = drop_none(out)
    if tiers:
        out["tiers"] = [dict(above=k, **v) for k, v in sorted(tiers.items())]
    return out


def genai_table(at):
    table = []
    for p in genai_providers:
        models = []
        for m in p.models:
            # A model without token prices stays, for the match order: a name it takes has no price.
            price = genai_price(m, at) or {"unpriced": True}
            models.append(drop_none({"id": m.id, "match": clause(m.match), "window": m.context_window, **price}))
        table.append(
            drop_none(
                {
                    "id": p.id,
                    "model_match": clause(p.model_match) if p.model_match else None,
                    "provider_match": clause(p.provider_match) if p.provider_match else None,
                    "fallback": p.fallback_model_providers or None,
                    "models": models,
                }
            )
        )
    return table


def vectors(litellm_models, genai):
    """Model names and what genai-prices itself matches them to (its own find_provider_model, as LiteLLM's
    callers use it: a `provider/` prefix names the provider)."""
    from genai_prices.data_snapshot import get_snapshot

    snapshot = get_snapshot()
    refs = set(litellm_models)
    for p in genai:
        for m in p["models"]:
            refs |= {m["id"], m["id"] + "-20250514", f"{p['id']}/{m['id']}", m["id"].upper()}
    refs |= {
        "claude-opus-4-5-20251101", "claude-3-5-sonnet-20240620", "claude-3-haiku-20240307",
        "openrouter/anthropic/claude-3.5-sonnet", "deepseek/deepseek-chat", "deepseek-reasoner",
        "gpt-4o-2024-08-06", "claude-3-7-sonnet-20250219", "claude-3-5-sonnet-20241022",
        "bedrock/us.anthropic.claude-opus-4-5-20251101-v1:0", "mockllm/model", "qwen2.5-7b-instruct",
        "gpt-5.2-20251211", "",
    }
    out = []
    for ref in sorted(refs):
        try:
            provider, model = snapshot.find_provider_model(ref, None, "litellm", None)
            out.append([ref, provider.id, model.id])
        except LookupError:
            out.append([ref, None, None])
    return out


def main():
    wheel, out_dir, vectors_file = sys.argv[1:4]
    today = datetime.date.today()
    at = datetime.datetime.combine(today, datetime.time(12), tzinfo=datetime.UTC)
    litellm_version, litellm_licence, litellm = litellm_table(wheel)
    genai_version = metadata.version("genai-prices")
    genai_licence = next(
        f.read_text() for f in metadata.files("genai-prices") if f.name == "LICENSE"
    )
    genai = genai_table(at)
    snapshot = {
        "about": "ctxbench's price table: USD per million tokens, trimmed from two public tables by "
        "scripts/refresh_prices.sh (docs/pricing.md). LiteLLM first, genai-prices for the models it lacks.",
        "date": today.isoformat(),
        "sources": [
            {
                "name": "LiteLLM",
                "package": f"litellm {litellm_version} (PyPI)",
                "file": LITELLM_FILE,
                "licence": "MIT (LICENSE-litellm.txt)",
                "home": "https://github.com/BerriAI/litellm",
            },
            {
                "name": "genai-prices",
                "package": f"genai-prices {genai_version} (PyPI)",
                "file": "genai_prices/data.py",
                "licence": "MIT (LICENSE-genai-prices.txt)",
                "home": "https://github.com/pydantic/genai-prices",
            },
        ],
        "litellm": litellm,
        "genai_prices": genai,
    }
    with open(f"{out_dir}/prices.json", "w") as f:
        # One model a line, so that a refresh's diff reads model by model.
        f.write("{\n")
        head = {k: v for k, v in snapshot.items() if k not in ("litellm", "genai_prices")}
        for k, v in head.items():
            f.write(f"  {json.dumps(k)}: {json.dumps(v)},\n")
        f.write('  "litellm": {\n    "prefixes": ' + json.dumps(litellm["prefixes"]) + ',\n    "models": {\n')
        rows = [f"      {json.dumps(k)}: {json.dumps(v)}" for k, v in litellm["models"].items()]
        f.write(",\n".join(rows) + "\n    }\n  },\n")
        f.write('  "genai_prices": [\n')
        blocks = []
        for p in genai:
            models = ",\n".join(f"      {json.dumps(m)}" for m in p["models"])
            rest = {k: v for k, v in p.items() if k != "models"}
            blocks.append("    " + json.dumps(rest)[:-1] + ', "models": [\n' + models + "\n    ]}")
        f.write(",\n".join(blocks) + "\n  ]\n}\n")
    with open(f"{out_dir}/LICENSE-litellm.txt", "w") as f:
        f.write(litellm_licence)
    with open(f"{out_dir}/LICENSE-genai-prices.txt", "w") as f:
        f.write(genai_licence)
    with open(vectors_file, "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(v) for v in vectors(litellm["models"], genai)) + "\n]\n")
    print(
        f"litellm {litellm_version}: {len(litellm['models'])} models; genai-prices {genai_version}: "
        f"{sum(len(p['models']) for p in genai)} models of {len(genai)} providers; as of {today}"
    )


if __name__ == "__main__":
    main()
