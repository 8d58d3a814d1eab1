//! Episodes a preset's framework would have failed: where the library a preset reproduces raises (Inspect AI's
//! "Compaction insufficient", which `react()` does not catch), the agent's run ends there
//! ([`crate::replay::StepRecord::failure`]). The replay goes on sending what the preset left, so that every
//! strategy's figures cover the same call points; the episode is counted here, shown in the explorer at the
//! call point where it failed, and such a strategy is never recommended (`report::recommend`).

use super::slot;
use super::{Agg, EpisodeView, Field, Metric, Slot, Unit, Values};

/// Whether, and at which call point, the episode failed in the preset's framework.
pub struct Failed;

impl Metric for Failed {
    fn episode_slots(&self) -> Vec<Slot> {
        vec![
            Slot::column(
                slot::FRAMEWORK_FAILED,
                Unit::Flag,
                "Whether the framework the strategy reproduces fails the episode (it raises where it cannot \
                 bring a request under its threshold).",
            ),
            Slot::column(
                slot::FAILED_AT_STEP,
                Unit::Count,
                "The call point where it fails (zero-based); empty when it does not.",
            ),
        ]
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let at = v
            .replay
            .steps
            .iter()
            .find(|s| s.failure.is_some())
            .map(|s| s.step);
        out.put(slot::FRAMEWORK_FAILED, at.is_some())
            .put(slot::FAILED_AT_STEP, at);
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![Field::new(
            "episodes_failed",
            Unit::Count,
            "Episodes the framework the strategy reproduces fails (raises); such a strategy is never recommended.",
            Agg::sum(slot::FRAMEWORK_FAILED),
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Episode;
    use crate::metrics::slots::episode_values;
    use crate::metrics::{Context, Prices};
    use crate::replay::{EpisodeReplay, StepRecord};

    /// Three call points, the second where the framework raises (and the third, which it never reaches, too):
    /// failed, at step 1. None failing: not failed, no step.
    #[test]
    fn the_first_call_point_where_the_framework_raises_is_where_the_episode_fails() {
        let episode = Episode::default();
        let context = Context {
            prices: Prices::default(),
            context_window: 8000,
        };
        for (failures, failed, at) in [
            (vec![false, true, true], true, Some(1)),
            (vec![false, false, false], false, None),
        ] {
            let r = EpisodeReplay {
                episode: "e".into(),
                source: "s".into(),
                strategy: "inspect_compaction_trim".into(),
                items: 0,
                steps: failures
                    .iter()
                    .enumerate()
                    .map(|(step, &f)| StepRecord {
                        step,
                        failure: f.then(|| "Compaction insufficient".to_owned()),
                        ..StepRecord::default()
                    })
                    .collect(),
                probes: Vec::new(),
                calls: Vec::new(),
            };
            let v = EpisodeView {
                episode: &episode,
                replay: &r,
                baseline: &r,
                context: &context,
                ledger: None,
            };
            let values = episode_values(&Failed, &v);
            assert_eq!(values[0], serde_json::json!(failed));
            assert_eq!(values[1].as_u64(), at, "{failures:?}");
        }
    }
}
