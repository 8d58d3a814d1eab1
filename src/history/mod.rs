//! The history model every stage shares: [`Item`], [`Episode`], [`Finding`] and [`Probe`].
//!
//! An episode is one recorded agent run: the items the agent's LLM saw, in order, plus the key findings the
//! agent learned along the way and probes (questions) that test whether those findings survive a reduction.

pub mod dataset;
pub mod evidence;
pub mod findings;
pub mod import;
pub mod model;
pub mod open_probes;
pub mod recorded;
mod sent_back;
pub mod text;
mod unit;
pub mod usage;
pub mod validate;

use serde::{Deserialize, Serialize};

pub use model::ModelSwitch;
pub use sent_back::SentBack;
pub use text::{normalize, Text};
pub use unit::Unit;

/// The first line of every summary a strategy writes, in the instructions or in the contents.
pub const SUMMARY_PREFIX: &str = "[Previous work summary]\n";

/// How the summaries agents write of their own context begin, when they replace it with one (a peer preset
/// writes its peer's, an import keeps the agent's own): a message that starts so is a summary, as one that
/// starts with [`SUMMARY_PREFIX`] is.
pub const AGENT_SUMMARY_OPENINGS: [&str; 6] = [
    // Inspect AI 0.3.285, `CompactionSummary` (inspect_ai/model/_compaction/summary.py).
    "[CONTEXT COMPACTION SUMMARY]",
    // Claude Code 2.1 after an auto-compact or `/compact` (the `isCompactSummary` user record).
    "This session is being continued from a previous conversation",
    // OpenAI Codex CLI, codex-rs/core/templates/compact/summary_prefix.md at 928a707f and at 50a53333.
    "You are resuming an in-progress task after context compaction.",
    "Another language model started to solve this problem and produced a summary",
    // Strands Agents 1.62.0, `context_manager="auto"` (strands/_context_manager/methods/summarize.py).
    "[Summarized: ",
    // LangMem 0.0.30, `SummarizationNode` (langmem/short_term/summarization.py, DEFAULT_FINAL_SUMMARY_PROMPT).
    "Summary of the conversation so far: ",
];

/// The first line of a tool output a model rewrote (ACON's refined observation): what follows is a model's
/// words, read as such by [`evidence`], not a placeholder.
pub const REFINED_PREFIX: &str = "[Refined observation]\n";

/// The text of an item that has none.
static EMPTY: std::sync::LazyLock<Text> = std::sync::LazyLock::new(Text::default);

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions from the agent's developer.
    System,
    /// The user (or the harness speaking for the user).
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// The role's wire name (`system`, `user`, `assistant`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One entry of an agent history.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Item {
    /// A chat message.
    Message {
        /// Who wrote it.
        role: Role,
        /// Its text.
        content: Text,
    },
    /// A tool call made by the model.
    ToolCall {
        /// The call id that the result refers to.
        id: Text,
        /// The tool's name.
        name: Text,
        /// The arguments as JSON text, as the model wrote them.
        arguments: Text,
    },
    /// The result of a tool call.
    ToolResult {
        /// The id of the call this answers.
        call_id: Text,
        /// The tool's name.
        name: Text,
        /// The tool's output.
        content: Text,
        /// Whether the tool reported an error.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// Environment output that reaches the model as a user message, not as a tool result (SWE-agent in text
    /// mode, aider, mini-swe-agent's legacy runs): sent with the `user` role, and treated as a tool result by
    /// every strategy that masks, truncates or clears tool output.
    Observation {
        /// What produced it (a command's name), when the trace says; shown in compaction stubs.
        #[serde(default, skip_serializing_if = "str::is_empty")]
        name: Text,
        /// The output.
        content: Text,
    },
    /// The model's recorded reasoning, part of its turn (DeepSeek's `reasoning_content`, Anthropic's
    /// `thinking`, an OpenAI Responses `reasoning` item). It is output of the call that produced it; it joins
    /// later requests as the provider takes it back ([`SentBack`]): never, within its turn (until the next
    /// user message: DeepSeek's thinking mode with tools, Anthropic's tool-use loop, OpenAI's Responses API),
    /// or always.
    Reasoning {
        /// The reasoning text.
        content: Text,
        /// Which later requests carry it.
        #[serde(default, skip_serializing_if = "SentBack::is_never")]
        sent_back: SentBack,
    },
    /// Context the agent sent at the next call point that the trace left out (a system prompt, tool schemas,
    /// a repo map, files in the chat): its size, no text. Import writes one just before each call point of a
    /// trace that records per-call usage its replay falls short of (the difference); the replay sends it at
    /// that call point in front of the request, every strategy keeps it as it keeps the system prompt, and it
    /// is priced and read from the prompt cache like the rest of the request. It is not a content item: no
    /// strategy sees it, and a later call point's block replaces it.
    Unrecorded {
        /// Its size in tokens.
        tokens: usize,
        /// Of those, the tokens the trace says were read from the provider's prompt cache.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cached_tokens: Option<usize>,
        /// What it is, when known (`Claude Code's system prompt and tool schemas`).
        #[serde(default, skip_serializing_if = "str::is_empty")]
        note: Text,
    },
}

/// What kind of tokens a request's tokens are, for token-share reporting: each item's kind, and the tool
/// schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A system message or an instruction.
    System,
    /// A user message.
    User,
    /// Assistant text.
    AssistantText,
    /// A tool call.
    ToolCall,
    /// Tool output: a tool result or an observation.
    ToolResult,
    /// A summary written into the instructions by a strategy.
    Summary,
    /// Recorded reasoning the agent sends back.
    Reasoning,
    /// The tool schemas every request carries.
    Tools,
    /// Context the agent sent that the trace did not record ([`Item::Unrecorded`]).
    Unrecorded,
}

impl ItemKind {
    /// Every kind, in report order.
    pub const ALL: [ItemKind; 9] = [
        ItemKind::System,
        ItemKind::User,
        ItemKind::AssistantText,
        ItemKind::ToolCall,
        ItemKind::ToolResult,
        ItemKind::Summary,
        ItemKind::Reasoning,
        ItemKind::Tools,
        ItemKind::Unrecorded,
    ];

    /// The kind's report name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::System => "system",
            ItemKind::User => "user",
            ItemKind::AssistantText => "assistant_text",
            ItemKind::ToolCall => "tool_call",
            ItemKind::ToolResult => "tool_result",
            ItemKind::Summary => "summary",
            ItemKind::Reasoning => "reasoning",
            ItemKind::Tools => "tools",
            ItemKind::Unrecorded => "unrecorded",
        }
    }
}

impl Item {
    /// A message with the given role and content.
    pub fn message(role: Role, content: impl Into<Text>) -> Self {
        Item::Message {
            role,
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<Text>) -> Self {
        Self::message(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<Text>) -> Self {
        Self::message(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<Text>) -> Self {
        Self::message(Role::Assistant, content)
    }

    /// A tool call.
    pub fn tool_call(
        id: impl Into<Text>,
        name: impl Into<Text>,
        arguments: impl Into<Text>,
    ) -> Self {
        Item::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// A successful tool result.
    pub fn tool_result(
        call_id: impl Into<Text>,
        name: impl Into<Text>,
        content: impl Into<Text>,
    ) -> Self {
        Item::ToolResult {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error: false,
        }
    }

    /// The item's kind for token-share reporting.
    #[must_use]
    pub fn kind(&self) -> ItemKind {
        if self.is_summary() {
            return ItemKind::Summary;
        }
        match self {
            Item::Message {
                role: Role::System, ..
            } => ItemKind::System,
            Item::Message {
                role: Role::User, ..
            } => ItemKind::User,
            Item::Message {
                role: Role::Assistant,
                ..
            } => ItemKind::AssistantText,
            Item::ToolCall { .. } => ItemKind::ToolCall,
            Item::ToolResult { .. } | Item::Observation { .. } => ItemKind::ToolResult,
            Item::Reasoning { .. } => ItemKind::Reasoning,
            Item::Unrecorded { .. } => ItemKind::Unrecorded,
        }
    }

    /// An observation: environment output sent as a user message.
    pub fn observation(name: impl Into<Text>, content: impl Into<Text>) -> Self {
        Item::Observation {
            name: name.into(),
            content: content.into(),
        }
    }

    /// Whether this item starts a new turn of the conversation: a user message, or environment output sent as
    /// one (an observation). Reasoning sent back within its turn ([`SentBack::Turn`]) is dropped there.
    #[must_use]
    pub fn starts_turn(&self) -> bool {
        matches!(
            self,
            Item::Message {
                role: Role::User,
                ..
            } | Item::Observation { .. }
        )
    }

    /// Whether this is reasoning its provider takes back within its turn only ([`SentBack::Turn`]).
    #[must_use]
    pub fn is_turn_reasoning(&self) -> bool {
        matches!(
            self,
            Item::Reasoning {
                sent_back: SentBack::Turn,
                ..
            }
        )
    }

    /// Whether this is tool output: a tool result or an observation.
    #[must_use]
    pub fn is_tool_output(&self) -> bool {
        matches!(self, Item::ToolResult { .. } | Item::Observation { .. })
    }

    /// Whether the agent sends this item to its model as part of the history: every item but reasoning the
    /// agent does not send back and the blocks of unrecorded context (sent in front of the request at their
    /// call point alone, never as history).
    #[must_use]
    pub fn is_sent(&self) -> bool {
        !matches!(
            self,
            Item::Reasoning {
                sent_back: SentBack::Never,
                ..
            } | Item::Unrecorded { .. }
        )
    }

    /// A block of unrecorded context of `tokens` tokens ([`Item::Unrecorded`]).
    #[must_use]
    pub fn unrecorded(tokens: usize, cached_tokens: Option<usize>) -> Self {
        Item::Unrecorded {
            tokens,
            cached_tokens,
            note: Text::default(),
        }
    }

    /// The size of a block of unrecorded context, and how much of it the trace says was read from the cache.
    #[must_use]
    pub fn unrecorded_tokens(&self) -> Option<(usize, Option<usize>)> {
        match self {
            Item::Unrecorded {
                tokens,
                cached_tokens,
                ..
            } => Some((*tokens, *cached_tokens)),
            _ => None,
        }
    }

    /// Whether this is a summary written into the contents: a message starting with [`SUMMARY_PREFIX`] (a
    /// strategy's) or with one of [`AGENT_SUMMARY_OPENINGS`] (an agent's own, or a peer preset's).
    #[must_use]
    pub fn is_summary(&self) -> bool {
        matches!(self, Item::Message { content, .. } if is_summary_text(content))
    }

    /// Whether this item is part of an assistant turn (assistant text, reasoning or a tool call).
    #[must_use]
    pub fn is_assistant_turn(&self) -> bool {
        matches!(
            self,
            Item::Message {
                role: Role::Assistant,
                ..
            } | Item::ToolCall { .. }
                | Item::Reasoning { .. }
        )
    }

    /// Whether this is a message with the given role.
    #[must_use]
    pub fn is_role(&self, wanted: Role) -> bool {
        matches!(self, Item::Message { role, .. } if *role == wanted)
    }

    /// The item's main text: message content, tool arguments or tool output.
    #[must_use]
    pub fn text(&self) -> &str {
        self.shared_text()
    }

    /// The item's main text as the shared allocation it is held in (see [`Item::text`]).
    #[must_use]
    pub fn shared_text(&self) -> &Text {
        match self {
            Item::Message { content, .. }
            | Item::ToolResult { content, .. }
            | Item::Observation { content, .. }
            | Item::Reasoning { content, .. } => content,
            Item::ToolCall { arguments, .. } => arguments,
            // No text: its note says what it is, never what it said.
            Item::Unrecorded { .. } => &EMPTY,
        }
    }

    /// The call id of a tool call or a tool result.
    #[must_use]
    pub fn call_id(&self) -> Option<&str> {
        match self {
            Item::ToolCall { id, .. } => Some(id),
            Item::ToolResult { call_id, .. } => Some(call_id),
            _ => None,
        }
    }

    /// The role the item is sent with (`system`, `user`, `assistant`, or `tool` for a tool result).
    #[must_use]
    pub fn wire_role(&self) -> &'static str {
        match self {
            Item::Message { role, .. } => role.as_str(),
            Item::Unrecorded { .. } => "system",
            Item::ToolCall { .. } | Item::Reasoning { .. } => "assistant",
            Item::ToolResult { .. } => "tool",
            Item::Observation { .. } => "user",
        }
    }

    /// All the text of the item that a model would read, for retention checks.
    ///
    /// A tool call's name is part of what the model sees, so it is included with the arguments.
    #[must_use]
    pub fn searchable_text(&self) -> String {
        self.searchable().into_owned()
    }

    /// [`Item::searchable_text`], borrowed where the item holds it as one string (all but tool calls).
    #[must_use]
    pub fn searchable(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Item::ToolCall {
                name, arguments, ..
            } => format!("{name} {arguments}").into(),
            other => other.text().into(),
        }
    }
}

/// What a finding or probe is about; retention is reported per kind.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// An error or a fact.
    #[default]
    Recall,
    /// A file and what was done to it.
    Artifact,
    /// What was decided and why.
    Decision,
    /// What is next, what still fails.
    Continuation,
}

impl FindingKind {
    /// Every kind, in report order.
    pub const ALL: [FindingKind; 4] = [
        FindingKind::Recall,
        FindingKind::Artifact,
        FindingKind::Decision,
        FindingKind::Continuation,
    ];

    /// The kind's report name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Recall => "recall",
            FindingKind::Artifact => "artifact",
            FindingKind::Decision => "decision",
            FindingKind::Continuation => "continuation",
        }
    }
}

/// A key fact the agent learned and needs later.
///
/// A finding is *retained* in a request when each of its evidence strings is in a text (an item or an
/// instruction) of the request, by the rule of [`evidence`]: on token boundaries, in canonical form, or in a
/// model's own words by its identifying tokens and content words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// Unique within the episode.
    pub id: String,
    /// The fact in words.
    pub text: String,
    /// Strings that must all survive for the finding to count as retained.
    pub evidence: Vec<String>,
    /// Index of the item that introduced the finding.
    pub introduced_at: usize,
    /// What the finding is about.
    #[serde(default)]
    pub kind: FindingKind,
    /// Where the agent needs it: indices of the items (the first of an assistant turn) that use it again. The
    /// need is checked at the call point just before each; a finding without any is needed at the end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needed_at: Vec<usize>,
    /// Whether the task states it, as automatic findings label it. Informative only: the metrics decide where
    /// a finding came from by its evidence ([`evidence::TaskText`]: in the task or the first user message),
    /// whatever this says, and automatic findings agree with that by construction.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_task: bool,
}

/// A question asked at a point of the replay, with the answers that count as correct.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// Unique within the episode.
    pub id: String,
    /// The probe is asked at the first call point after this item index.
    pub after_item: usize,
    /// The question.
    pub question: String,
    /// Accepted answers; a response containing any of them is correct. An open probe may have none.
    #[serde(default)]
    pub answers: Vec<String>,
    /// The finding the probe tests, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    /// What the probe is about.
    #[serde(default)]
    pub kind: FindingKind,
    /// A reference answer, for an open probe: the judge grades the answer against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// One recorded agent run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Episode {
    /// Unique within a dataset.
    pub id: String,
    /// Where the episode comes from (a generator family, a trace format and file).
    pub source: String,
    /// The task in a sentence.
    #[serde(default)]
    pub task: String,
    /// The history, in recorded order.
    pub items: Vec<Item>,
    /// Key findings.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// Probes.
    #[serde(default)]
    pub probes: Vec<Probe>,
    /// The tool definitions the agent ran with, as the provider APIs take them (`{"type": "function",
    /// "function": {"name", "description", "parameters"}}`, or the bare function). They count in every request
    /// and no strategy reduces them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<serde_json::Value>,
    /// Whether the recording ends where the agent stopped (a final answer, a submission, the end of a
    /// session): no call point follows the last item. Without it, items after the last assistant turn mean the
    /// agent would call its model once more.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// The model the agent called, as the trace names it (`claude-opus-4-5-20251101`): at every call point
    /// but where [`Episode::model_switches`] says another answered. `None` when the trace names none: the run
    /// then takes its configuration's agent model. It decides the price and the window of its call points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where the session called another model than [`Episode::model`] (aider's `/model`, a side task Claude
    /// Code gives a smaller model), in call-point order ([`model`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_switches: Vec<ModelSwitch>,
    /// Anything else the source recorded (provider token usage, exit status…).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub meta: serde_json::Map<String, serde_json::Value>,
}

/// Whether `text` is a summary's: it starts with [`SUMMARY_PREFIX`] or one of [`AGENT_SUMMARY_OPENINGS`].
#[must_use]
pub fn is_summary_text(text: &str) -> bool {
    text.starts_with(SUMMARY_PREFIX) || AGENT_SUMMARY_OPENINGS.iter().any(|o| text.starts_with(o))
}

/// Index of every call point of `items`: the positions just before an assistant turn begins.
///
/// An assistant message and the tool calls that directly follow it form one turn, so a call point is an
/// assistant-turn item whose predecessor is not an assistant-turn item.
#[must_use]
pub fn call_points(items: &[Item]) -> Vec<usize> {
    items
        .iter()
        .enumerate()
        .filter(|(i, item)| {
            item.is_assistant_turn() && (*i == 0 || !items[i - 1].is_assistant_turn())
        })
        .map(|(i, _)| i)
        .collect()
}

impl Episode {
    /// The texts of its assistant messages, in order (not its tool calls or reasoning).
    #[must_use]
    pub fn assistant_messages(&self) -> Vec<&str> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Message {
                    role: Role::Assistant,
                    content,
                } => Some(&**content),
                _ => None,
            })
            .collect()
    }

    /// Every call point: the positions just before an assistant turn begins, and the end of the episode when
    /// items follow the last turn, unless the recording shows the agent stopped there ([`Episode::stopped`]).
    #[must_use]
    pub fn call_points(&self) -> Vec<usize> {
        let items = &self.items;
        let mut points = call_points(items);
        let last_turn_end = points.last().map_or(0, |&at| turn_end(items, at));
        if (points.is_empty() || last_turn_end < items.len()) && !self.stopped {
            points.push(items.len());
        }
        points
    }
}

/// The index just past the assistant turn starting at `start`.
#[must_use]
pub fn turn_end(items: &[Item], start: usize) -> usize {
    items[start.min(items.len())..]
        .iter()
        .position(|i| !i.is_assistant_turn())
        .map_or(items.len(), |n| start + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_points_group_text_and_tool_calls() {
        let items = vec![
            Item::system("s"),
            Item::user("u"),
            Item::assistant("thinking"),
            Item::tool_call("1", "ls", "{}"),
            Item::tool_result("1", "ls", "a b"),
            Item::tool_call("2", "cat", "{}"),
            Item::tool_result("2", "cat", "x"),
            Item::assistant("done"),
        ];
        assert_eq!(call_points(&items), vec![2, 5, 7]);
    }

    #[test]
    fn item_round_trips_through_json() {
        let item = Item::ToolResult {
            call_id: "c1".into(),
            name: "run".into(),
            content: "boom".into(),
            is_error: true,
        };
        let json = serde_json::to_string(&item).unwrap();
        assert_eq!(
            json,
            r#"{"type":"tool_result","call_id":"c1","name":"run","content":"boom","is_error":true}"#
        );
        assert_eq!(serde_json::from_str::<Item>(&json).unwrap(), item);
    }
}
