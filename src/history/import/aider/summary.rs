//! aider's summary of older turns, which its transcript never shows: where aider replaced them, and which.
//!
//! As aider does it (read at 9cf672b4, the commit session0343 ran, and unchanged through v0.50.1:
//! `aider/coders/base_coder.py`, `aider/history.py`, `aider/models.py`):
//! - only an applied edit moves the turns since the last one (`cur_messages`: prompts, console messages sent,
//!   replies) into `done_messages` (`move_back_cur_messages`); a turn without an applied edit stays in
//!   `cur_messages`, which is never summarized;
//! - there, once `done_messages` pass `max_chat_history_tokens` — 2,048 where the main model's input limit is
//!   32k or more, else 1,024 (`Model.__init__`) — a thread has the weak model summarize them
//!   (`summarize_start`, `ChatSummary.summarize`); the commit note ("I committed the changes …") and aider's
//!   "Ok." are appended just after the thread starts, and the summarizer reads the list as it then is (it
//!   tokenizes first, in tiktoken, which releases the GIL): they are counted in and kept in its tail;
//! - the next request sends its result instead (`format_messages` → `summarize_end`): the summary, one user
//!   message, then the last messages whose count stays under half the budget, the head ending on an assistant
//!   message; all of them summarized where that leaves at most 4 in the head or there are at most 4 in all;
//! - aider counts a message as its weak model's `token_count` of `json.dumps(message)`, which litellm 1.43
//!   (the version aider pinned then) encodes with cl100k_base for every model but Claude 1/2, Cohere and Llama
//!   (`litellm.utils._select_tokenizer`: Claude 3 models fall through to its default). This counts the same
//!   way: exact where litellm did, and for the text of the messages the transcript holds; the summary's own
//!   size is not in the transcript, and is counted as [`SUMMARY_TOKENS`] where a later decision sums it.

use crate::history::recorded::Compaction;
use crate::history::{Episode, Item, Role};

/// aider's budget for the chat history where the main model's input limit is 32k or more, else half of it.
pub const CHAT_HISTORY_TOKENS: usize = 2 * 1024;

/// The size aider counts for a summary it wrote, where a later decision sums it with the turns after it: the
/// transcript does not hold it. aider asks its weak model to "*Briefly* summarize" and prefixes "I spoke to you
/// previously about a number of things."; this is a short summary's size in aider's count. Measured on the
/// shared sessions (the record is aider's own count, so U's step at a summary is its size, ± the repo map's
/// movement; session0288 rebuilt with aider's code, `scripts/aider_reconstruct.py`): session0343's three
/// about 100–350, session0288's first 220–440, but its later ones and session0919's about 3,100–4,100 — near
/// the weak model's 4,096-token output limit, larger than what they replace, and summarized again after every
/// edit. No size fits both; after a long summary the rule places the next ones too late (docs/trace-fidelity.md).
pub const SUMMARY_TOKENS: usize = 200;

/// One message of aider's chat history: its count as aider makes it, whether it is the model's, and the
/// episode's item it is (`None`: aider's "Ok.", or a summary).
#[derive(Debug, Clone, Copy)]
struct Msg {
    tokens: usize,
    assistant: bool,
    item: Option<usize>,
    summary: bool,
}

/// `json.dumps({"role": role, "content": content})` as Python writes it (`ensure_ascii`).
fn python_json(role: &str, content: &str) -> String {
    let mut out = String::with_capacity(content.len() + 32);
    out.push_str("{\"role\": \"");
    out.push_str(role);
    out.push_str("\", \"content\": \"");
    for c in content.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0_u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push_str("\"}");
    out
}

/// aider's count of one message (litellm's cl100k_base of its JSON).
#[must_use]
pub fn aider_tokens(role: &str, content: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton()
        .encode_ordinary(&python_json(role, content))
        .len()
}

/// `ChatSummary.summarize`: what aider's history becomes, the summary a message of [`SUMMARY_TOKENS`].
fn summarize(messages: &[Msg], max_tokens: usize, depth: usize) -> Vec<Msg> {
    let summary = Msg {
        tokens: SUMMARY_TOKENS,
        assistant: false,
        item: None,
        summary: true,
    };
    let total: usize = messages.iter().map(|m| m.tokens).sum();
    if total <= max_tokens && depth == 0 {
        return messages.to_vec();
    }
    let min_split = 4;
    if messages.len() <= min_split || depth > 3 {
        return vec![summary];
    }
    let half = max_tokens / 2;
    let (mut tail, mut split) = (0, messages.len());
    for (i, m) in messages.iter().enumerate().rev() {
        if tail + m.tokens < half {
            tail += m.tokens;
            split = i;
        } else {
            break;
        }
    }
    // The head ends with an assistant message.
    while split > 1 && !messages[split - 1].assistant {
        split -= 1;
    }
    if split <= min_split {
        return vec![summary];
    }
    let tail_tokens: usize = messages[split..].iter().map(|m| m.tokens).sum();
    let mut result = vec![summary];
    result.extend_from_slice(&messages[split..]);
    if SUMMARY_TOKENS + tail_tokens < max_tokens {
        return result;
    }
    summarize(&result, max_tokens, depth + 1)
}

/// aider's budget for `model`'s chat history ([`CHAT_HISTORY_TOKENS`], half of it below a 32k input limit or
/// for a model litellm does not know).
fn budget(model: Option<&str>) -> usize {
    let window = model
        .and_then(|m| crate::llm::pricing::PriceTable::builtin().quote(m))
        .and_then(|q| q.window)
        .unwrap_or(0);
    if window < 32 * 1024 {
        CHAT_HISTORY_TOKENS / 2
    } else {
        CHAT_HISTORY_TOKENS
    }
}

/// What aider sent at each call point of `ep` (one context: its items are aider's messages in order), given the
/// items that are edit notes (`notes`, the commit note aider adds after each applied edit): per call point, the
/// items sent where a summary replaced older turns (`None` where it sent the history as recorded), and each
/// summary's compaction.
pub fn replay(ep: &Episode, notes: &[usize]) -> (Vec<Option<Vec<Item>>>, Vec<Compaction>) {
    let points = ep.call_points();
    let mut done: Vec<Msg> = Vec::new();
    let mut cur: Vec<Msg> = Vec::new();
    let mut pending: Option<Vec<Msg>> = None;
    let mut sent = Vec::new();
    let mut compactions = Vec::new();
    let mut k = 0;
    for (i, item) in ep.items.iter().enumerate() {
        if points.get(k) == Some(&i) {
            if let Some(p) = pending.take() {
                done = p;
                compactions.push(Compaction {
                    call_point: k,
                    kind: "summary".into(),
                    unseen_summary: true,
                    ..Compaction::default()
                });
            }
            let request = done.iter().any(|m| m.summary).then(|| {
                done.iter()
                    .chain(&cur)
                    .filter_map(|m| m.item)
                    .map(|n| ep.items[n].clone())
                    .collect()
            });
            sent.push(request);
            k += 1;
        }
        let (role, assistant) = match item {
            Item::Message {
                role: Role::Assistant,
                ..
            } => ("assistant", true),
            Item::Message { .. } | Item::Observation { .. } => ("user", false),
            _ => continue,
        };
        let msg = Msg {
            tokens: aider_tokens(role, item.text()),
            assistant,
            item: Some(i),
            summary: false,
        };
        if !notes.contains(&i) {
            cur.push(msg);
            continue;
        }
        // An applied edit: the turns since the last one move back, and may pass the budget.
        done.append(&mut cur);
        let total: usize = done.iter().map(|m| m.tokens).sum();
        let ok = Msg {
            tokens: aider_tokens("assistant", "Ok."),
            assistant: true,
            item: None,
            summary: false,
        };
        done.extend([msg, ok]);
        let max = budget(ep.model_at(k.saturating_sub(1)));
        if total > max {
            pending = Some(summarize(&done, max, 0));
        }
    }
    while sent.len() < points.len() {
        sent.push(None);
    }
    (sent, compactions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tokens: usize, assistant: bool) -> Msg {
        Msg {
            tokens,
            assistant,
            item: None,
            summary: false,
        }
    }

    /// `ChatSummary.summarize` by hand, at a 2,048 budget: under it nothing changes; 4 messages or fewer are
    /// summarized whole; else the tail is the last messages under 1,024 together, moved back so that the
    /// head ends on an assistant message, and what precedes it is summarized — whole where that leaves at
    /// most 4 in the head.
    #[test]
    fn summarize_keeps_a_tail_under_half_the_budget() {
        let m = msg;
        let small = [m(100, false), m(900, true)];
        assert_eq!(summarize(&small, 2048, 0).len(), 2);
        let four = [m(100, false), m(1500, true), m(40, false), m(900, true)];
        let s = summarize(&four, 2048, 0);
        assert!(s.len() == 1 && s[0].summary);
        // Prompt, reply, commit note, "Ok." three times: 2,469 tokens. From the end: 13, 40, 500, 60, 13, 40
        // (666) stay under 1,024 with the 700 before them past it: the tail starts at the commit note after
        // that reply, the head ends on it (an assistant message), and 6 messages follow the summary.
        let turns = [
            m(100, false),
            m(900, true),
            m(40, false),
            m(13, true),
            m(50, false),
            m(700, true),
            m(40, false),
            m(13, true),
            m(60, false),
            m(500, true),
            m(40, false),
            m(13, true),
        ];
        let s = summarize(&turns, 2048, 0);
        assert!(s[0].summary && s[0].tokens == SUMMARY_TOKENS);
        assert_eq!(
            s[1..].iter().map(|m| m.tokens).collect::<Vec<_>>(),
            [40, 13, 60, 500, 40, 13]
        );
        // A 1,200-token first reply leaves the note after it as the tail's start, at index 2: at most 4 in
        // the head, so all is summarized.
        let mut long = turns[..8].to_vec();
        long[1] = m(1200, true);
        long[5] = m(400, true);
        long[4] = m(300, false);
        let s = summarize(&long, 2048, 0);
        assert!(s.len() == 1 && s[0].summary, "{s:?}");
    }

    /// Python's `json.dumps` of a message: quotes, backslashes, newlines and non-ASCII escaped
    /// (`ensure_ascii`), astral characters as surrogate pairs.
    #[test]
    fn messages_are_counted_as_python_dumps_them() {
        assert_eq!(
            python_json("user", "a \"b\"\\\n\té😀"),
            r#"{"role": "user", "content": "a \"b\"\\\n\t\u00e9\ud83d\ude00"}"#
        );
        // `{"role": "assistant", "content": "Ok."}`: 13 cl100k tokens, as Python's tiktoken 0.14 counts it.
        assert_eq!(aider_tokens("assistant", "Ok."), 13);
    }
}
