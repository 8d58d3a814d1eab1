"""tau-bench's tool schemas, as its agents send them: each tool class's `get_info()`, in `ALL_TOOLS` order.

tau-bench's trajectories do not record the tools; `tau_bench/envs/base.py` builds `tools_info` from the domain's
`ALL_TOOLS` and `tau_bench/agents/tool_calling_agent.py` sends it as `tools=` on every call. This loads only the
tool modules (`tau_bench/envs/tool.py` and `tau_bench/envs/<domain>/tools/*.py`, which need nothing outside the
standard library) from a checkout of sierra-research/tau-bench, and writes one JSON file per domain with the
commit it was read at.

Usage: python3 make_tau_bench_tools.py TAU_BENCH_CHECKOUT COMMIT OUT_DIR
(the historical trajectories were written at commit 7362a1708d720a4d697d042f21fd8637ea144c3b)
"""

import importlib.util
import json
import os
import sys
import types


def stub_package(name: str, path: str) -> None:
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module


def load(name: str, path: str, package_dir: str | None = None) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        name,
        path,
        submodule_search_locations=[package_dir] if package_dir else None,
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(checkout: str, commit: str, out_dir: str) -> None:
    root = os.path.join(checkout, 'tau_bench')
    envs = os.path.join(root, 'envs')
    # The packages' own __init__ files import the environments (and litellm): only the tools are loaded.
    stub_package('tau_bench', root)
    stub_package('tau_bench.envs', envs)
    load('tau_bench.envs.tool', os.path.join(envs, 'tool.py'))
    os.makedirs(out_dir, exist_ok=True)
    for domain in ('airline', 'retail'):
        stub_package(f'tau_bench.envs.{domain}', os.path.join(envs, domain))
        tools_dir = os.path.join(envs, domain, 'tools')
        tools = load(
            f'tau_bench.envs.{domain}.tools',
            os.path.join(tools_dir, '__init__.py'),
            tools_dir,
        )
        out = {
            'source': 'sierra-research/tau-bench',
            'commit': commit,
            'path': f'tau_bench/envs/{domain}/tools (ALL_TOOLS, get_info())',
            'license': 'MIT',
            'domain': domain,
            'tools': [tool.get_info() for tool in tools.ALL_TOOLS],
        }
        path = os.path.join(out_dir, f'{domain}_tools.json')
        with open(path, 'w', encoding='utf-8') as f:
            json.dump(out, f, indent=1, ensure_ascii=False)
            f.write('\n')
        print(f'{path}: {len(out["tools"])} tools')


if __name__ == '__main__':
    if len(sys.argv) != 4:
        sys.exit(__doc__.split('Usage: ')[1])
    main(*sys.argv[1:])
