//! Checks that a dataset is well formed and that each episode makes sense as a history.
//!
//! Parsing catches malformed JSON, wrong types and unknown roles; [`check_episode`] then catches what JSON
//! cannot express: tool results that answer no earlier call, findings whose evidence the history never
//! showed, probes past the end, duplicate ids.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use super::dataset::stream;
use super::usage::ProviderUsage;
use super::{normalize, Episode, Item};
use crate::error::{Error, Result};

/// One problem in one episode: the field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// JSON path of the field, e.g. `items[4].call_id`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// One problem located in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub path: PathBuf,
    /// One-based line.
    pub line: usize,
    /// The episode id, when the line parsed far enough to have one.
    pub episode: Option<String>,
    /// The field, when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.line)?;
        if let Some(ep) = &self.episode {
            write!(f, ": episode '{ep}'")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// What validation of a path found.
#[derive(Debug, Default, Clone)]
pub struct Validation {
    /// Files read.
    pub files: usize,
    /// Episodes that parsed.
    pub episodes: usize,
    /// Items in those episodes.
    pub items: usize,
    /// Findings in those episodes.
    pub findings: usize,
    /// Probes in those episodes.
    pub probes: usize,
    /// Every problem, in file order.
    pub problems: Vec<Problem>,
    /// What is suspicious but not wrong (a replay that will not match what the trace records), in file order.
    pub warnings: Vec<Problem>,
}

impl Validation {
    /// Whether no problem was found.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Validates every dataset file under `path` and reports every problem found (not only the first).
///
/// # Errors
/// Fails only when `path` cannot be listed; problems inside files are returned in [`Validation::problems`].
pub fn validate_path(path: &Path) -> Result<Validation> {
    let mut out = Validation::default();
    let mut seen_ids: HashMap<String, (PathBuf, usize)> = HashMap::new();
    let mut last_file: Option<PathBuf> = None;
    for res in stream(path)? {
        match res {
            Ok((file, line, ep)) => {
                if last_file.as_ref() != Some(&file) {
                    out.files += 1;
                    last_file = Some(file.clone());
                }
                out.episodes += 1;
                out.items += ep.items.len();
                out.findings += ep.findings.len();
                out.probes += ep.probes.len();
                let locate = |issue: Issue| Problem {
                    path: file.clone(),
                    line,
                    episode: Some(ep.id.clone()),
                    field: Some(issue.field),
                    message: issue.message,
                };
                out.problems
                    .extend(check_episode(&ep).into_iter().map(locate));
                out.warnings
                    .extend(warn_episode(&ep).into_iter().map(locate));
                if let Some((first_file, first_line)) = seen_ids.get(&ep.id) {
                    out.problems.push(Problem {
                        path: file.clone(),
                        line,
                        episode: Some(ep.id.clone()),
                        field: Some("id".into()),
                        message: format!(
                            "duplicate episode id, first seen at {}:{first_line}",
                            first_file.display()
                        ),
                    });
                } else {
                    seen_ids.insert(ep.id.clone(), (file, line));
                }
            }
            Err(Error::Parse {
                path,
                line,
                message,
            }) => {
                if last_file.as_ref() != Some(&path) {
                    out.files += 1;
                    last_file = Some(path.clone());
                }
                out.problems.push(Problem {
                    path,
                    line,
                    episode: None,
                    field: None,
                    message,
                });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// What is suspicious in an episode without making it invalid: the replay's call points against the model
/// calls the trace records.
#[must_use]
pub fn warn_episode(ep: &Episode) -> Vec<Issue> {
    let mut warnings = Vec::new();
    // Calls the trace shows without usage (named in `meta.usage.unrecorded`) are call points too.
    if let Some(recorded) = ProviderUsage::of(ep).and_then(|u| u.call_points()) {
        let points = ep.call_points().len();
        if recorded != points {
            warnings.push(Issue {
                field: "meta.usage".into(),
                message: format!(
                    "the trace records usage for {recorded} model call(s) but the replay has {points} call \
                     point(s): replayed and recorded totals cover different calls (a reply whose usage the trace \
                     does not keep, a call interrupted before its reply, or a retry)"
                ),
            });
        }
    }
    warnings
}

/// Checks one parsed episode; an empty list means it is valid.
#[must_use]
pub fn check_episode(ep: &Episode) -> Vec<Issue> {
    let mut issues = Issues(Vec::new());
    if ep.id.trim().is_empty() {
        issues.add("id".into(), "episode id is empty".into());
    }
    if ep.items.is_empty() {
        issues.add("items".into(), "episode has no items".into());
    }
    check_calls(ep, &mut issues);
    check_findings(ep, &mut issues);
    check_probes(ep, &mut issues);
    for (field, message) in super::model::problems(ep) {
        issues.add(field, message);
    }
    issues.0
}

/// The problems found in an episode, each with the field at fault.
struct Issues(Vec<Issue>);

impl Issues {
    fn add(&mut self, field: String, message: String) {
        self.0.push(Issue { field, message });
    }
}

/// Tool calls have names and ids of their own; each result answers one earlier call, once.
fn check_calls(ep: &Episode, issues: &mut Issues) {
    let mut calls: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (i, item) in ep.items.iter().enumerate() {
        match item {
            Item::ToolCall { id, name, .. } => {
                if name.trim().is_empty() {
                    issues.add(
                        format!("items[{i}].name"),
                        "tool call has an empty name".into(),
                    );
                }
                if !calls.insert(id) {
                    issues.add(
                        format!("items[{i}].id"),
                        format!("tool call id '{id}' is used twice in this episode; ids pair calls with results"),
                    );
                }
            }
            Item::ToolResult { call_id, .. } => {
                if !calls.contains(&**call_id) {
                    issues.add(
                        format!("items[{i}].call_id"),
                        format!(
                            "tool result answers call '{call_id}', which no earlier tool call has"
                        ),
                    );
                } else if !answered.insert(call_id) {
                    issues.add(
                        format!("items[{i}].call_id"),
                        format!(
                            "a second result for call '{call_id}': a call has one result (environment output \
                             that answers no call is an observation)"
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}

/// Findings have ids of their own, an introduction inside the episode, need points after it in order, and
/// evidence that occurs where the replay would find it at or before the introduction.
fn check_findings(ep: &Episode, issues: &mut Issues) {
    // Item texts in canonical form, each computed when a check first needs it: evidence usually sits in the
    // item that introduces its finding, so the search runs backwards from there and most items are never read.
    // Evidence occurs where the replay would find it exactly (`history::evidence`).
    let mut canonical: Vec<Option<super::evidence::Canon>> = vec![None; ep.items.len()];
    let mut occurs_up_to = |evidence: &str, last: usize| {
        let needle = super::evidence::Needle::new(evidence);
        (0..=last).rev().any(|i| {
            needle.exact_in(
                canonical[i]
                    .get_or_insert_with(|| super::evidence::canon(&ep.items[i].searchable())),
            )
        })
    };
    let mut finding_ids = HashSet::new();
    for (f, finding) in ep.findings.iter().enumerate() {
        if !finding_ids.insert(finding.id.as_str()) {
            issues.add(
                format!("findings[{f}].id"),
                format!("duplicate finding id '{}'", finding.id),
            );
        }
        if finding.introduced_at >= ep.items.len() {
            issues.add(
                format!("findings[{f}].introduced_at"),
                format!(
                    "introduced_at {} is out of range: the episode has {} items",
                    finding.introduced_at,
                    ep.items.len()
                ),
            );
            continue;
        }
        check_needs(ep, f, issues);
        if finding.evidence.is_empty() {
            issues.add(
                format!("findings[{f}].evidence"),
                "finding has no evidence string".into(),
            );
        }
        for (e, evidence) in finding.evidence.iter().enumerate() {
            if normalize(evidence).is_empty() {
                issues.add(
                    format!("findings[{f}].evidence[{e}]"),
                    "evidence string is blank".into(),
                );
            } else if !occurs_up_to(evidence, finding.introduced_at) {
                issues.add(
                    format!("findings[{f}].evidence[{e}]"),
                    format!(
                        "evidence '{evidence}' does not occur in any item at or before index {} (as the replay \
                         looks for it: on token boundaries, with its identifiers' case)",
                        finding.introduced_at
                    ),
                );
            }
        }
    }
}

/// Finding `f`'s need points come after its introduction and each other, within the episode.
fn check_needs(ep: &Episode, f: usize, issues: &mut Issues) {
    let finding = &ep.findings[f];
    let mut previous = finding.introduced_at;
    for (n, &need) in finding.needed_at.iter().enumerate() {
        if need <= previous || need > ep.items.len() {
            issues.add(
                format!("findings[{f}].needed_at[{n}]"),
                format!(
                    "need point {need} must come after introduced_at ({}) and the need before it, in \
                     increasing order, and be at most the item count ({})",
                    finding.introduced_at,
                    ep.items.len()
                ),
            );
        }
        previous = previous.max(need);
    }
}

/// Probes have ids of their own, a position inside the episode, an answer to accept, and a known finding.
fn check_probes(ep: &Episode, issues: &mut Issues) {
    let mut probe_ids = HashSet::new();
    for (p, probe) in ep.probes.iter().enumerate() {
        if !probe_ids.insert(probe.id.as_str()) {
            issues.add(
                format!("probes[{p}].id"),
                format!("duplicate probe id '{}'", probe.id),
            );
        }
        if probe.after_item >= ep.items.len() {
            issues.add(
                format!("probes[{p}].after_item"),
                format!(
                    "after_item {} is past the end: the episode has {} items",
                    probe.after_item,
                    ep.items.len()
                ),
            );
        }
        if probe.answers.iter().all(|a| a.trim().is_empty())
            && probe
                .reference
                .as_deref()
                .is_none_or(|r| r.trim().is_empty())
        {
            issues.add(
                format!("probes[{p}].answers"),
                "probe has no accepted answer and no reference answer".into(),
            );
        }
        if let Some(fid) = &probe.finding {
            if !ep.findings.iter().any(|f| &f.id == fid) {
                issues.add(
                    format!("probes[{p}].finding"),
                    format!("probe refers to unknown finding '{fid}'"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Finding, FindingKind, Probe};

    fn episode() -> Episode {
        Episode {
            id: "e1".into(),
            source: "test".into(),
            task: String::new(),
            items: vec![
                Item::user("fix it"),
                Item::tool_call("c1", "run", "{}"),
                Item::tool_result("c1", "run", "Error: Disk FULL on /dev/sda1"),
            ],
            findings: vec![Finding {
                id: "f1".into(),
                text: "disk full".into(),
                evidence: vec!["disk   full".into()],
                introduced_at: 2,
                kind: FindingKind::Recall,
                ..Finding::default()
            }],
            probes: vec![Probe {
                id: "p1".into(),
                after_item: 2,
                question: "what failed?".into(),
                answers: vec!["disk full".into()],
                finding: Some("f1".into()),
                kind: FindingKind::Recall,
                reference: None,
            }],
            meta: serde_json::Map::new(),
            ..Episode::default()
        }
    }

    #[test]
    fn valid_episode_has_no_issue() {
        assert_eq!(check_episode(&episode()), vec![]);
    }

    #[test]
    fn every_semantic_problem_is_reported_with_its_field() {
        let mut ep = episode();
        ep.items.push(Item::tool_result("c9", "run", "x"));
        ep.findings[0].introduced_at = 1;
        ep.probes[0].after_item = 10;
        ep.probes[0].finding = Some("nope".into());
        let fields: Vec<String> = check_episode(&ep).into_iter().map(|i| i.field).collect();
        assert_eq!(
            fields,
            vec![
                "items[3].call_id",
                "findings[0].evidence[0]",
                "probes[0].after_item",
                "probes[0].finding"
            ]
        );
    }
}
