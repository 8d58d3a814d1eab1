//! The seeded generator of the bundled default dataset (`ctxbench gen`).
//!
//! Three scenario families that look like real agent work: a coding agent debugging a failing test
//! ([`coding`]), a research agent reading search results and long pages ([`research`]), and a support agent
//! doing database lookups in a dialogue with a customer ([`support`]). Every episode carries annotated
//! findings of the four kinds, with evidence strings that occur in tool results (sometimes deep inside long
//! outputs) or in the agent's own decisions, their need points (the turns that use them), and probes that
//! ask for them where they are needed — at each need point, never after the agent's closing recap — naming
//! the fact in other words than its evidence. Filler carries what makes a line look important (numbers,
//! paths, identifiers, error words) as often as the lines that matter do, so that a summarizer cannot tell
//! them apart by those cues alone.
//!
//! The same seed gives byte-identical output on every machine and every version of the dependencies: the
//! generator uses its own SplitMix64 ([`Rng`]) rather than `rand`, whose value streams may change between
//! releases.

pub mod coding;
pub mod research;
pub mod support;

use crate::history::{Episode, Finding, FindingKind, Item, Probe};

/// The model every generated episode names: the bundled comparison's agent.
pub const GENERATED_MODEL: &str = "gpt-4o";

/// SplitMix64: a tiny, well-known generator whose stream never changes.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        debug_assert!(lo <= hi);
        #[allow(clippy::cast_possible_truncation)]
        let r = lo + (self.next_u64() % (hi - lo + 1) as u64) as usize;
        r
    }

    /// One element of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len() - 1)]
    }

    /// True with probability `percent`/100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// A lower-case hex string of `n` digits.
    pub fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b"0123456789abcdef"[self.range(0, 15)]))
            .collect()
    }
}

/// What a finding's probes ask, and the answer they accept.
#[derive(Debug)]
struct Asked {
    question: String,
    answer: String,
}

/// Builds one episode item by item, numbering tool calls, findings and probes.
#[derive(Debug)]
pub struct Builder {
    episode: Episode,
    calls: usize,
    /// Per finding, what its probes ask.
    asked: Vec<Asked>,
    /// Open probes (graded by the judge only), by finding, asked at its last need point.
    open: Vec<(usize, FindingKind, String, String)>,
}

impl Builder {
    /// An empty episode.
    #[must_use]
    pub fn new(id: String, source: &str, task: String) -> Self {
        Self {
            episode: Episode {
                id,
                source: source.into(),
                task,
                items: Vec::new(),
                findings: Vec::new(),
                probes: Vec::new(),
                meta: serde_json::Map::new(),
                // The synthetic agent is gpt-4o: priced, windowed and counted as it (o200k_base is its own).
                model: Some(GENERATED_MODEL.to_owned()),
                ..Episode::default()
            },
            calls: 0,
            asked: Vec::new(),
            open: Vec::new(),
        }
    }

    /// Index the next item will get.
    #[must_use]
    pub fn len(&self) -> usize {
        self.episode.items.len()
    }

    /// Whether no item was pushed yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.episode.items.is_empty()
    }

    /// Appends an item, returning its index.
    pub fn push(&mut self, item: Item) -> usize {
        self.episode.items.push(item);
        self.episode.items.len() - 1
    }

    /// Appends a tool call and its result, returning the result's index.
    pub fn tool(&mut self, name: &str, args: &serde_json::Value, output: String) -> usize {
        self.calls += 1;
        let id = format!("call_{:03}", self.calls);
        self.push(Item::tool_call(id.clone(), name, args.to_string()));
        self.push(Item::tool_result(id, name, output))
    }

    /// Records a finding introduced at item `at`, whose probes ask `question` (naming the fact in other words
    /// than its evidence) and accept `answer`; returns the finding's index, for [`Builder::need`]. The probes
    /// are asked where the agent needs the finding ([`Builder::finish`]), not where it appears.
    pub fn finding(
        &mut self,
        kind: FindingKind,
        at: usize,
        text: String,
        evidence: Vec<String>,
        question: String,
        answer: String,
    ) -> usize {
        let id = format!("f{}", self.episode.findings.len() + 1);
        self.episode.findings.push(Finding {
            id,
            text,
            evidence,
            introduced_at: at,
            kind,
            ..Finding::default()
        });
        self.asked.push(Asked { question, answer });
        self.episode.findings.len() - 1
    }

    /// Records that the agent's next item (the assistant turn about to be pushed) uses finding `f`: a need
    /// point of `f`.
    pub fn need(&mut self, f: usize) {
        let at = self.episode.items.len();
        let needs = &mut self.episode.findings[f].needed_at;
        if needs.last() != Some(&at) {
            needs.push(at);
        }
    }

    /// Records metadata.
    pub fn meta(&mut self, key: &str, value: serde_json::Value) {
        self.episode.meta.insert(key.into(), value);
    }

    /// Records an open probe of `kind` about finding `f`, asked at the finding's last need point and graded by
    /// the judge against `reference` (the questions an agent must answer to carry on: what was decided and
    /// why, which files changed and how, what still fails, what a recalled fact was).
    pub fn open_probe(&mut self, f: usize, kind: FindingKind, question: String, reference: String) {
        self.open.push((f, kind, question, reference));
    }

    /// The finished episode, with its probes: one at each need point of each finding (asked at the call point
    /// just before the turn that needs it, where a strategy can have lost it), the last one graded by the judge
    /// against the finding as well, so the two gradings can be compared; and the open probes at their finding's
    /// last need. A finding the agent never needs is probed once, before the last item.
    #[must_use]
    pub fn finish(mut self) -> Episode {
        let last = self.episode.items.len() - 1;
        let due = |f: &Finding| -> Vec<usize> {
            let needs: Vec<usize> = f.needed_at.iter().map(|n| n - 1).collect();
            if needs.is_empty() {
                vec![last - 1]
            } else {
                needs
            }
        };
        let mut probes = Vec::new();
        for (n, (f, asked)) in self.episode.findings.iter().zip(&self.asked).enumerate() {
            let points = due(f);
            for (k, &after_item) in points.iter().enumerate() {
                let final_one = k + 1 == points.len();
                probes.push(Probe {
                    id: format!("p{}-{}", n + 1, k + 1),
                    after_item,
                    question: asked.question.clone(),
                    answers: vec![asked.answer.clone()],
                    finding: Some(f.id.clone()),
                    kind: f.kind,
                    reference: final_one.then(|| f.text.clone()),
                });
            }
        }
        for (n, (f, kind, question, reference)) in self.open.into_iter().enumerate() {
            let finding = &self.episode.findings[f];
            probes.push(Probe {
                id: format!("o{}", n + 1),
                after_item: due(finding).last().copied().unwrap_or(last),
                question,
                answers: Vec::new(),
                finding: Some(finding.id.clone()),
                kind,
                reference: Some(reference),
            });
        }
        probes.sort_by_key(|p| p.after_item);
        self.episode.probes = probes;
        self.episode
    }
}

/// A detail that filler text carries as often as the lines that matter do: a year, a share, a count, a version,
/// a path, an identifier, an error. A summarizer that keeps lines for their numbers, paths, identifiers or
/// error words finds them in filler too, not only on the lines that hold a finding.
fn detail(rng: &mut Rng) -> String {
    const DOCS: [&str; 6] = ["policy", "release", "design", "runbook", "faq", "migration"];
    const PARTS: [&str; 6] = ["notes", "v2", "draft", "index", "changes", "limits"];
    match rng.range(0, 9) {
        0 => format!(" in {}", rng.range(2009, 2024)),
        1 => format!(" by {} percent", rng.range(2, 60)),
        2 => format!(" (see docs/{}_{}.md)", rng.pick(&DOCS), rng.pick(&PARTS)),
        3 => format!(" for about {} records", rng.range(120, 9_800)),
        4 => format!(" since version {}.{}", rng.range(1, 9), rng.range(0, 20)),
        5 => format!(" after {} retries", rng.range(2, 12)),
        6 => format!(" per section {}.{}", rng.range(1, 9), rng.range(1, 9)),
        7 => format!(" with job_key {}", rng.hex(6)),
        8 => {
            let runs = rng.range(20, 400);
            format!(
                ", though a timeout error shows up in {} of {runs} runs",
                rng.range(1, 9)
            )
        }
        _ => format!(
            " (ref {}-{})",
            rng.pick(&["RFC", "ISO", "EN"]),
            rng.range(100, 9999)
        ),
    }
}

/// Builds an English-looking sentence from small vocabularies; half of them carry a [`detail`].
pub fn sentence(rng: &mut Rng) -> String {
    const SUBJECTS: [&str; 12] = [
        "The system",
        "This approach",
        "The analysis",
        "Our team",
        "The module",
        "The committee",
        "Each request",
        "The new policy",
        "The dataset",
        "The service",
        "The report",
        "This change",
    ];
    const VERBS: [&str; 12] = [
        "improves",
        "reduces",
        "depends on",
        "replaces",
        "validates",
        "summarizes",
        "extends",
        "measures",
        "documents",
        "affects",
        "limits",
        "reorganizes",
    ];
    const OBJECTS: [&str; 14] = [
        "the overall throughput",
        "several edge cases",
        "the legacy configuration",
        "regional differences",
        "the quarterly figures",
        "the retry behaviour",
        "long-term maintenance costs",
        "the review process",
        "the default settings",
        "customer expectations",
        "the earlier estimates",
        "the test coverage",
        "the shipping schedule",
        "the data pipeline",
    ];
    const TAILS: [&str; 8] = [
        "",
        " in most cases",
        " without further changes",
        " according to the maintainers",
        " over time",
        " when the load is high",
        " for new users",
        " in the second phase",
    ];
    let (subject, verb, object, tail) = (
        rng.pick(&SUBJECTS),
        rng.pick(&VERBS),
        rng.pick(&OBJECTS),
        rng.pick(&TAILS),
    );
    let detail = if rng.percent(50) {
        detail(rng)
    } else {
        String::new()
    };
    format!("{subject} {verb} {object}{tail}{detail}.")
}

/// A paragraph of `n` sentences.
pub fn paragraph(rng: &mut Rng, n: usize) -> String {
    (0..n).map(|_| sentence(rng)).collect::<Vec<_>>().join(" ")
}

/// Inserts `line` into `lines` at a position between `lo` and `hi` percent of the way through.
pub fn plant(rng: &mut Rng, lines: &mut Vec<String>, line: String, lo: usize, hi: usize) {
    let n = lines.len();
    let at = rng.range(n * lo / 100, (n * hi / 100).max(n * lo / 100));
    lines.insert(at.min(n), line);
}

/// A seeded history of exactly `n` items for scaling measurements: system, task, then turns of an assistant
/// sentence, a `read` call and a result of 1 to 40 sentences (50 to 2,000 characters).
#[must_use]
pub fn synthetic_history(n: usize) -> Vec<Item> {
    let mut rng = Rng::new(n as u64);
    let mut items = vec![
        Item::system("You are an agent."),
        Item::user("Do the task."),
    ];
    let mut k = 0;
    while items.len() < n {
        k += 1;
        items.push(Item::assistant(format!("step {k}: {}", sentence(&mut rng))));
        items.push(Item::tool_call(
            format!("c{k}"),
            "read",
            format!("{{\"path\":\"src/f{k}.py\"}}"),
        ));
        let len = rng.range(1, 40);
        items.push(Item::tool_result(
            format!("c{k}"),
            "read",
            paragraph(&mut rng, len),
        ));
    }
    items.truncate(n);
    items
}

/// Turn counts of the episodes of one family, from short to long.
pub const TURNS: [usize; 14] = [6, 8, 11, 14, 18, 24, 30, 38, 48, 60, 74, 90, 110, 132];

/// Generates the default dataset: 14 episodes of each family, interleaved.
#[must_use]
pub fn generate(seed: u64) -> Vec<Episode> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(TURNS.len() * 3);
    for (i, &turns) in TURNS.iter().enumerate() {
        out.push(coding::episode(&mut rng, i, turns));
        out.push(research::episode(&mut rng, i, turns));
        out.push(support::episode(&mut rng, i, turns));
    }
    out
}

/// Positions (turn numbers) at which an episode of `turns` turns plants its events, at the given fractions.
#[must_use]
pub fn event_turns(turns: usize, fractions: &[usize]) -> Vec<usize> {
    let mut used: Vec<usize> = Vec::new();
    for f in fractions {
        let mut t = (turns * f / 100).clamp(1, turns.saturating_sub(1).max(1));
        while used.contains(&t) {
            t += 1;
        }
        used.push(t);
    }
    used
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::validate::check_episode;

    #[test]
    fn rng_stream_is_pinned() {
        let mut r = Rng::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn generated_episodes_are_valid_and_deterministic() {
        let a = generate(7);
        assert_eq!(a, generate(7));
        assert_eq!(a.len(), 42);
        for ep in &a {
            assert_eq!(check_episode(ep), vec![], "{}", ep.id);
            assert!(ep.findings.len() >= 4, "{}", ep.id);
        }
        assert!(a.iter().map(|e| e.items.len()).min().unwrap() >= 20);
        assert!(a.iter().map(|e| e.items.len()).max().unwrap() >= 400);
    }

    /// Every probe is asked at a need point of its finding (just before the turn that uses it), none after the
    /// agent's closing recap; each (finding, need) pair has exactly one probe with accepted answers.
    #[test]
    fn probes_are_asked_at_need_points_before_the_recap() {
        for ep in generate(42) {
            let last = ep.items.len() - 1;
            let mut pairs = 0;
            for f in &ep.findings {
                assert!(!f.needed_at.is_empty(), "{} {}", ep.id, f.id);
                pairs += f.needed_at.len();
            }
            let mut exact = Vec::new();
            for p in &ep.probes {
                let f = finding_of(&ep, p);
                assert!(
                    f.needed_at.contains(&(p.after_item + 1)),
                    "{} {}: asked after item {}, needs {:?}",
                    ep.id,
                    p.id,
                    p.after_item,
                    f.needed_at
                );
                assert!(p.after_item < last, "{} {}", ep.id, p.id);
                if !p.answers.is_empty() {
                    exact.push((f.id.clone(), p.after_item));
                }
            }
            let asked = exact.len();
            exact.sort();
            exact.dedup();
            assert_eq!((asked, exact.len()), (pairs, pairs), "{}", ep.id);
        }
    }

    fn finding_of<'e>(ep: &'e Episode, p: &Probe) -> &'e Finding {
        ep.findings
            .iter()
            .find(|f| Some(&f.id) == p.finding.as_ref())
            .unwrap()
    }

    /// The tokens of a text that identify a fact: those with a digit, `_`, `/` or two capitals.
    fn identifying(text: &str) -> Vec<String> {
        text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '\''))
            .map(|w| w.trim_matches(|c: char| matches!(c, '.' | ':' | '?' | '!')))
            .filter(|w| {
                w.chars()
                    .any(|c| c.is_ascii_digit() || c == '_' || c == '/')
                    || w.chars().filter(char::is_ascii_uppercase).count() >= 2
            })
            .map(str::to_lowercase)
            .collect()
    }

    /// A question names its subject in other words than its evidence: it holds none of the evidence's
    /// identifying tokens (numbers, identifiers, paths, codes) and none of its accepted answers.
    #[test]
    fn questions_name_their_subject_in_other_words() {
        for ep in generate(42) {
            for p in &ep.probes {
                let f = finding_of(&ep, p);
                let question = p.question.to_lowercase();
                let asked = identifying(&p.question);
                for token in f.evidence.iter().flat_map(|e| identifying(e)) {
                    assert!(!asked.contains(&token), "{} {}: {token}", ep.id, p.id);
                }
                for answer in &p.answers {
                    assert!(
                        !question.contains(&answer.to_lowercase()),
                        "{} {}: {answer}",
                        ep.id,
                        p.id
                    );
                }
            }
        }
    }

    /// The cues an extractive summarizer keeps lines for (digits, paths, `_` identifiers, error words) are not
    /// what only the lines that hold a finding carry: whenever such a line has one, at least a tenth of the
    /// episode's other tool-output lines have it too.
    #[test]
    fn filler_carries_the_cues_that_evidence_lines_carry() {
        type Cue = fn(&str) -> bool;
        const ERRORS: [&str; 5] = ["error", "fail", "assert", "timeout", "exception"];
        let cues: [(&str, Cue); 4] = [
            ("digit", |l| l.chars().any(|c| c.is_ascii_digit())),
            ("path", |l| l.contains('/')),
            ("identifier", |l| {
                l.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|w| w.trim_matches('_').contains('_'))
            }),
            ("error word", |l| {
                let l = l.to_lowercase();
                ERRORS.iter().any(|e| l.contains(e))
            }),
        ];
        for ep in generate(42) {
            let evidence: Vec<String> = ep
                .findings
                .iter()
                .flat_map(|f| f.evidence.iter().map(|e| e.to_lowercase()))
                .collect();
            let (mut holding, mut filler) = (Vec::new(), Vec::new());
            for item in ep.items.iter().filter(|i| i.is_tool_output()) {
                for line in item.text().lines() {
                    let lower = line.to_lowercase();
                    if evidence.iter().any(|e| lower.contains(e.as_str())) {
                        holding.push(line);
                    } else {
                        filler.push(line);
                    }
                }
            }
            for (name, cue) in cues {
                if holding.iter().any(|l| cue(l)) {
                    let share = filler.iter().filter(|l| cue(l)).count() * 10;
                    assert!(share >= filler.len(), "{}: {name}", ep.id);
                }
            }
        }
    }
}
