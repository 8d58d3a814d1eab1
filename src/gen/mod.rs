//! The seeded generator of the bundled default dataset (`ctxbench gen`).
//!
//! Three scenario families that look like real agent work: a coding agent debugging a failing test
//! ([`coding`]), a research agent reading search results and long pages ([`research`]), and a support agent
//! doing database lookups in a dialogue with a customer ([`support`]). Every episode carries annotated
//! findings of the four kinds, with evidence strings that occur in tool results (sometimes deep inside long
//! outputs) or in the agent's own decisions, and probes that ask for them.
//!
//! The same seed gives byte-identical output on every machine and every version of the dependencies: the
//! generator uses its own SplitMix64 ([`Rng`]) rather than `rand`, whose value streams may change between
//! releases.

pub mod coding;
pub mod research;
pub mod support;

use crate::history::{Episode, Finding, FindingKind, Item, Probe};

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

/// Builds one episode item by item, numbering tool calls, findings and probes.
#[derive(Debug)]
pub struct Builder {
    episode: Episode,
    calls: usize,
    /// Probes to ask at the very end, filled in by [`Builder::finish`].
    end_probes: Vec<Probe>,
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
                ..Episode::default()
            },
            calls: 0,
            end_probes: Vec::new(),
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

    /// Records a finding introduced at item `at`, with one probe asked right after it and one at the end;
    /// returns the finding's index, for [`Builder::need`].
    #[allow(clippy::too_many_arguments)]
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
            id: id.clone(),
            text,
            evidence,
            introduced_at: at,
            kind,
            ..Finding::default()
        });
        let reference = self.episode.findings.last().map(|f| f.text.clone());
        let probe = |pid: String, after_item: usize, reference: Option<String>| Probe {
            id: pid,
            after_item,
            question: question.clone(),
            answers: vec![answer.clone()],
            finding: Some(id.clone()),
            kind,
            reference,
        };
        // The probe right after the finding has an exact answer; the one at the end is graded by the judge
        // against the finding as well, so the two gradings can be compared.
        self.episode.probes.push(probe(
            format!("p{}a", self.episode.findings.len()),
            at,
            None,
        ));
        self.end_probes.push(probe(
            format!("p{}z", self.episode.findings.len()),
            0,
            reference,
        ));
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

    /// Records an open probe of `kind` about finding `f`, asked after the last item and graded by the judge
    /// against `reference` (the questions an agent must answer to carry on: what was decided and why, which
    /// files changed and how, what still fails, what a recalled fact was).
    pub fn open_probe(&mut self, f: usize, kind: FindingKind, question: String, reference: String) {
        let n = self.end_probes.len() + 1;
        self.end_probes.push(Probe {
            id: format!("o{n}"),
            after_item: 0,
            question,
            answers: Vec::new(),
            finding: Some(self.episode.findings[f].id.clone()),
            kind,
            reference: Some(reference),
        });
    }

    /// The finished episode: end probes are asked after the last item.
    #[must_use]
    pub fn finish(mut self) -> Episode {
        let last = self.episode.items.len() - 1;
        for mut p in self.end_probes {
            p.after_item = last;
            self.episode.probes.push(p);
        }
        self.episode
    }
}

/// Builds an English-looking sentence from small vocabularies.
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
    format!(
        "{} {} {}{}.",
        rng.pick(&SUBJECTS),
        rng.pick(&VERBS),
        rng.pick(&OBJECTS),
        rng.pick(&TAILS)
    )
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
}
