//! Probes: questions asked of the request as sent, at the first call point after the item each one names,
//! graded by their accepted answers and, for an open probe (one with a reference answer), by the judge.
//!
//! The replay does not wait for a probe's answer: nothing of the next call point depends on it. Each question
//! is started ([`Recorder::start`]) with the request as sent; the judge's grading of an open probe is started
//! as soon as its answer has come (checked at every call point, and when the episode ends), in the place kept
//! for it right after its question in the record; the answers are read when the episode's replays end
//! ([`Probes::settle`]). With a model that answers at once (the mock), every call is made where the question
//! is asked, in the same order as [`ask`] makes them.

use super::calls::{Call, Purpose, Recorder, Ticket};
use super::record::ProbeRecord;
use crate::history::{normalize, Item, Probe, Role};
use crate::llm::{judge, Llm, LlmRequest};

/// An episode's probes in the order they are due, and those asked so far.
pub(super) struct Probes<'e> {
    due: Vec<&'e Probe>,
    next: usize,
    asked: Vec<Asked<'e>>,
}

/// A probe asked: its call, and for an open probe the judge's (kept, then started once the answer came).
struct Asked<'e> {
    probe: &'e Probe,
    step: Option<usize>,
    answer: Ticket,
    /// The judge's place, and whether its call was started.
    grade: Option<(Ticket, bool)>,
}

impl<'e> Probes<'e> {
    pub(super) fn new(probes: &'e [Probe]) -> Self {
        let mut due: Vec<&Probe> = probes.iter().collect();
        due.sort_by_key(|p| p.after_item);
        Self {
            due,
            next: 0,
            asked: Vec::new(),
        }
    }

    /// Asks, of `live` as sent at call point `step` (before episode item `at`; `None`: after the last one),
    /// every probe due by then, and starts the judge's grading of every answer that came since.
    pub(super) fn ask_due(
        &mut self,
        at: usize,
        step: Option<usize>,
        live: &mut LlmRequest,
        recorder: &Recorder<'_>,
    ) {
        while let Some(&probe) = self.due.get(self.next).filter(|p| p.after_item < at) {
            // The question goes on the live request for the call and comes off again: no copy of the history.
            live.contents
                .push(Item::message(Role::User, probe.question.clone()));
            let call = Call {
                purpose: Purpose::Probe,
                step,
            };
            let answer = recorder.start(call, live, None);
            live.contents.pop();
            let grade = probe.reference.as_ref().map(|_| (recorder.keep(), false));
            self.asked.push(Asked {
                probe,
                step,
                answer,
                grade,
            });
            self.next += 1;
            self.grade(self.asked.len() - 1, recorder, false);
        }
        recorder.poll();
        for i in 0..self.asked.len() {
            self.grade(i, recorder, false);
        }
    }

    /// Asks every probe not asked yet of `live` (the request as last sent, with the last turn appended).
    pub(super) fn finish(&mut self, live: &mut LlmRequest, recorder: &Recorder<'_>) {
        self.ask_due(usize::MAX, None, live, recorder);
    }

    /// Starts the judge's grading of probe `i`'s answer once it has come (waiting for it when `wait`); a failed
    /// question is not graded (the episode fails with it).
    fn grade(&mut self, i: usize, recorder: &Recorder<'_>, wait: bool) {
        let asked = &mut self.asked[i];
        let (Some((place, false)), Some(reference)) = (asked.grade, &asked.probe.reference) else {
            return;
        };
        let Some(Ok(answer)) = recorder.answer(asked.answer, wait) else {
            return;
        };
        let call = Call {
            purpose: Purpose::Judge,
            step: asked.step,
        };
        let request = judge::request(&asked.probe.question, reference, &answer);
        recorder.start(call, &request, Some(place));
        asked.grade = Some((place, true));
    }

    /// Every probe's record, once its answer (and the judge's grades) came.
    pub(super) fn settle(mut self, recorder: &Recorder<'_>) -> Vec<ProbeRecord> {
        for i in 0..self.asked.len() {
            self.grade(i, recorder, true);
        }
        self.asked
            .iter()
            .map(|asked| {
                let answer = match recorder.answer(asked.answer, true) {
                    Some(Ok(text)) => text,
                    Some(Err(e)) => format!("(probe call failed: {e})"),
                    // A started call is answered once waited for.
                    None => String::new(),
                };
                let grades =
                    asked
                        .grade
                        .and_then(|(place, _)| match recorder.answer(place, true) {
                            Some(Ok(text)) => judge::parse(&text),
                            _ => None,
                        });
                ProbeRecord {
                    probe: asked.probe.id.clone(),
                    step: asked.step,
                    kind: asked.probe.kind,
                    correct: accepts(asked.probe, &answer),
                    answer,
                    judged: asked.probe.reference.is_some(),
                    grades,
                }
            })
            .collect()
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
