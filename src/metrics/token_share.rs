//! Where the tokens go: tokens sent by item kind.

use serde_json::Value;

use super::{Agg, Column, EpisodeView, Field, Metric, StepView, Unit};
use crate::history::ItemKind;
use crate::replay::TokensByKind;

/// Tokens sent per item kind, and each kind's share of all tokens sent.
pub struct TokenShare;

impl Metric for TokenShare {
    fn step_columns(&self) -> Vec<Column> {
        ItemKind::ALL
            .iter()
            .map(|k| {
                Column::new(
                    format!("tokens_{}", k.as_str()),
                    Unit::Tokens,
                    format!("Tokens sent in {} items.", k.as_str()),
                )
            })
            .collect()
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Vec<Value>) {
        out.extend(v.step.tokens_by_kind.iter().map(|(_, n)| Value::from(n)));
    }

    fn episode_columns(&self) -> Vec<Column> {
        Vec::new()
    }

    /// Tokens by kind summed over the steps, then all of them together (none is a column).
    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Vec<Value>) {
        let mut sum = TokensByKind::default();
        for s in &v.replay.steps {
            sum.add_all(&s.tokens_by_kind);
        }
        out.extend(sum.iter().map(|(_, n)| Value::from(n)));
        out.push(Value::from(sum.total()));
    }

    fn strategy_fields(&self) -> Vec<Field> {
        let all = ItemKind::ALL.len();
        vec![Field::new(
            "token_share",
            Unit::Share,
            "Share of all tokens sent, by item kind (instructions count as summaries).",
            Agg::Keyed(
                ItemKind::ALL
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (k.as_str().to_owned(), Agg::Share(i, all)))
                    .collect(),
            ),
        )]
    }
}
