//! Which findings' evidence a request holds: an index of an episode's evidence strings, searched once per
//! distinct text and cached by the text's content hash.
//!
//! A finding is *present* in a request when some text of the request (an instruction, or an item's searchable
//! text) holds each of its evidence strings, by the rule of [`crate::history::evidence`]: the string itself,
//! compared case-insensitively with white space folded ([`normalize`]), or, inside a model-written summary, its
//! identifying tokens.

use std::borrow::Cow;
use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use super::record::FindingSet;
use crate::history::evidence::Needle;
use crate::history::{normalize, Episode};

/// Per-episode index of evidence strings, with a per-item cache of which evidence each item contains.
pub struct Evidence {
    needles: Vec<String>,
    /// The needles with their identifying tokens, for summaries.
    keyed: Vec<Needle>,
    /// All needles at once, leftmost-longest (so that the automaton's fast prefilter applies), searched again
    /// from just after each match's start: with `contained`, it finds every needle that occurs. A contiguous
    /// NFA, not a DFA: it searches only the texts `pieces` lets through, so on the bundled dataset it halves
    /// this constructor's instructions for 3% more in the search.
    matcher: Option<aho_corasick::AhoCorasick>,
    /// For each needle, the needles it contains (itself included), as bits: a needle hidden inside a longer
    /// one that matched at the same place counts too.
    contained: Vec<Vec<u64>>,
    /// The longest space-free piece of each needle (lower case, as needles are), when every needle is ASCII: an
    /// ASCII text whose lower-cased bytes hold none of them holds no needle (normalizing only lower-cases and
    /// folds white space), so it is not normalized. Most texts hold no evidence. Each piece is looked for on
    /// its own with a vectorized substring search (an episode has a few): over the bundled dataset's texts
    /// that is faster than one ASCII case-insensitive automaton, which has no vectorized prefilter.
    pieces: Option<Vec<memchr::memmem::Finder<'static>>>,
    /// The same for texts a model wrote, with each needle's longest identifying token as well.
    written_pieces: Option<Vec<memchr::memmem::Finder<'static>>>,
    /// Scratch space: the lower-cased text.
    lowered: Vec<u8>,
    /// For each finding: its needle indices.
    findings: Vec<Vec<usize>>,
    /// 64-bit words of a needle bit set.
    pub(super) words: usize,
    cache: HashMap<u128, Vec<u64>, FxBuildHasher>,
}

impl Evidence {
    /// The index of `episode`'s evidence strings.
    #[must_use]
    pub fn new(episode: &Episode) -> Self {
        // Needles are told apart by their text and identifying tokens (which the evidence's capitals decide).
        let mut keyed: Vec<Needle> = Vec::new();
        let mut index: HashMap<Needle, usize> = HashMap::new();
        let findings = episode
            .findings
            .iter()
            .map(|f| {
                let ids = f
                    .evidence
                    .iter()
                    .map(|e| {
                        let n = Needle::new(e);
                        *index.entry(n.clone()).or_insert_with(|| {
                            keyed.push(n);
                            keyed.len() - 1
                        })
                    })
                    .collect();
                ids
            })
            .collect();
        let needles: Vec<String> = keyed.iter().map(|n| n.text.clone()).collect();
        let words = needles.len().div_ceil(64);
        let contained = needles
            .iter()
            .map(|outer| {
                let mut bits = vec![0u64; words];
                for (j, inner) in needles.iter().enumerate() {
                    if outer.contains(inner.as_str()) {
                        set_bit(&mut bits, j);
                    }
                }
                bits
            })
            .collect();
        // Built from a few short strings: neither automaton can exceed its limits.
        let matcher = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(&needles)
            .ok();
        let longest = |s: &'_ str| -> Option<String> {
            s.split(' ')
                .filter(|p| !p.is_empty())
                .max_by_key(|p| p.len())
                .filter(|p| p.is_ascii())
                .map(str::to_owned)
        };
        let finders = |mut pieces: Vec<String>| -> Vec<memchr::memmem::Finder<'static>> {
            pieces.sort_unstable();
            pieces.dedup();
            pieces
                .into_iter()
                .map(|p| memchr::memmem::Finder::new(p.as_bytes()).into_owned())
                .collect()
        };
        let exact: Option<Vec<String>> = needles.iter().map(|n| longest(n)).collect();
        // A text a model wrote may hold a needle by its identifying tokens instead: its longest key too.
        let written_pieces = exact.clone().and_then(|mut all| {
            for n in &keyed {
                if let Some(k) = n.keys.iter().max_by_key(|k| k.len()) {
                    all.push(longest(k)?);
                }
            }
            Some(finders(all))
        });
        let pieces = exact.map(finders);
        Self {
            needles,
            keyed,
            matcher,
            contained,
            pieces,
            written_pieces,
            lowered: Vec::new(),
            findings,
            words,
            cache: HashMap::default(),
        }
    }

    /// ORs into `acc` (a needle bit set) the evidence that `text` (keyed by its content hash `key`, which
    /// tells apart texts a model wrote: `written`) contains.
    pub fn add<'t>(
        &mut self,
        key: u128,
        written: bool,
        text: impl FnOnce() -> Cow<'t, str>,
        acc: &mut [u64],
    ) {
        if self.needles.is_empty() {
            return;
        }
        let Self {
            needles,
            keyed,
            matcher,
            contained,
            pieces,
            written_pieces,
            lowered,
            words,
            cache,
            ..
        } = self;
        let bits = cache.entry(key).or_insert_with(|| {
            let mut bits = vec![0u64; *words];
            let raw = text();
            let pieces = if written { written_pieces } else { pieces };
            if let Some(pieces) = pieces {
                if raw.is_ascii() {
                    lowered.clear();
                    lowered.extend_from_slice(raw.as_bytes());
                    lowered.make_ascii_lowercase();
                    if !pieces.iter().any(|p| p.find(lowered).is_some()) {
                        return bits;
                    }
                }
            }
            let hay = normalize(&raw);
            match matcher {
                Some(m) => {
                    let mut at = 0;
                    // (`at` passes the end only after an empty needle matched there.)
                    while let Some(found) = (at <= hay.len())
                        .then(|| m.find(aho_corasick::Input::new(&hay).span(at..hay.len())))
                        .flatten()
                    {
                        for (b, c) in bits.iter_mut().zip(&contained[found.pattern().as_usize()]) {
                            *b |= c;
                        }
                        at = found.start() + 1;
                    }
                }
                None => {
                    for (i, n) in needles.iter().enumerate() {
                        if hay.contains(n.as_str()) {
                            set_bit(&mut bits, i);
                        }
                    }
                }
            }
            if written {
                for (i, n) in keyed.iter().enumerate() {
                    if !has_bit(&bits, i) && n.in_text(&hay, true) {
                        set_bit(&mut bits, i);
                    }
                }
            }
            bits
        });
        for (a, b) in acc.iter_mut().zip(bits.iter()) {
            *a |= b;
        }
    }
}

impl Evidence {
    /// The findings whose every needle is in `acc` (a needle bit set).
    #[must_use]
    pub fn present(&self, acc: &[u64]) -> FindingSet {
        FindingSet::from_fn(self.findings.len(), |f| {
            self.findings[f].iter().all(|&n| has_bit(acc, n))
        })
    }
}

/// Sets bit `i` of a bit set held as 64-bit words.
fn set_bit(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

/// Whether bit `i` of a bit set held as 64-bit words is set.
pub(super) fn has_bit(bits: &[u64], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Finding, FindingKind};

    /// Which needles `text` (written by a model when `written`) holds, by the definition of
    /// [`crate::history::evidence::holds`].
    fn naive_evidence(needles: &[String], text: &str, written: bool) -> Vec<bool> {
        needles
            .iter()
            .map(|n| crate::history::evidence::holds(text, written, n))
            .collect()
    }

    fn found_evidence(needles: &[String], text: &str, written: bool) -> Vec<bool> {
        let mut ep = crate::replay::tests::episode();
        ep.findings = needles
            .iter()
            .enumerate()
            .map(|(i, n)| Finding {
                id: format!("f{i}"),
                text: n.clone(),
                evidence: vec![n.clone()],
                introduced_at: 0,
                kind: FindingKind::Recall,
                ..Finding::default()
            })
            .collect();
        let mut evidence = Evidence::new(&ep);
        let mut acc = vec![0u64; evidence.words];
        evidence.add(1, written, || text.into(), &mut acc);
        // Each finding's needle, by index (equal needles share one).
        evidence
            .findings
            .iter()
            .map(|ids| has_bit(&acc, ids[0]))
            .collect()
    }

    #[test]
    fn evidence_search_finds_nested_and_overlapping_needles() {
        // With a non-ASCII needle, every text is normalized; with ASCII needles only, a text without any
        // needle's longest piece is skipped.
        for needles in [
            vec![
                "4200",
                "42",
                "ab c",
                "c de",
                "Status:  OK",
                "café",
                "x y",
                "ki",
                // Blank: the validator refuses it, but a library caller may not validate.
                " ",
            ],
            vec!["4200", "42", "ab c", "c de", "Status:  OK", "x y", "ki"],
        ] {
            let needles: Vec<String> = needles.into_iter().map(String::from).collect();
            for text in [
                "total 4200 rows",
                "ab   c\nDE",
                "STATUS: ok; Café",
                "x\t\ty",
                "nothing here",
                // Lower-cased, a non-ASCII letter can become ASCII: the Kelvin sign, a dotted capital I.
                "\u{212A}ING",
                "KİND",
                "",
            ] {
                for written in [false, true] {
                    assert_eq!(
                        found_evidence(&needles, text, written),
                        naive_evidence(&needles, text, written),
                        "{needles:?} in {text:?} (written: {written})"
                    );
                }
            }
        }
    }

    /// A finding is present when every one of its evidence strings is, not one of them.
    #[test]
    fn a_finding_needs_all_its_evidence() {
        let mut ep = crate::replay::tests::episode();
        ep.findings = vec![Finding {
            id: "f".into(),
            text: "t".into(),
            evidence: vec!["ORD-1234".into(), "damaged_in_transit".into()],
            introduced_at: 0,
            kind: FindingKind::Recall,
            ..Finding::default()
        }];
        let mut evidence = Evidence::new(&ep);
        let mut acc = vec![0u64; evidence.words];
        evidence.add(1, false, || "ORD-1234 | delivered".into(), &mut acc);
        assert!(!evidence.present(&acc).contains(0));
        evidence.add(2, false, || "flag: damaged_in_transit".into(), &mut acc);
        assert!(evidence.present(&acc).contains(0));
    }

    proptest::proptest! {
        #[test]
        fn evidence_search_equals_the_definition(
            needles in proptest::collection::vec("[aAb c\n]{1,4}", 1..6),
            text in "[aAbB c\n\té]{0,40}",
        ) {
            let needles: Vec<String> =
                needles.into_iter().filter(|n| !normalize(n).is_empty()).collect();
            proptest::prop_assume!(!needles.is_empty());
            for written in [false, true] {
                proptest::prop_assert_eq!(
                    found_evidence(&needles, &text, written),
                    naive_evidence(&needles, &text, written)
                );
            }
        }
    }
}
