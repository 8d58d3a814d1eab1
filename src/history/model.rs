//! The model the agent called at each call point, as its trace names it: an episode's [`Episode::model`] (the
//! model of most of its call points) and, where a session changed model (aider's `/model`, a smaller model
//! Claude Code calls for a side task), the [`ModelSwitch`]es from which another one answered.
//!
//! Importers give the model of each call point ([`Episode::set_models`]), or mark where each model's turns
//! begin as they build the conversation ([`Episode::set_model_marks`]); the run prices and windows every call
//! point by [`Episode::model_at`]. An episode without a model (the bundled dataset, a trace that names none) is
//! run as the configuration's agent model.

use serde::{Deserialize, Serialize};

use super::Episode;

/// From call point `call_point` on (counted from 0 among the episode's call points), the agent called `model`,
/// until the next switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSwitch {
    /// The first call point the model answered.
    pub call_point: usize,
    /// The model, as the trace names it (`claude-3-haiku-20240307`, `openrouter/anthropic/claude-3.5-sonnet`).
    pub model: String,
}

impl Episode {
    /// The model of call point `k`: the last switch at or before it, else the episode's model; `None` when the
    /// trace names none.
    #[must_use]
    pub fn model_at(&self, k: usize) -> Option<&str> {
        self.model_switches
            .iter()
            .rev()
            .find(|s| s.call_point <= k)
            .map(|s| s.model.as_str())
            .or(self.model.as_deref())
    }

    /// Every model the episode's call points used, each with how many call points it answered, in order of
    /// first use; the episode's model alone (with its call points) when nothing switched.
    #[must_use]
    pub fn models(&self) -> Vec<(&str, usize)> {
        let points = self.call_points().len();
        let mut out: Vec<(&str, usize)> = Vec::new();
        for k in 0..points {
            let Some(m) = self.model_at(k) else { continue };
            match out.iter_mut().find(|(n, _)| *n == m) {
                Some((_, count)) => *count += 1,
                None => out.push((m, 1)),
            }
        }
        if out.is_empty() {
            out.extend(self.model.as_deref().map(|m| (m, 0)));
        }
        out
    }

    /// Records the model of each call point: `calls[k]` the model the trace names for call point `k` (`None`:
    /// it names none there, and the one before answered; before any, `declared`), `declared` the model the
    /// trace names for the whole run (a configuration, a header). The episode's model is the one most call
    /// points used (the first of those on a tie); the others are switches. Nothing named leaves the episode
    /// without a model.
    pub fn set_models(&mut self, declared: Option<&str>, calls: &[Option<String>]) {
        let declared = declared.filter(|m| !m.trim().is_empty());
        let first_named = calls.iter().flatten().find(|m| !m.trim().is_empty());
        let mut current = declared.or(first_named.map(String::as_str));
        let mut per_call: Vec<Option<&str>> = Vec::with_capacity(calls.len());
        for c in calls {
            if let Some(m) = c.as_deref().filter(|m| !m.trim().is_empty()) {
                current = Some(m);
            }
            per_call.push(current);
        }
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for m in per_call.iter().flatten() {
            match counts.iter_mut().find(|(n, _)| n == m) {
                Some((_, c)) => *c += 1,
                None => counts.push((m, 1)),
            }
        }
        // The most used, the first of them on a tie (max_by_key would keep the last).
        let main = counts
            .iter()
            .fold(None::<(&str, usize)>, |best, &(m, c)| match best {
                Some((_, b)) if b >= c => best,
                _ => Some((m, c)),
            })
            .map(|(m, _)| m)
            .or(current);
        let mut switches = Vec::new();
        let mut in_force = main;
        for (k, m) in per_call.iter().enumerate() {
            if m.is_some() && *m != in_force {
                switches.push(ModelSwitch {
                    call_point: k,
                    model: m.unwrap_or_default().to_owned(),
                });
                in_force = *m;
            }
        }
        self.model = main.map(str::to_owned);
        self.model_switches = switches;
    }

    /// Records the models of the call points from `marks`: (item index, model), each saying that the turns
    /// from that item on were the model's, in item order. A call point takes the last mark at or before its
    /// item; one before every mark takes `declared`. Set `stopped` first: it decides the last call point.
    pub fn set_model_marks(&mut self, declared: Option<&str>, marks: &[(usize, String)]) {
        let calls: Vec<Option<String>> = self
            .call_points()
            .iter()
            .map(|&at| {
                marks
                    .iter()
                    .rev()
                    .find(|(from, _)| *from <= at)
                    .map(|(_, m)| m.clone())
            })
            .collect();
        self.set_models(declared, &calls);
    }
}

/// What is wrong with an episode's models, as (field, message): a blank name, switches out of call-point order
/// or past the last call point, switches without the episode's model.
#[must_use]
pub fn problems(ep: &Episode) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if ep.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
        out.push((
            "model".to_owned(),
            "the model is blank: name it as the trace does, or leave the field out".to_owned(),
        ));
    }
    if ep.model_switches.is_empty() {
        return out;
    }
    if ep.model.is_none() {
        out.push((
            "model_switches".to_owned(),
            "switches of model without the episode's `model` (the model of the other call points)"
                .to_owned(),
        ));
    }
    let points = ep.call_points().len();
    let mut after = None;
    for (i, s) in ep.model_switches.iter().enumerate() {
        let field = format!("model_switches[{i}]");
        if s.model.trim().is_empty() {
            out.push((format!("{field}.model"), "the model is blank".to_owned()));
        }
        if after.is_some_and(|a| s.call_point <= a) {
            out.push((
                format!("{field}.call_point"),
                format!(
                    "call point {} does not come after the switch before it: switches are in call-point order",
                    s.call_point
                ),
            ));
        } else if s.call_point >= points {
            out.push((
                format!("{field}.call_point"),
                format!(
                    "call point {} is out of range: the episode has {points} call point(s), counted from 0",
                    s.call_point
                ),
            ));
        }
        after = Some(s.call_point);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Item;

    /// Three call points (before each assistant turn), the session stopped after the last.
    fn three_calls() -> Episode {
        Episode {
            items: vec![
                Item::user("a"),
                Item::assistant("1"),
                Item::user("b"),
                Item::assistant("2"),
                Item::user("c"),
                Item::assistant("3"),
            ],
            stopped: true,
            ..Episode::default()
        }
    }

    #[test]
    fn the_most_used_model_is_the_episodes_and_the_others_switch() {
        let mut ep = three_calls();
        let some = |m: &str| Some(m.to_owned());
        ep.set_models(None, &[some("haiku"), some("opus"), some("opus")]);
        assert_eq!(ep.model.as_deref(), Some("opus"));
        assert_eq!(
            ep.model_switches,
            [
                ModelSwitch {
                    call_point: 0,
                    model: "haiku".into()
                },
                ModelSwitch {
                    call_point: 1,
                    model: "opus".into()
                }
            ]
        );
        assert_eq!(
            (0..3).map(|k| ep.model_at(k)).collect::<Vec<_>>(),
            [Some("haiku"), Some("opus"), Some("opus")]
        );
        assert_eq!(ep.models(), [("haiku", 1), ("opus", 2)]);
        // A tie goes to the first; a call that names none keeps the one before; the declared model answers
        // the calls before any named one.
        ep.set_models(Some("a"), &[None, some("b"), None]);
        assert_eq!(ep.model.as_deref(), Some("b"));
        assert_eq!(
            (0..3).map(|k| ep.model_at(k)).collect::<Vec<_>>(),
            [Some("a"), Some("b"), Some("b")]
        );
        ep.set_models(None, &[some("x"), some("y")]);
        assert_eq!(ep.model.as_deref(), Some("x"));
        assert_eq!(ep.model_switches.len(), 1);
        // One model throughout: no switch.
        ep.set_models(Some("opus"), &[None, some("opus"), None]);
        assert_eq!(
            (ep.model.as_deref(), ep.model_switches.len()),
            (Some("opus"), 0)
        );
        // Nothing named: no model; a declared one alone is the episode's.
        ep.set_models(None, &[None, None, None]);
        assert_eq!((ep.model.as_deref(), ep.models()), (None, vec![]));
        ep.set_models(Some(" "), &[]);
        assert_eq!(ep.model, None);
        ep.set_models(Some("gpt-4o"), &[]);
        assert_eq!(ep.model_at(7), Some("gpt-4o"));
    }

    #[test]
    fn marks_give_each_call_point_the_model_of_its_turn() {
        let mut ep = three_calls();
        // The model switched before the second reply (item 3); the first call took the declared model.
        ep.set_model_marks(Some("sonnet"), &[(2, "gpt-4o".into())]);
        assert_eq!(
            (0..3).map(|k| ep.model_at(k)).collect::<Vec<_>>(),
            [Some("sonnet"), Some("gpt-4o"), Some("gpt-4o")]
        );
        assert_eq!(ep.model.as_deref(), Some("gpt-4o"));
        // Without `stopped`, the end is a call point of the last model too.
        ep.items.push(Item::user("d"));
        ep.stopped = false;
        ep.set_model_marks(None, &[(0, "a".into()), (4, "b".into())]);
        assert_eq!(ep.models(), [("a", 2), ("b", 2)]);
    }

    #[test]
    fn problems_name_the_field() {
        let mut ep = three_calls();
        assert!(problems(&ep).is_empty());
        ep.model = Some(" ".into());
        ep.model_switches = vec![
            ModelSwitch {
                call_point: 2,
                model: "b".into(),
            },
            ModelSwitch {
                call_point: 2,
                model: String::new(),
            },
            ModelSwitch {
                call_point: 3,
                model: "c".into(),
            },
        ];
        let fields: Vec<String> = problems(&ep).into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            fields,
            [
                "model",
                "model_switches[1].model",
                "model_switches[1].call_point",
                "model_switches[2].call_point"
            ]
        );
        ep.model = None;
        ep.model_switches.truncate(1);
        assert_eq!(problems(&ep)[0].0, "model_switches");
    }
}
