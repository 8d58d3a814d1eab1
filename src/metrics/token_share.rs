//! Where the tokens go: tokens sent by item kind.

use super::slot;
use super::{Agg, EpisodeView, Field, Metric, Slot, StepView, Unit, Values};
use crate::history::ItemKind;
use crate::replay::TokensByKind;

/// Tokens sent per item kind, and each kind's share of all tokens sent.
pub struct TokenShare;

impl Metric for TokenShare {
    fn step_slots(&self) -> Vec<Slot> {
        ItemKind::ALL
            .iter()
            .map(|k| {
                Slot::column(
                    (slot::TOKENS, k.as_str()),
                    Unit::Tokens,
                    format!("Tokens sent in {} items.", k.as_str()),
                )
            })
            .collect()
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Values<'_>) {
        for (k, n) in v.step.tokens_by_kind.iter() {
            out.put((slot::TOKENS, k.as_str()), n);
        }
    }

    /// Tokens by kind summed over the steps, then all of them together (none is a column).
    fn episode_slots(&self) -> Vec<Slot> {
        let mut slots: Vec<Slot> = ItemKind::ALL
            .map(|k| Slot::kept((slot::TOKENS, k.as_str())))
            .into();
        slots.push(Slot::kept(slot::TOKENS));
        slots
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let mut sum = TokensByKind::default();
        for s in &v.replay.steps {
            sum.add_all(&s.tokens_by_kind);
        }
        for (k, n) in sum.iter() {
            out.put((slot::TOKENS, k.as_str()), n);
        }
        out.put(slot::TOKENS, sum.total());
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![Field::new(
            "token_share",
            Unit::Share,
            "Share of all tokens sent, by item kind (instructions count as summaries).",
            Agg::keyed(ItemKind::ALL.map(|k| {
                let k = k.as_str();
                (k, Agg::share((slot::TOKENS, k), slot::TOKENS))
            })),
        )]
    }
}
