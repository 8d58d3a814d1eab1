//! Probes: questions asked of the request as sent, at the first call point after the item each one names,
//! graded by their accepted answers and, for an open probe (one with a reference answer), by the judge.

use super::record::ProbeRecord;
use crate::history::{normalize, Item, Probe, Role};
use crate::llm::{judge, Llm, LlmRequest};

/// An episode's probes in the order they are due, and how many were asked.
pub(super) struct Probes<'e> {
    due: Vec<&'e Probe>,
    next: usize,
    records: Vec<ProbeRecord>,
}

impl<'e> Probes<'e> {
    pub(super) fn new(probes: &'e [Probe]) -> Self {
        let mut due: Vec<&Probe> = probes.iter().collect();
        due.sort_by_key(|p| p.after_item);
        Self {
            due,
            next: 0,
            records: Vec::new(),
        }
    }

    /// Asks, of `live` as sent at call point `step` (before episode item `at`), every probe due by then.
    pub(super) fn ask_due(
        &mut self,
        at: usize,
        step: usize,
        live: &mut LlmRequest,
        (llm, judge): (&dyn Llm, &dyn Llm),
    ) {
        while let Some(probe) = self.due.get(self.next).filter(|p| p.after_item < at) {
            self.records
                .push(ask((llm, judge), live, probe, Some(step)));
            self.next += 1;
        }
    }

    /// Asks every probe not asked yet of `live` (the request as last sent, with the last turn appended), and
    /// returns every answer.
    pub(super) fn finish(
        mut self,
        live: &mut LlmRequest,
        (llm, judge): (&dyn Llm, &dyn Llm),
    ) -> Vec<ProbeRecord> {
        for probe in &self.due[self.next..] {
            self.records.push(ask((llm, judge), live, probe, None));
        }
        self.records
    }
}

/// Asks one probe against the live request, and has the judge grade the answer of an open one. A failed call
/// is recorded by the replay's [`super::calls::Recorder`], which fails the episode: the answer here is never
/// graded as if it were the model's.
pub(super) fn ask(
    (llm, judge): (&dyn Llm, &dyn Llm),
    live: &mut LlmRequest,
    probe: &Probe,
    step: Option<usize>,
) -> ProbeRecord {
    // The question goes on the live request for the call and comes off again: no copy of the history.
    live.contents
        .push(Item::message(Role::User, probe.question.clone()));
    let answer = match llm.generate(live) {
        Ok(response) => response.text,
        Err(e) => format!("(probe call failed: {e})"),
    };
    live.contents.pop();
    let grades = match &probe.reference {
        Some(reference) => judge
            .generate(&judge::request(&probe.question, reference, &answer))
            .ok()
            .and_then(|r| judge::parse(&r.text)),
        None => None,
    };
    ProbeRecord {
        probe: probe.id.clone(),
        step,
        kind: probe.kind,
        correct: accepts(probe, &answer),
        answer,
        judged: probe.reference.is_some(),
        grades,
    }
}

/// Whether `answer` contains one of the probe's accepted answers (case-insensitive, white space folded).
#[must_use]
pub fn accepts(probe: &Probe, answer: &str) -> bool {
    let got = normalize(answer);
    probe
        .answers
        .iter()
        .map(|a| normalize(a))
        .any(|a| !a.is_empty() && got.contains(&a))
}
