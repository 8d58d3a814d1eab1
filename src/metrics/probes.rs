//! Probes: the share of questions answered right from the request as sent.

use serde_json::Value;

use super::{maybe, ratio, Agg, Column, EpisodeView, Field, Metric, Unit};

/// Probe accuracy per episode and over the dataset.
pub struct Probes;

impl Metric for Probes {
    fn episode_columns(&self) -> Vec<Column> {
        vec![
            Column::new("probes", Unit::Count, "Probes asked."),
            Column::new(
                "probes_correct",
                Unit::Count,
                "Probes answered with an accepted answer.",
            ),
            Column::new("probe_accuracy", Unit::Share, "probes_correct / probes."),
        ]
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Vec<Value>) {
        let probes = v.replay.probes.len();
        let correct = v.replay.probes.iter().filter(|p| p.correct).count();
        out.extend([
            Value::from(probes),
            Value::from(correct),
            maybe(ratio(correct, probes)),
        ]);
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new("probes", Unit::Count, "Probes asked.", Agg::Sum(0)),
            Field::new(
                "probe_accuracy",
                Unit::Share,
                "Share of probes answered with an accepted answer, pooled.",
                Agg::Ratio(1, 0),
            ),
        ]
    }
}
