//! Automatic key findings for episodes without annotations.
//!
//! The rule, deterministic: split every item into words (runs of letters, digits and `_ . / -`, so that
//! grep's `path.py:88:` gives `path.py`; trailing `. - /` and leading `-` trimmed). A word is a *candidate* when it is a path (has a `/`, or ends in a known
//! file extension: an artifact finding), an identifier (has `_`, or mixes lower and upper case, at least six
//! characters), or a number of at least three digits (recall findings). A candidate becomes a finding when it
//! first appears in an observation — a tool result, or a user message after the first (text-based agents
//! return observations as user messages) — and a later assistant turn (text or tool-call arguments) uses it
//! again. Findings are taken in order of first appearance, at most [`MAX_FINDINGS`] per episode, each with one
//! fill-in-the-blank probe built from the line that introduced it, asked at the end of the episode.

use std::collections::{HashMap, HashSet};

use crate::history::{Episode, Finding, FindingKind, Item, Probe, Role};

/// The most findings extracted from one episode.
pub const MAX_FINDINGS: usize = 12;

const EXTENSIONS: [&str; 22] = [
    "py", "rs", "js", "ts", "tsx", "go", "java", "c", "h", "cpp", "md", "json", "toml", "yaml",
    "yml", "txt", "sh", "html", "css", "vue", "cfg", "ini",
];

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')))
        .map(|w| w.trim_start_matches('-').trim_end_matches(['.', '-', '/']))
        .filter(|w| w.len() >= 3)
}

/// The kind of finding a word would be, if it is a candidate at all.
fn candidate(word: &str) -> Option<FindingKind> {
    if word.len() > 120 || word.contains("://") {
        return None;
    }
    let ext = word
        .rsplit_once('.')
        .map(|(stem, ext)| (stem, ext.to_ascii_lowercase()));
    let has_ext = ext
        .as_ref()
        .is_some_and(|(stem, e)| !stem.is_empty() && EXTENSIONS.contains(&e.as_str()));
    if has_ext || (word.contains('/') && word.chars().any(char::is_alphabetic)) {
        return Some(FindingKind::Artifact);
    }
    let digits = word.chars().filter(char::is_ascii_digit).count();
    if digits >= 3
        && word
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | ':'))
    {
        return Some(FindingKind::Recall);
    }
    let mixed =
        word.chars().any(char::is_lowercase) && word.chars().skip(1).any(char::is_uppercase);
    if word.len() >= 6 && word.chars().any(char::is_alphabetic) && (word.contains('_') || mixed) {
        return Some(FindingKind::Recall);
    }
    None
}

fn is_observation(items: &[Item], i: usize, first_user: Option<usize>) -> bool {
    match &items[i] {
        Item::ToolResult { .. } => true,
        Item::Message {
            role: Role::User, ..
        } => Some(i) != first_user,
        _ => false,
    }
}

/// Adds automatic findings and probes to `ep` (which should have none).
pub fn extract(ep: &mut Episode) {
    let items = &ep.items;
    let first_user = items.iter().position(|i| i.is_role(Role::User));
    let texts: Vec<String> = items.iter().map(Item::searchable_text).collect();
    // Where each word first appears, and the assistant-turn items that use it.
    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    let mut last_use: HashMap<&str, usize> = HashMap::new();
    for (i, text) in texts.iter().enumerate() {
        for w in words(text) {
            first_seen.entry(w).or_insert(i);
            if items[i].is_assistant_turn() {
                last_use.insert(w, i);
            }
        }
    }
    let mut taken: HashSet<&str> = HashSet::new();
    let mut findings = Vec::new();
    let mut probes = Vec::new();
    'items: for (i, text) in texts.iter().enumerate() {
        if !is_observation(items, i, first_user) {
            continue;
        }
        for w in words(text) {
            if findings.len() >= MAX_FINDINGS {
                break 'items;
            }
            let Some(kind) = candidate(w) else { continue };
            if first_seen.get(w) != Some(&i)
                || last_use.get(w).is_none_or(|&u| u <= i)
                || !taken.insert(w)
            {
                continue;
            }
            let n = findings.len() + 1;
            let line = text.lines().find(|l| l.contains(w)).unwrap_or(w).trim();
            let at = line.find(w).unwrap_or(0);
            let start = line[..at]
                .char_indices()
                .rev()
                .nth(80)
                .map_or(0, |(b, _)| b);
            let end = (at
                + w.len()
                + line[at + w.len()..]
                    .char_indices()
                    .nth(80)
                    .map_or(line.len() - at - w.len(), |(b, _)| b))
            .min(line.len());
            let context = line[start..end].replacen(w, "____", 1);
            let name = match &items[i] {
                Item::ToolResult { name, .. } => &**name,
                _ => "tool",
            };
            findings.push(Finding {
                id: format!("auto{n}"),
                text: format!(
                    "{name} output introduced '{w}', used again at item {}",
                    last_use[w]
                ),
                evidence: vec![w.to_owned()],
                introduced_at: i,
                kind,
            });
            probes.push(Probe {
                id: format!("auto{n}"),
                after_item: items.len() - 1,
                question: format!("Fill in the blank from the {name} output: \"{context}\""),
                answers: vec![w.to_owned()],
                finding: Some(format!("auto{n}")),
                kind,
            });
        }
    }
    if !findings.is_empty() {
        ep.meta
            .insert("auto_findings".into(), serde_json::Value::Bool(true));
    }
    ep.findings = findings;
    ep.probes = probes;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::validate::check_episode;

    #[test]
    fn finds_what_a_tool_introduced_and_the_agent_used() {
        let mut ep = Episode {
            id: "e".into(),
            source: "t".into(),
            task: String::new(),
            items: vec![
                Item::user("fix the bug"),
                Item::tool_call("1", "grep", "{\"q\":\"parse\"}"),
                Item::tool_result(
                    "1",
                    "grep",
                    "src/app/parse_date.py:88: def parse_date(value):\nnoise words here",
                ),
                Item::assistant("The bug is in src/app/parse_date.py at line 88, in parse_date."),
            ],
            findings: vec![],
            probes: vec![],
            meta: serde_json::Map::new(),
        };
        extract(&mut ep);
        let evidence: Vec<(&str, FindingKind)> = ep
            .findings
            .iter()
            .map(|f| (f.evidence[0].as_str(), f.kind))
            .collect();
        assert_eq!(
            evidence,
            vec![
                ("src/app/parse_date.py", FindingKind::Artifact),
                ("parse_date", FindingKind::Recall)
            ]
        );
        assert!(
            ep.probes[0].question.contains("____:88: def parse_date"),
            "{}",
            ep.probes[0].question
        );
        assert_eq!(check_episode(&ep), vec![]);
    }
}
