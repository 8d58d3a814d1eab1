"""What OpenHands itself sends for an event stream: the expected messages of ctxbench's OpenHands import.

Reads an OpenHands event stream (a JSON array of events as OpenHands serializes them), rebuilds the messages the
CodeAct agent sends for its last call the way OpenHands does (`ConversationMemory.process_events`, the agent's
history filter, `Message` serialized as for a model without vision or prompt caching), and converts them for a
model without native function calling with OpenHands' own
`openhands.llm.fn_call_converter.convert_fncall_messages_to_non_fncall_messages`. Writes:

- OUT_EXPECTED: {"openhands_ai": version, "tools": [...], "native": [...], "text": [...]}, the messages of both
  modes (the tools are the system event's, sent as API tools in native mode only);
- OUT_TEXT_TRACE: one eval-output JSONL record holding the same events, whose recorded `llm_config` names a model
  without native function calling (`native_tool_calling: false`), so that an importer renders it as text;
- OUT_PROMPTS: the converter's own texts (system-prompt suffix, the in-context example's parts per tool, its
  suffix) and OpenHands' function-calling model patterns, which ctxbench ships to render text-based runs.

Run by scripts/make_openhands_fixture.sh, which installs `openhands-ai` in a venv outside the repository.
Usage: python make_openhands_fixture.py EVENTS.json OUT_EXPECTED.json OUT_TEXT_TRACE.jsonl OUT_PROMPTS.json
"""

import json
import os
import sys
from importlib.metadata import version

from openhands.agenthub.codeact_agent import codeact_agent
from openhands.core.config.agent_config import AgentConfig
from openhands.events.action import MessageAction
from openhands.events.action.agent import ChangeAgentStateAction
from openhands.events.action.empty import NullAction
from openhands.events.observation.agent import AgentStateChangedObservation
from openhands.events.observation.empty import NullObservation
from openhands.events.serialization.event import event_from_dict
from openhands.llm import fn_call_converter
from openhands.llm.fn_call_converter import (
    convert_fncall_messages_to_non_fncall_messages,
)
from openhands.llm import model_features
from openhands.memory.conversation_memory import ConversationMemory
from openhands.utils.prompt import PromptManager

# The model a text-based run would name: not in OpenHands' function-calling patterns.
TEXT_MODEL = 'openrouter/meta-llama/llama-3.3-70b-instruct'


def converter_texts() -> dict:
    """The converter's texts: the in-context example is its head, each tool's parts, and its tail."""
    finish = fn_call_converter.TOOL_EXAMPLES['finish']['example']
    only_finish = fn_call_converter.get_example_for_tools(
        [{'type': 'function', 'function': {'name': fn_call_converter.FINISH_TOOL_NAME}}]
    )
    head, tail = only_finish.split(finish)
    return {
        'openhands_ai': version('openhands-ai'),
        'system_prompt_suffix_template': fn_call_converter.SYSTEM_PROMPT_SUFFIX_TEMPLATE,
        'tool_names': {
            'execute_bash': fn_call_converter.EXECUTE_BASH_TOOL_NAME,
            'str_replace_editor': fn_call_converter.STR_REPLACE_EDITOR_TOOL_NAME,
            'browser': fn_call_converter.BROWSER_TOOL_NAME,
            'finish': fn_call_converter.FINISH_TOOL_NAME,
            'edit_file': fn_call_converter.LLM_BASED_EDIT_TOOL_NAME,
        },
        'tool_examples': fn_call_converter.TOOL_EXAMPLES,
        'example_head': head,
        'example_tail': tail,
        'example_suffix': fn_call_converter.IN_CONTEXT_LEARNING_EXAMPLE_SUFFIX,
        'function_calling_patterns': model_features.FUNCTION_CALLING_PATTERNS,
    }


def main(events_path: str, out_expected: str, out_trace: str, out_prompts: str) -> None:
    with open(events_path, encoding='utf-8') as f:
        raw = json.load(f)
    # The agent's history leaves these out (openhands/controller/state/state_tracker.py).
    skipped = (
        NullAction,
        NullObservation,
        ChangeAgentStateAction,
        AgentStateChangedObservation,
    )
    events = [e for e in map(event_from_dict, raw) if not isinstance(e, skipped)]
    initial = next(
        e for e in events if isinstance(e, MessageAction) and e.source == 'user'
    )
    prompt_dir = os.path.join(os.path.dirname(codeact_agent.__file__), 'prompts')
    memory = ConversationMemory(AgentConfig(), PromptManager(prompt_dir=prompt_dir))
    messages = memory.process_events(
        condensed_history=events,
        initial_user_action=initial,
        max_message_chars=None,
        vision_is_active=False,
    )
    # As `LLM.format_messages_for_llm` serializes them for a model without vision or caching.
    native = []
    for m in messages:
        m.cache_enabled = False
        m.vision_enabled = False
        m.function_calling_enabled = False
        native.append(m.model_dump())
    tools = next(e['args']['tools'] for e in raw if e.get('action') == 'system')
    text = convert_fncall_messages_to_non_fncall_messages(
        json.loads(json.dumps(native)), tools, add_in_context_learning_example=True
    )
    with open(out_expected, 'w', encoding='utf-8') as f:
        json.dump(
            {
                'openhands_ai': version('openhands-ai'),
                'events': os.path.basename(events_path),
                'tools': tools,
                'native': native,
                'text': text,
            },
            f,
            indent=1,
            ensure_ascii=False,
        )
        f.write('\n')
    record = {
        'instance_id': 'text-based-' + os.path.splitext(os.path.basename(events_path))[0],
        'instruction': initial.content,
        'metadata': {
            'agent_class': 'CodeActAgent',
            'llm_config': {'model': TEXT_MODEL, 'native_tool_calling': False},
        },
        'history': raw,
        'metrics': None,
    }
    with open(out_trace, 'w', encoding='utf-8') as f:
        f.write(json.dumps(record, ensure_ascii=False) + '\n')
    with open(out_prompts, 'w', encoding='utf-8') as f:
        json.dump(converter_texts(), f, indent=1, ensure_ascii=False)
        f.write('\n')


if __name__ == '__main__':
    if len(sys.argv) != 5:
        sys.exit(__doc__.split('Usage: ')[1])
    main(*sys.argv[1:])
