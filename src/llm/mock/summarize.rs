//! The mock's summaries: extractive, in the sections of a good summary, under a token budget.
//!
//! The summary reads the transcript a summarizing strategy wrote ([`Transcript`]): the task is the first user
//! message (or the previous summary), the tools are the tool-call lines, progress and remaining work come from
//! the last assistant lines, and the key findings are the most salient lines (errors, paths, numbers,
//! identifiers used more than once) that fit the budget, in their order. It copies lines, it never
//! paraphrases: a finding it keeps is kept verbatim, which a real model's summary need not do.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use rustc_hash::FxHashMap;

use super::clip;
use super::terms::words;
use crate::llm::transcript::{Line, LineKind, Transcript};
use crate::tokens::Tokenizer;

const ERROR_WORDS: [&str; 12] = [
    "error",
    "exception",
    "failed",
    "failure",
    "traceback",
    "assert",
    "denied",
    "not found",
    "timeout",
    "refused",
    "fatal",
    "panic",
];

fn is_identifier(word: &str) -> bool {
    word.contains('_')
        || word.contains('/')
        || (word.contains('.') && !word.ends_with('.'))
        || (word.chars().any(|c| c.is_ascii_digit()) && word.chars().any(char::is_alphabetic))
}

/// How salient a history line is: errors, paths, numbers, identifiers used elsewhere.
fn salience(line: &Line<'_>, freq: &FxHashMap<Cow<'_, str>, usize>) -> i64 {
    let lower = line.text.to_lowercase();
    let mut score = 0i64;
    if ERROR_WORDS.iter().any(|w| lower.contains(w)) {
        score += 4;
    }
    let mut paths = 0;
    let mut numbers = 0;
    let mut reused = 0;
    for w in words(line.text) {
        if w.contains('/')
            || (w.contains('.')
                && w.rsplit('.').next().is_some_and(|ext| {
                    (1..=4).contains(&ext.len()) && ext.chars().all(char::is_alphabetic)
                }))
        {
            paths += 1;
        }
        if w.chars().any(|c| c.is_ascii_digit()) {
            numbers += 1;
        }
        if is_identifier(&w) && freq.get(w.as_ref()).copied().unwrap_or(0) >= 2 {
            reused += 1;
        }
    }
    score += 2 * paths.min(2) + numbers.min(2) + reused.min(3);
    if matches!(line.kind, LineKind::ToolCall(_)) {
        score -= 2;
    }
    score
}

/// The tools the transcript called, in order of first call, each with how many times.
fn tools_used(lines: &[Line<'_>]) -> Vec<(String, usize)> {
    let mut tools: BTreeMap<usize, (String, usize)> = BTreeMap::new();
    let mut tool_index: HashMap<String, usize> = HashMap::new();
    for line in lines {
        if let LineKind::ToolCall(name) = line.kind {
            let next = tool_index.len();
            let idx = *tool_index.entry(name.to_owned()).or_insert(next);
            tools.entry(idx).or_insert((name.to_owned(), 0)).1 += 1;
        }
    }
    tools.into_values().collect()
}

/// The salient lines (by salience, then position) that fit `room` tokens, each with its position, as list
/// items; a line that does not fit is skipped as soon as it is known not to.
fn key_findings(
    lines: &[Line<'_>],
    freq: &FxHashMap<Cow<'_, str>, usize>,
    tokenizer: &Tokenizer,
    room: usize,
) -> Vec<(usize, String)> {
    let mut ranked: Vec<(i64, usize)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_message_from("user"))
        .map(|(i, l)| (salience(l, freq), i))
        .filter(|(s, _)| *s > 0)
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut used = 0;
    let mut chosen = Vec::new();
    for (_, i) in ranked {
        let line = format!("- {}\n", clip(lines[i].text, 240));
        let Some(cost) = tokenizer.count_text_within(&line, room.saturating_sub(used)) else {
            continue;
        };
        used += cost;
        chosen.push((i, line));
    }
    chosen
}

/// An extractive summary of a transcript's text, in sections, under `budget` tokens.
pub(super) fn summarize(transcript: &str, tokenizer: &Tokenizer, budget: usize) -> String {
    let lines: Vec<Line<'_>> = Transcript::lines(transcript).collect();
    // Words borrow the transcript where they are already lower case (most of them).
    let mut freq: FxHashMap<Cow<'_, str>, usize> = FxHashMap::default();
    for line in &lines {
        for w in words(line.text) {
            *freq.entry(w).or_default() += 1;
        }
    }
    let task = lines
        .iter()
        .find(|l| l.is_message_from("user") || l.kind == LineKind::PreviousSummary)
        .map(|l| clip(l.text, 200));
    let tools = tools_used(&lines);
    let assistant: Vec<&str> = lines
        .iter()
        .filter(|l| l.is_message_from("assistant"))
        .map(|l| l.text)
        .collect();
    let remaining = assistant
        .iter()
        .rev()
        .find(|l| {
            let lower = l.to_lowercase();
            ["next", "todo", "remaining", "still", "need", "will "]
                .iter()
                .any(|w| lower.contains(w))
        })
        .map(|l| clip(l, 240));

    let mut out = String::new();
    out.push_str("## Task\n");
    out.push_str(
        task.as_deref()
            .unwrap_or("(not stated in this part of the history)"),
    );
    out.push_str("\n## Tools used\n");
    if tools.is_empty() {
        out.push_str("(none)\n");
    } else {
        let list: Vec<String> = tools.iter().map(|(n, c)| format!("{n} ×{c}")).collect();
        out.push_str(&list.join(", "));
        out.push('\n');
    }
    let fixed_tail = {
        let mut t = String::from("## Progress\n");
        match assistant.last() {
            Some(l) => t.push_str(&clip(l, 240)),
            None => t.push_str("(no assistant step)"),
        }
        t.push_str("\n## Remaining work\n");
        t.push_str(remaining.as_deref().unwrap_or("(not stated)"));
        t
    };
    let used = tokenizer.count_text(&out) + tokenizer.count_text(&fixed_tail) + 6;
    let mut chosen = key_findings(&lines, &freq, tokenizer, budget.saturating_sub(used));
    chosen.sort_by_key(|(i, _)| *i);
    out.push_str("## Key findings\n");
    if chosen.is_empty() {
        out.push_str("(none)\n");
    }
    for (_, line) in chosen {
        out.push_str(&line);
    }
    out.push_str(&fixed_tail);
    out
}
