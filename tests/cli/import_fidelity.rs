//! Importers, against what the agent itself sent: fixtures cut unchanged from real public traces (aider's own
//! chat history, a real OpenHands session) or written by the agent's own code (OpenHands' converter).

use ctxbench::history::import::import_file;
use ctxbench::history::usage::ProviderUsage;
use ctxbench::history::validate::check_episode;
use ctxbench::{Episode, Item, Role};

use crate::import::{fixture, kinds, one, recorded_calls};

/// The aider fixtures below are cut unchanged from aider's own chat history (`Aider-AI/aider`,
/// `tests/fixtures/chat-history.md` at 5dc9490, Apache-2.0), from sessions that are not under ../shared/traces:
/// `aider_clear.md` is lines 57319–57355, `aider_unexpected_errors.md` 11614–11678,
/// `aider_interrupted_in_fence.md` 4674–4885, `aider_run_instructions.md` 98871–99011.
fn aider(name: &str) -> Vec<Episode> {
    let eps = import_file(&fixture(name), Some("aider")).unwrap_or_else(|e| panic!("{name}: {e}"));
    for ep in &eps {
        assert_eq!(check_episode(ep), vec![], "{name}");
    }
    eps
}

/// `/clear` empties aider's chat history: the prompt after it is sent alone (the provider counts the same 638
/// tokens as for the first prompt), so each context is an episode of its own.
#[test]
fn aider_clear_starts_a_new_context() {
    let eps = aider("aider_clear.md");
    assert_eq!(eps.len(), 2);
    assert!(eps[0].id.ends_with("#context1") && eps[1].id.ends_with("#context2"));
    assert_eq!(recorded_calls(&eps[0]), [638, 672, 710]);
    assert_eq!(recorded_calls(&eps[1]), [638]);
    assert_eq!(kinds(&eps[1]), ["user", "assistant_text"]);
    assert_eq!(eps[1].meta["started_by"], "/clear");
    assert_eq!(eps[0].call_points().len(), 3);
}

/// A reply interrupted with ^C inside an open code fence (`^C again to exit` is written before it) ends at the
/// next user line; it is a call without a `Tokens:` report, its partial text kept as aider keeps it. aider's
/// note of the commit holds the commit's whole message.
#[test]
fn aider_interrupted_reply_ends_at_the_next_prompt() {
    let eps = aider("aider_interrupted_in_fence.md");
    let ep = &eps[0];
    assert_eq!(
        kinds(ep),
        [
            "user",
            "assistant_text",
            "user",
            "assistant_text",
            "user",
            "assistant_text"
        ],
        "{:?}",
        ep.items
    );
    assert!(ep.items[3]
        .text()
        .ends_with("import os\nimport platform\nimport re\n^C KeyboardInterrupt"));
    assert!(ep.items[4].text().starts_with("if we can get a language"));
    let usage = ProviderUsage::of(ep).unwrap();
    assert_eq!(recorded_calls(ep), [13_554, 16_080]);
    assert_eq!(ep.call_points().len(), 3);
    assert_eq!(usage.unrecorded.len(), 1);
    assert_eq!(usage.unrecorded[0].call_point, 1);
    assert!(usage.unrecorded[0].why.contains("interrupted"));
}

/// A request that failed (`Unexpected error`) is a failed call, named, with no call point; its traceback never
/// reached the model.
#[test]
fn aider_failed_calls_are_named_not_replayed() {
    let eps = aider("aider_unexpected_errors.md");
    let ep = &eps[0];
    assert_eq!(kinds(ep), ["user", "assistant_text"], "{:?}", ep.items);
    let usage = ProviderUsage::of(ep).unwrap();
    assert_eq!(usage.failed.len(), 5);
    assert!(usage.failed[0].starts_with("Unexpected error: litellm.APIConnectionError"));
    assert_eq!(recorded_calls(ep), [1_497]);
}

/// `/run` output runs, blank lines and `####` inside it included, to its last line; aider sends it in its own
/// words after the user's instructions, and its line-by-line copy only once.
#[test]
fn aider_run_output_is_sent_in_aiders_words() {
    let eps = aider("aider_run_instructions.md");
    let ep = &eps[0];
    assert_eq!(
        kinds(ep),
        ["tool_result", "assistant_text"],
        "{:?}",
        ep.items
    );
    let sent = ep.items[0].text();
    assert!(sent.starts_with(
        "notice it got the filename wrong\n\nI ran this command:\n\n ./testsr.py tmp.one.md\n\nAnd got this output:\n\n[\n    {\n        \"header\": \"#### use indent=4"
    ));
    assert!(sent.ends_with("    }\n]\n\n"), "{sent:?}");
    assert_eq!(sent.matches("\"blocks\"").count(), 1);
    assert_eq!(recorded_calls(ep), [9_400]);
    assert!(ProviderUsage::of(ep).unwrap().approximate);
}

/// tau-bench's tool-calling agent sends its domain's tools with every call; the result does not record them, so
/// the shipped schemas (each tool's `get_info()` at sierra-research/tau-bench 7362a17) are added by domain.
#[test]
fn tau_bench_gets_its_domains_tools() {
    let ep = one("tau_bench.json", Some("tau-bench"));
    let names: Vec<&str> = ep
        .tools
        .iter()
        .filter_map(|t| t.pointer("/function/name").and_then(|n| n.as_str()))
        .collect();
    assert_eq!(names.len(), 14, "{names:?}");
    assert!(names.contains(&"cancel_reservation") && names.contains(&"search_onestop_flight"));
    assert_eq!(
        ep.meta["tools_from"],
        "sierra-research/tau-bench@7362a17 (airline ALL_TOOLS)"
    );
    // The descriptions are those of that commit (", including their reservations" came later).
    let user = ep
        .tools
        .iter()
        .find(|t| t.pointer("/function/name").and_then(|n| n.as_str()) == Some("get_user_details"))
        .unwrap();
    assert_eq!(
        user["function"]["description"],
        "Get the details of an user."
    );
}

/// An episode's items as the chat messages they are sent as: (role, text, the names of the calls it makes).
fn as_messages(ep: &Episode) -> Vec<(String, String, Vec<String>)> {
    let mut out: Vec<(String, String, Vec<String>)> = Vec::new();
    for item in &ep.items {
        match item {
            Item::Message { role, content } => {
                out.push((role.as_str().to_owned(), content.to_string(), Vec::new()));
            }
            Item::ToolCall { name, .. } => match out.last_mut() {
                Some(last) if last.0 == "assistant" => last.2.push(name.to_string()),
                _ => out.push(("assistant".into(), String::new(), vec![name.to_string()])),
            },
            Item::ToolResult { content, .. } => {
                out.push(("tool".into(), content.to_string(), Vec::new()))
            }
            Item::Observation { content, .. } => {
                out.push(("user".into(), content.to_string(), Vec::new()))
            }
            Item::Reasoning { .. } | Item::Unrecorded { .. } => {}
        }
    }
    out
}

/// The same messages as OpenHands itself built them (tests/fixtures/import/openhands_session_expected.json,
/// written by scripts/make_openhands_fixture.sh with openhands-ai's `ConversationMemory` and
/// `fn_call_converter`), but the last: the finish, which no later request holds.
fn expected_openhands(mode: &str) -> Vec<(String, String, Vec<String>)> {
    let text = std::fs::read_to_string(fixture("openhands_session_expected.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut out: Vec<(String, String, Vec<String>)> = v[mode]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let calls = m["tool_calls"]
                .as_array()
                .map(|c| {
                    c.iter()
                        .map(|c| c["function"]["name"].as_str().unwrap().to_owned())
                        .collect()
                })
                .unwrap_or_default();
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
                calls,
            )
        })
        .collect();
    out.pop();
    out
}

/// OpenHands' CodeAct messages for a real session (All-Hands-AI/OpenHands, a file-store session committed at
/// 429def0 on refs/pull/9633/head, events unchanged in tests/fixtures/import/openhands_session.json): the
/// workspace recall as `<RUNTIME_INFORMATION>` two newlines after the task, the IPython output, the model's own
/// text and calls, exactly as OpenHands sends them with native function calling.
#[test]
fn openhands_messages_are_those_openhands_sends() {
    let ep = one("openhands_session.json", Some("openhands"));
    let mut got = as_messages(&ep);
    got.pop();
    assert_eq!(got, expected_openhands("native"));
    assert_eq!(ep.tools.len(), 9, "the system event's tools");
    // Anthropic's prompt through litellm: cache writes are not in `prompt_tokens`.
    assert_eq!(recorded_calls(&ep), [6_557, 6_769, 6_978]);
}

/// A model without native function calling (the record's `llm_config`: `native_tool_calling` false): the text
/// conversation OpenHands' own converter writes from the same events, and no API tools.
#[test]
fn openhands_text_based_function_calling_is_what_its_converter_writes() {
    let eps = import_file(&fixture("openhands_text_fncall.jsonl"), Some("openhands")).unwrap();
    let ep = &eps[0];
    assert_eq!(check_episode(ep), vec![]);
    let mut got = as_messages(ep);
    got.pop();
    let want = expected_openhands("text");
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
    assert!(ep.tools.is_empty());
    assert_eq!(ep.call_points().len(), 3);
    assert_eq!(
        ep.meta["function_calling"],
        "text (OpenHands fn_call_converter)"
    );
}

/// An interrupted reply is kept as aider v0.48.2-dev kept it in `cur_messages`, and so sent with the next
/// prompt: its partial text and `\n^C KeyboardInterrupt` (`send_message` in aider/coders/base_coder.py at
/// 9cf672b4, the commit session0343 ran: its first commit, 423b6e1, is that commit's child). The interrupted
/// reply's complete SEARCH/REPLACE block was not applied (aider returns before `apply_updates`), so it is no
/// edit; the next prompt follows it.
#[test]
fn aider_keeps_an_interrupted_reply_as_aider_did() {
    let Some(traces) = crate::traces::imported() else {
        return;
    };
    let ep = traces
        .iter()
        .flat_map(|(_, e)| e)
        .find(|e| e.id == "chat-history__session0343__2024-08-09T19-32-47.md")
        .expect("session0343 among the shared traces");
    let usage = ProviderUsage::of(ep).unwrap();
    assert_eq!(usage.unrecorded.len(), 1);
    assert_eq!(usage.unrecorded[0].call_point, 3);
    let replies = ep.assistant_messages();
    let interrupted = replies[3];
    assert!(
        interrupted.starts_with("Certainly! I'll modify the `init_before_message` method")
            && interrupted.ends_with("in the `try\n^C KeyboardInterrupt"),
        "{interrupted}"
    );
    let at = ep
        .items
        .iter()
        .position(|i| matches!(i, Item::Message { content, .. } if &content[..] == interrupted))
        .unwrap();
    let next = ep.items[at + 1..]
        .iter()
        .find_map(|i| match i {
            Item::Message {
                role: Role::User,
                content,
                ..
            } => Some(&content[..]),
            _ => None,
        })
        .unwrap();
    assert!(
        next.starts_with("no, in cmd_diff catch `ValueError`"),
        "{next}"
    );
    // Edits start from call 4 on only where aider applied them: none at call point 4 (after the ^C).
    assert!(
        usage.context_edits.iter().all(|e| e.call_point != 4),
        "{:?}",
        usage.context_edits
    );
}
