//! Episodes from recorded model calls, for the formats that record each call's whole input (OpenTelemetry
//! GenAI spans, OpenInference spans): the conversation is the calls' inputs and outputs laid end to end.
//!
//! Each call's input should continue the conversation so far (the previous call's input, its output, then
//! the tool results and messages added since): the new messages are appended, then the call's output, so that
//! every call is one assistant turn and call points equal recorded calls. A call whose input does not continue
//! the conversation (the agent rewrote its own history, or another conversation shares the trace) starts a
//! new episode of the same group (`KEY.2`, …), said in its `meta.split_from`.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::{episode, Conversation};
use crate::history::usage::{CallUsage, ProviderUsage};
use crate::history::{Episode, Role, SentBack};

/// A tool call in a recorded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// Its id, when recorded.
    pub id: Option<String>,
    /// The function's name.
    pub name: String,
    /// Its arguments as JSON text.
    pub arguments: String,
}

/// One recorded chat message, whatever the convention that wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Msg {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// Its text (parts joined by newlines).
    pub text: String,
    /// An assistant message's tool calls.
    pub calls: Vec<ToolCall>,
    /// A tool message's call id.
    pub call_id: Option<String>,
    /// A tool message's tool name, when recorded.
    pub name: Option<String>,
    /// An assistant message's recorded reasoning (output only: not sent back).
    pub reasoning: String,
}

impl Msg {
    /// Whether `self` and `other` are the same message, as two records of one conversation show it: the same
    /// role, and the same tool-call ids (an assistant message with calls; one convention drops its text),
    /// call id (a tool message) or text.
    #[must_use]
    pub fn same(&self, other: &Msg) -> bool {
        if self.role != other.role {
            return false;
        }
        if !self.calls.is_empty() || !other.calls.is_empty() {
            let key = |m: &Msg| -> Vec<String> {
                m.calls
                    .iter()
                    .map(|c| {
                        c.id.clone()
                            .unwrap_or_else(|| format!("{}{}", c.name, c.arguments))
                    })
                    .collect()
            };
            return key(self) == key(other);
        }
        if let (Some(a), Some(b)) = (&self.call_id, &other.call_id) {
            return a == b;
        }
        self.text.trim() == other.text.trim()
    }
}

/// One recorded model call.
#[derive(Debug, Clone, Default)]
pub struct Call {
    /// The messages it was sent.
    pub input: Vec<Msg>,
    /// What it answered (the first choice).
    pub output: Option<Msg>,
    /// The provider's count, when recorded.
    pub usage: Option<CallUsage>,
    /// The tool definitions it was sent, when recorded.
    pub tools: Vec<Value>,
    /// The model, when recorded.
    pub model: Option<String>,
}

/// A tool run recorded apart from the chat calls (an `execute_tool` span): its result fills in a call the
/// chat calls show unanswered.
#[derive(Debug, Clone)]
pub struct ToolRun {
    /// The call it answers.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// What it returned.
    pub result: String,
}

/// How a group of calls becomes episodes.
pub struct Group<'a> {
    /// The file named in episode ids and errors.
    pub origin: &'a Path,
    /// The format (`meta.format`, `source`).
    pub format: &'static str,
    /// The group's key (a conversation or session id, or a trace id), in episode ids.
    pub key: String,
    /// Where in the trace the usage comes from, for `meta.usage.source`.
    pub usage_source: &'static str,
}

/// Calls and tool runs gathered by group (conversation, session or trace), in the order groups first appear.
#[derive(Debug, Default)]
pub struct Groups {
    groups: Vec<(String, super::otlp::At, Vec<Call>, Vec<ToolRun>)>,
}

impl Groups {
    /// The calls and tool runs of the group `key`, first seen at `at`.
    pub fn of(&mut self, key: String, at: super::otlp::At) -> (&mut Vec<Call>, &mut Vec<ToolRun>) {
        let i = match self.groups.iter().position(|g| g.0 == key) {
            Some(i) => i,
            None => {
                self.groups.push((key, at, Vec::new(), Vec::new()));
                self.groups.len() - 1
            }
        };
        let (_, _, calls, runs) = &mut self.groups[i];
        (calls, runs)
    }

    /// The episodes of every group that has calls, each named after the file where it was first seen.
    #[must_use]
    pub fn episodes(
        self,
        export: &super::otlp::Export,
        format: &'static str,
        usage_source: &'static str,
    ) -> Vec<Episode> {
        let mut out = Vec::new();
        for (key, at, calls, runs) in self.groups {
            if calls.is_empty() {
                continue;
            }
            let group = Group {
                origin: export.file(at),
                format,
                key,
                usage_source,
            };
            out.extend(episodes(&group, calls, &runs));
        }
        out
    }
}

/// The episodes of one group's calls, in call order, with the tool runs recorded beside them.
#[must_use]
pub fn episodes(group: &Group<'_>, calls: Vec<Call>, runs: &[ToolRun]) -> Vec<Episode> {
    let mut segments: Vec<Vec<Call>> = Vec::new();
    let mut transcript: Vec<Msg> = Vec::new();
    let failed = calls.iter().filter(|c| c.output.is_none()).count();
    for call in calls.into_iter().filter(|c| c.output.is_some()) {
        let continues = call.input.len() >= transcript.len()
            && transcript.iter().zip(&call.input).all(|(a, b)| a.same(b));
        if !continues || segments.is_empty() {
            segments.push(Vec::new());
            transcript.clear();
        }
        transcript.extend(call.input[transcript.len()..].iter().cloned());
        transcript.extend(call.output.clone());
        segments.last_mut().expect("pushed above").push(call);
    }
    let count = segments.len();
    segments
        .into_iter()
        .enumerate()
        .map(|(n, calls)| {
            let key = if n == 0 {
                group.key.clone()
            } else {
                format!("{}.{}", group.key, n + 1)
            };
            let mut ep = segment(group, &key, &calls, runs);
            if n > 0 {
                ep.meta
                    .insert("split_from".into(), Value::String(group.key.clone()));
            }
            if count > 1 {
                ep.meta.insert("segments".into(), Value::from(count));
            }
            if failed > 0 && n == 0 {
                ep.meta
                    .insert("calls_without_output".into(), Value::from(failed));
            }
            ep
        })
        .collect()
}

/// The conversation of calls that each continue the one before: the first input, each call's new messages
/// and its output, with the text an assistant message has in one record and lacks in another.
fn transcript(calls: &[Call]) -> Vec<Msg> {
    let mut out: Vec<Msg> = Vec::new();
    for call in calls {
        for (i, m) in call.input.iter().enumerate() {
            match out.get_mut(i) {
                Some(known) if known.text.trim().is_empty() => known.text.clone_from(&m.text),
                Some(_) => {}
                None => out.push(m.clone()),
            }
        }
        out.extend(call.output.clone());
    }
    out
}

/// Places each tool run whose call the conversation shows unanswered after that call's turn.
fn add_runs(messages: &mut Vec<Msg>, runs: &[ToolRun]) {
    let answered: HashSet<String> = messages.iter().filter_map(|m| m.call_id.clone()).collect();
    for run in runs.iter().filter(|r| !answered.contains(&r.call_id)) {
        let Some(at) = messages.iter().position(|m| {
            m.calls
                .iter()
                .any(|c| c.id.as_deref() == Some(run.call_id.as_str()))
        }) else {
            continue;
        };
        let end = messages[at + 1..]
            .iter()
            .position(|m| m.role != "tool")
            .map_or(messages.len(), |n| at + 1 + n);
        messages.insert(
            end,
            Msg {
                role: "tool".into(),
                text: run.result.clone(),
                call_id: Some(run.call_id.clone()),
                name: Some(run.name.clone()),
                ..Msg::default()
            },
        );
    }
}

fn segment(group: &Group<'_>, key: &str, calls: &[Call], runs: &[ToolRun]) -> Episode {
    let mut messages = transcript(calls);
    add_runs(&mut messages, runs);
    let mut ep = episode(
        group.origin,
        Some(key.to_owned()),
        group.format,
        items(&messages),
    );
    // Every model call is recorded: none came after the last one.
    ep.stopped = true;
    ep.tools = calls
        .iter()
        .rev()
        .find(|c| !c.tools.is_empty())
        .map(|c| c.tools.clone())
        .unwrap_or_default();
    // Every call is one call point: the model each names.
    let models: Vec<Option<String>> = calls.iter().map(|c| c.model.clone()).collect();
    ep.set_models(None, &models);
    ep.meta
        .insert("conversation".into(), Value::String(group.key.clone()));
    let usage: Option<Vec<CallUsage>> = calls.iter().map(|c| c.usage).collect();
    match usage {
        Some(u) => ProviderUsage::from_calls(group.usage_source, u).store(&mut ep),
        None => ProviderUsage {
            source: group.usage_source.to_owned(),
            api_calls: Some(calls.len() as u64),
            ..ProviderUsage::default()
        }
        .store(&mut ep),
    }
    ep
}

/// The items of a conversation: system and user messages, an assistant's reasoning (not sent back), text
/// and tool calls, tool results paired with their calls.
#[must_use]
pub fn items(messages: &[Msg]) -> Vec<crate::history::Item> {
    let mut conv = Conversation::default();
    for m in messages {
        match m.role.as_str() {
            "system" | "developer" => conv.message(Role::System, m.text.as_str()),
            "assistant" | "model" => {
                conv.reasoning(m.reasoning.as_str(), SentBack::Never);
                conv.message(Role::Assistant, m.text.as_str());
                for c in &m.calls {
                    conv.call(c.id.as_deref(), &c.name, c.arguments.clone());
                }
            }
            "tool" | "function" => {
                let name = m
                    .name
                    .clone()
                    .or_else(|| m.call_id.as_deref().and_then(|id| conv.call_name(id)))
                    .unwrap_or_else(|| "tool".into());
                conv.result(m.call_id.as_deref(), &name, m.text.clone(), false);
            }
            _ => conv.message(Role::User, m.text.as_str()),
        }
    }
    conv.into_items()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: &str, text: &str) -> Msg {
        Msg {
            role: role.into(),
            text: text.into(),
            ..Msg::default()
        }
    }

    fn asks(id: &str, text: &str) -> Msg {
        Msg {
            calls: vec![ToolCall {
                id: Some(id.into()),
                name: "read".into(),
                arguments: "{}".into(),
            }],
            ..msg("assistant", text)
        }
    }

    fn answer(id: &str, text: &str) -> Msg {
        Msg {
            call_id: Some(id.into()),
            ..msg("tool", text)
        }
    }

    fn call(input: Vec<Msg>, output: Msg, prompt: u64) -> Call {
        Call {
            input,
            output: Some(output),
            usage: Some(CallUsage {
                input_tokens: prompt,
                ..CallUsage::default()
            }),
            ..Call::default()
        }
    }

    fn group() -> Group<'static> {
        Group {
            origin: Path::new("t.jsonl"),
            format: "otel",
            key: "c1".into(),
            usage_source: "test",
        }
    }

    #[test]
    fn calls_that_continue_the_conversation_make_one_episode_with_a_call_point_each() {
        // The second input drops the assistant's text (as the v1.30 events do): the first output keeps it.
        let (sys, user) = (msg("system", "be brief"), msg("user", "read a"));
        let calls = vec![
            call(
                vec![sys.clone(), user.clone()],
                asks("c1", "Reading a."),
                10,
            ),
            call(
                vec![sys, user, asks("c1", ""), answer("c1", "alpha")],
                msg("assistant", "It says alpha."),
                20,
            ),
        ];
        let eps = episodes(&group(), calls, &[]);
        assert_eq!(eps.len(), 1);
        let ep = &eps[0];
        assert_eq!(ep.id, "t.jsonl#c1");
        assert_eq!(ep.call_points(), vec![2, 5]);
        assert!(ep.items.iter().any(|i| i.text() == "Reading a."));
        let usage = ProviderUsage::of(ep).unwrap();
        assert_eq!(usage.recorded_calls(), Some(2));
        assert_eq!(usage.input_tokens, Some(30));
    }

    #[test]
    fn a_call_that_does_not_continue_starts_a_new_episode_and_tool_runs_fill_unanswered_calls() {
        let calls = vec![
            call(vec![msg("user", "one")], msg("assistant", "1"), 5),
            call(vec![msg("user", "two")], asks("c9", ""), 6),
        ];
        let runs = [ToolRun {
            call_id: "c9".into(),
            name: "read".into(),
            result: "nine".into(),
        }];
        let eps = episodes(&group(), calls, &runs);
        assert_eq!(eps.len(), 2);
        assert_eq!(eps[1].id, "t.jsonl#c1.2");
        assert_eq!(eps[1].meta["split_from"], "c1");
        assert_eq!(eps[1].items.last().unwrap().text(), "nine");
        assert_eq!(eps[1].call_points(), vec![1]);
    }
}
