//! ADK's events as [`super::Adk`] reads them, its compaction ranges and the sizes ADK weighs them by
//! (google-adk 2.15.0: `apps/compaction.py`, `flows/llm_flows/context/_compaction.py`).

use std::collections::HashSet;

use crate::history::Item;

/// A compaction event: the range of event timestamps it covers and its summary.
#[derive(Debug, Clone)]
pub(super) struct Compaction {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) summary: String,
}

/// What kind of event an item joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Model,
    Results,
    Single,
}

/// One of ADK's events: items `first..=last` of the history (with the items not sent that travel with them).
#[derive(Debug, Clone)]
pub(super) struct Event {
    pub(super) first: usize,
    pub(super) last: usize,
    /// Its timestamp: the arrival number of its last item.
    pub(super) ts: u64,
    pub(super) invocation: usize,
    pub(super) calls: Vec<String>,
    pub(super) responses: Vec<String>,
    /// Its content's size as ADK measures it, the characters of its JSON ([`Adk::sized`]; 0 until then).
    pub(super) chars: usize,
}

/// What a request is made of, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    Event(usize),
    Summary(usize),
}

/// The characters of `{"parts":[],"role":"model"}`: a summary with no text, as ADK prices the most a range
/// could remove.
pub(super) const EMPTY_SUMMARY_CHARS: usize = 27;

/// `_get_compaction_ranges`: the compactions no other contains (of identical ranges, the latest), in order.
pub(super) fn retained(compactions: &[Compaction]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..compactions.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&compactions[a], &compactions[b]);
        x.start
            .cmp(&y.start)
            .then(y.end.cmp(&x.end))
            .then(b.cmp(&a))
    });
    let mut max_end: Option<u64> = None;
    let mut keep = HashSet::new();
    for c in order {
        if max_end.is_none_or(|m| compactions[c].end > m) {
            keep.insert(c);
            max_end = Some(compactions[c].end);
        }
    }
    (0..compactions.len())
        .filter(|c| keep.contains(c))
        .collect()
}

/// `_process_compaction_events`: the retained summaries at their ranges' ends and the events no retained
/// range covers, in timestamp order.
pub(super) fn processed(events: &[Event], compactions: &[Compaction]) -> Vec<Entry> {
    let kept = retained(compactions);
    let mut ranges: Vec<(u64, u64)> = kept
        .iter()
        .map(|&c| (compactions[c].start, compactions[c].end))
        .filter(|(s, e)| s <= e)
        .collect();
    ranges.sort_unstable();
    let mut coverage: Vec<(u64, u64)> = Vec::new();
    for (s, e) in ranges {
        match coverage.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => coverage.push((s, e)),
        }
    }
    let covered = |ts: u64| coverage.iter().any(|&(s, e)| s <= ts && ts <= e);
    // (timestamp, a summary after an event of its timestamp, order) -> entry.
    let mut out: Vec<((u64, u8, usize), Entry)> = kept
        .iter()
        .map(|&c| ((compactions[c].end, 1, c), Entry::Summary(c)))
        .collect();
    out.extend(
        events
            .iter()
            .enumerate()
            .filter(|(_, e)| !covered(e.ts))
            .map(|(k, e)| ((e.ts, 0, k), Entry::Event(k))),
    );
    out.sort_by_key(|(key, _)| *key);
    out.into_iter().map(|(_, e)| e).collect()
}

/// `_longest_self_contained_prefix`: the longest prefix of `range` that leaves no call open, where a call no
/// response in the session ever answers (outside the newest invocation) is not waited for.
pub(super) fn longest_self_contained_prefix<'a>(range: &'a [Event], all: &[Event]) -> &'a [Event] {
    let pass = |dead: &HashSet<&str>| {
        let mut open: HashSet<&str> = HashSet::new();
        let mut safe = 0;
        for (k, e) in range.iter().enumerate() {
            for r in &e.responses {
                open.remove(r.as_str());
            }
            for c in &e.calls {
                if !dead.contains(c.as_str()) {
                    open.insert(c.as_str());
                }
            }
            if open.is_empty() {
                safe = k + 1;
            }
        }
        safe
    };
    let safe = pass(&HashSet::new());
    if safe == range.len() {
        return range;
    }
    if safe > 0 && range[safe - 1].invocation != range[safe].invocation {
        return &range[..safe];
    }
    let newest = all.last().map(|e| e.invocation);
    let answered: HashSet<&str> = all
        .iter()
        .flat_map(|e| e.responses.iter().map(String::as_str))
        .collect();
    let dead: HashSet<&str> = range
        .iter()
        .filter(|e| Some(e.invocation) != newest)
        .flat_map(|e| e.calls.iter().map(String::as_str))
        .filter(|c| !answered.contains(c))
        .collect();
    if dead.is_empty() {
        return &range[..safe];
    }
    &range[..safe.max(pass(&dead))]
}

/// A JSON string's characters, quotes included, as pydantic writes it.
fn json_chars(text: &str) -> usize {
    serde_json::to_string(text).map_or(text.chars().count() + 2, |s| s.chars().count())
}

/// A tool call's arguments as ADK holds them (a JSON object; anything else under `input`), in characters of
/// their compact JSON.
fn args_chars(arguments: &str) -> usize {
    let value = match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(v) => serde_json::json!({ "input": v }),
        Err(_) => serde_json::json!({ "input": arguments }),
    };
    serde_json::to_string(&value).map_or(0, |s| s.chars().count())
}

/// The characters of an event's content as `Content.model_dump_json(exclude_none=True)` writes it.
pub(super) fn content_chars(items: &[Item]) -> usize {
    let mut parts: Vec<usize> = Vec::new();
    let mut role = "user";
    for item in items.iter().filter(|i| i.is_sent()) {
        parts.push(match item {
            // {"function_call":{"id":…,"args":…,"name":…}}
            Item::ToolCall {
                id,
                name,
                arguments,
            } => {
                role = "model";
                "{\"function_call\":{\"id\":,\"args\":,\"name\":}}".len()
                    + json_chars(id)
                    + args_chars(arguments)
                    + json_chars(name)
            }
            // {"function_response":{"id":…,"name":…,"response":{"result":…}}}
            Item::ToolResult {
                call_id,
                name,
                content,
                ..
            } => {
                let name = if name.is_empty() {
                    "tool"
                } else {
                    name.as_ref()
                };
                "{\"function_response\":{\"id\":,\"name\":,\"response\":{\"result\":}}}".len()
                    + json_chars(call_id)
                    + json_chars(name)
                    + json_chars(content)
            }
            other => {
                if other.is_assistant_turn() {
                    role = "model";
                }
                "{\"text\":}".len() + json_chars(other.text())
            }
        });
    }
    // {"parts":[…],"role":"…"}
    "{\"parts\":[],\"role\":\"\"}".len()
        + parts.iter().sum::<usize>()
        + parts.len().saturating_sub(1)
        + role.len()
}

/// The characters of a summary's content: `{"parts":[{"text":…}],"role":"model"}`.
pub(super) fn summary_chars(summary: &str) -> usize {
    "{\"parts\":[{\"text\":}],\"role\":\"model\"}".len() + json_chars(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_sizes_are_adks_json() {
        assert_eq!(
            content_chars(&[Item::user("hi")]),
            r#"{"parts":[{"text":"hi"}],"role":"user"}"#.len()
        );
        assert_eq!(
            content_chars(&[Item::assistant("a\n"), Item::tool_call("c1", "ls", r#"{"a": 1}"#)]),
            r#"{"parts":[{"text":"a\n"},{"function_call":{"id":"c1","args":{"a":1},"name":"ls"}}],"role":"model"}"#.len()
        );
        assert_eq!(
            content_chars(&[Item::tool_result("c1", "ls", "ok")]),
            r#"{"parts":[{"function_response":{"id":"c1","name":"ls","response":{"result":"ok"}}}],"role":"user"}"#.len()
        );
        assert_eq!(
            summary_chars(""),
            r#"{"parts":[{"text":""}],"role":"model"}"#.len()
        );
    }

    #[test]
    fn a_containing_range_supersedes_the_contained() {
        let c = |start, end| Compaction {
            start,
            end,
            summary: String::new(),
        };
        assert_eq!(retained(&[c(1, 5), c(3, 9)]), [0, 1]);
        assert_eq!(retained(&[c(3, 5), c(1, 9)]), [1]);
        assert_eq!(retained(&[c(1, 5), c(1, 5)]), [1]);
    }
}
