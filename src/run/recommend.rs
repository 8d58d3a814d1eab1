//! What to pick, decided: each strategy's standing under the run's rule, from its typed figures, and the
//! cheapest that qualifies. The report renders what this decides (`report::recommend`).
//!
//! The rule, in the order a strategy is judged (the first that applies is its reason):
//! 0. where the framework a preset reproduces raises (it cannot bring a request under its threshold), the
//!    agent's run ends: a strategy that fails so on some episode is out;
//! 1. a request over the window is a failure (a provider refuses it): a strategy that sends one is out;
//! 2. a budget below what it may not reduce (system prompt, tool schemas, task, unrecorded context) on some
//!    episode cannot work there: out;
//! 3. a strategy that changed no request saved nothing: out;
//! 4. it must save tokens and cost against no reduction (cost where both are priced): else out;
//! 5. where no found finding is needed anywhere, retention measured nothing: out, unless the user picks on
//!    savings alone (`--recommend-without-retention`);
//! 6. its evidence is where it acted, from each episode's first act on: at least `--min-episodes` episodes with
//!    a need met there and `--min-needs` needs (at least one of each, whatever the options say);
//! 7. its retention at need there must reach `--min-retention`.
//!
//! Among those that qualify the cheapest wins (by savings when a cost is unknown); the baseline (type `none`)
//! and what the agent itself sent (`as_recorded`) are never candidates.

use crate::metrics::figures::Figures;
use crate::report::analysis::{Rule, Shown};
use crate::report::recommend::{Next, Pick, Reason, Recommendation, Standing, Verdict};

/// A strategy one could pick, with what the analysis knows of it.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its figures.
    pub figures: &'a Figures,
    /// The run's episodes.
    pub episodes: u64,
    /// The interval its retention where it acted shows.
    pub interval: Shown,
}

/// Where the run is: its rule, the window, and the dataset a suggested command reads.
#[derive(Debug, Clone, Copy)]
pub struct Setting<'a> {
    /// The rule.
    pub rule: &'a Rule,
    /// The window, in tokens.
    pub window: u64,
    /// The dataset, as the run read it.
    pub dataset: &'a str,
    /// What no strategy may reduce, where it is over the window on some episode: the window is too small
    /// for these traces, and no setting of any strategy can bring their requests under it.
    pub too_small: Option<u64>,
}

/// The reason `c` stands where it does (see the module docs for the order).
#[must_use]
pub fn reason(c: &Candidate<'_>, at: &Setting<'_>) -> Reason {
    let f = c.figures;
    if f.episodes_failed > 0 {
        return Reason::FailsInFramework {
            episodes: f.episodes_failed,
            of: c.episodes,
        };
    }
    if f.steps_over_window > 0 {
        return Reason::OverWindow {
            requests: f.steps_over_window,
            window: at.window,
        };
    }
    if let (n, Some(budget), Some(floor)) =
        (f.episodes_below_floor, f.budget_tokens, f.floor_tokens)
    {
        if n > 0 {
            return Reason::BudgetBelowFloor {
                budget,
                floor,
                episodes: n,
            };
        }
    }
    if f.episodes_acted == 0 {
        return Reason::ActedNowhere;
    }
    // Where some episode is unpriced the run's whole cost is unknown: the priced episodes it acted on decide,
    // from its first act on, for every strategy alike.
    let (dearer, acted) = match (f.cost_usd, f.baseline_cost_usd) {
        (Some(c), Some(b)) => (c >= b, None),
        _ => {
            let dearer = f.cost_savings_acted_priced.filter(|s| *s <= 0.0);
            (dearer.is_some(), dearer)
        }
    };
    if dearer || f.input_tokens >= f.baseline_input_tokens {
        return Reason::Costlier {
            cost: f.cost_usd,
            baseline_cost: f.baseline_cost_usd,
            savings: f.savings,
            cost_savings_acted_priced: acted,
        };
    }
    if f.needs == 0 {
        return Reason::Unmeasured;
    }
    let rule = at.rule;
    if f.episodes_needed_acted < rule.min_episodes.max(1) {
        return Reason::TooFewEpisodes {
            episodes: f.episodes_needed_acted,
            min: rule.min_episodes.max(1),
        };
    }
    let Some(kept) = f
        .retention_at_need_acted
        .filter(|_| f.needs_acted >= rule.min_needs.max(1))
    else {
        return Reason::TooFewNeeds {
            needs: f.needs_acted,
            min: rule.min_needs.max(1),
        };
    };
    if kept >= rule.min_retention {
        Reason::Qualifies {
            kept,
            interval: c.interval,
            needs: f.needs_acted,
            episodes: f.episodes_needed_acted,
            cost: f.cost_usd,
        }
    } else {
        Reason::BelowTarget {
            kept,
            interval: c.interval,
            needs: f.needs_acted,
        }
    }
}

/// Whether `a` is cheaper than `b`: by cost where both are priced, then by savings; by savings alone
/// otherwise.
fn cheaper(a: &Figures, b: &Figures) -> std::cmp::Ordering {
    match (a.cost_usd, b.cost_usd) {
        (Some(x), Some(y)) => x.total_cmp(&y).then(b.savings.total_cmp(&a.savings)),
        _ => b.savings.total_cmp(&a.savings),
    }
}

/// The recommendation among `candidates` (in the run's order) under `at`.
#[must_use]
pub fn recommend(candidates: &[Candidate<'_>], at: &Setting<'_>) -> Recommendation {
    let reasons: Vec<Reason> = candidates.iter().map(|c| reason(c, at)).collect();
    let with = |wanted: Standing| {
        candidates
            .iter()
            .zip(&reasons)
            .filter(move |(_, r)| r.standing() == wanted)
            .map(|(c, _)| c)
    };
    let best = with(Standing::Qualifies).min_by(|a, b| cheaper(a.figures, b.figures));
    let alone = || {
        at.rule
            .without_retention
            .then(|| with(Standing::Unmeasured).min_by(|a, b| cheaper(a.figures, b.figures)))
            .flatten()
    };
    let pick = match best {
        Some(c) => Some(pick(c, false)),
        None => alone().map(|c| pick(c, true)),
    };
    let next = if pick.is_some() {
        Vec::new()
    } else {
        next(&reasons, at)
    };
    let verdicts = candidates
        .iter()
        .zip(reasons)
        .map(|(c, r)| Verdict::new(c.name, r, at.rule))
        .collect();
    Recommendation::new(pick, next, verdicts, at.rule)
}

/// The pick's figures.
fn pick(c: &Candidate<'_>, savings_alone: bool) -> Pick {
    let f = c.figures;
    Pick {
        strategy: c.name.to_owned(),
        savings_alone,
        kept: f.retention_at_need_acted,
        interval: c.interval,
        needs: f.needs_acted,
        episodes: f.episodes_needed_acted,
        acted: f.episodes_acted,
        of: c.episodes,
        kept_all: f.retention_at_need,
        first_all: f.retention_first_need,
        savings: f.savings,
        cost: f.cost_usd,
        cost_savings: f.cost_savings,
        calls: f.strategy_calls,
    }
}

/// What to try when nothing is picked, from the reasons the strategies fell short.
fn next(reasons: &[Reason], at: &Setting<'_>) -> Vec<Next> {
    let any = |s: &[Standing]| reasons.iter().any(|r| s.contains(&r.standing()));
    let mut out = Vec::new();
    if any(&[Standing::Unmeasured]) {
        out.push(Next::AddFindings);
    }
    if any(&[Standing::TooFewEpisodes, Standing::TooFewNeeds]) {
        out.push(Next::MoreEpisodes);
    }
    if any(&[Standing::BelowTarget]) {
        out.push(Next::LowerTarget);
    }
    if let Some(floor) = at.too_small {
        out.push(Next::LargerWindow {
            floor,
            window: at.window,
        });
    } else if any(&[
        Standing::BelowTarget,
        Standing::FailsInFramework,
        Standing::OverWindow,
        Standing::BudgetBelowFloor,
        Standing::Costlier,
        Standing::ActedNowhere,
    ]) {
        out.push(Next::Sweep {
            dataset: at.dataset.to_owned(),
            window: at.window,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A strategy that qualifies under [`rule`]: it acted on 30 of 36 episodes, 12 of them with needs, and
    /// kept 95% of 30 needs there; it saves half the tokens and costs $1 against $2.
    fn good() -> Figures {
        Figures {
            input_tokens: 50,
            baseline_input_tokens: 100,
            savings: 0.5,
            cost_usd: Some(1.0),
            baseline_cost_usd: Some(2.0),
            cost_savings: Some(0.5),
            needs: 40,
            retention_at_need: Some(0.97),
            retention_first_need: Some(0.9),
            episodes_acted: 30,
            episodes_needed_acted: 12,
            needs_acted: 30,
            retention_at_need_acted: Some(0.95),
            floor_tokens: Some(1367),
            ..Figures::default()
        }
    }

    fn rule() -> Rule {
        Rule {
            min_retention: 0.9,
            min_needs: 10,
            min_episodes: 5,
            without_retention: false,
        }
    }

    fn at(rule: &Rule) -> Setting<'_> {
        Setting {
            rule,
            window: 8000,
            dataset: "mine.jsonl",
            too_small: None,
        }
    }

    fn candidate<'a>(name: &'a str, figures: &'a Figures) -> Candidate<'a> {
        Candidate {
            name,
            figures,
            episodes: 36,
            interval: Shown::Interval { lo: 0.85, hi: 0.99 },
        }
    }

    fn standing(f: Figures, rule: &Rule) -> Standing {
        reason(&candidate("s", &f), &at(rule)).standing()
    }

    /// Each rule in its order, each at its boundary: the first that applies is the reason.
    #[test]
    fn the_first_rule_that_applies_is_the_reason() {
        let r = rule();
        assert_eq!(standing(good(), &r), Standing::Qualifies);
        // A framework that raises on one episode outweighs everything.
        let fails = Figures {
            episodes_failed: 1,
            steps_over_window: 3,
            ..good()
        };
        assert_eq!(
            reason(&candidate("s", &fails), &at(&r)),
            Reason::FailsInFramework {
                episodes: 1,
                of: 36
            }
        );
        // One request over the window outweighs everything after it.
        let over = Figures {
            steps_over_window: 1,
            episodes_below_floor: 2,
            budget_tokens: Some(1000),
            ..good()
        };
        assert_eq!(
            reason(&candidate("s", &over), &at(&r)),
            Reason::OverWindow {
                requests: 1,
                window: 8000
            }
        );
        let below = Figures {
            episodes_below_floor: 2,
            budget_tokens: Some(1000),
            ..good()
        };
        assert_eq!(
            reason(&candidate("s", &below), &at(&r)),
            Reason::BudgetBelowFloor {
                budget: 1000,
                floor: 1367,
                episodes: 2
            }
        );
        let idle = Figures {
            episodes_acted: 0,
            input_tokens: 100,
            cost_usd: Some(2.0),
            ..good()
        };
        assert_eq!(standing(idle, &r), Standing::ActedNowhere);
        // No cheaper than no reduction: a cent more, the same cost, or as many tokens.
        for (cost, input) in [
            (Some(2.01), 50),
            (Some(2.0), 50),
            (Some(1.0), 100),
            (None, 101),
        ] {
            let f = Figures {
                cost_usd: cost,
                input_tokens: input,
                ..good()
            };
            assert_eq!(standing(f, &r), Standing::Costlier, "{cost:?} {input}");
        }
        // A cost unknown on either side leaves the tokens to decide, and the cost from its first act on
        // where the episodes it acted on are priced.
        let unpriced = Figures {
            cost_usd: None,
            baseline_cost_usd: None,
            ..good()
        };
        assert_eq!(standing(unpriced.clone(), &r), Standing::Qualifies);
        for (acted, standing_) in [
            (Some(-0.01), Standing::Costlier),
            (Some(0.0), Standing::Costlier),
            (Some(0.01), Standing::Qualifies),
            (None, Standing::Qualifies),
        ] {
            // The figure over the priced episodes it acted on decides, not the one over all of them
            // (unknown where one of them is unpriced).
            let f = Figures {
                cost_savings_acted_priced: acted,
                cost_savings_acted: None,
                ..unpriced.clone()
            };
            assert_eq!(standing(f, &r), standing_, "{acted:?}");
        }
        let f = Figures {
            cost_savings_acted_priced: Some(-0.25),
            baseline_cost_usd: Some(2.0),
            ..unpriced
        };
        assert_eq!(
            reason(&candidate("s", &f), &at(&r)),
            Reason::Costlier {
                cost: None,
                baseline_cost: Some(2.0),
                savings: f.savings,
                cost_savings_acted_priced: Some(-0.25)
            }
        );
        let unmeasured = Figures { needs: 0, ..good() };
        assert_eq!(standing(unmeasured, &r), Standing::Unmeasured);
        let few = |episodes, needs| Figures {
            episodes_needed_acted: episodes,
            needs_acted: needs,
            ..good()
        };
        assert_eq!(standing(few(4, 30), &r), Standing::TooFewEpisodes);
        assert_eq!(standing(few(5, 30), &r), Standing::Qualifies);
        assert_eq!(standing(few(5, 9), &r), Standing::TooFewNeeds);
        assert_eq!(standing(few(5, 10), &r), Standing::Qualifies);
        // At least one episode and one need, whatever the options.
        let none = Rule {
            min_needs: 0,
            min_episodes: 0,
            ..r
        };
        assert_eq!(standing(few(0, 0), &none), Standing::TooFewEpisodes);
        assert_eq!(
            standing(
                Figures {
                    retention_at_need_acted: None,
                    ..few(1, 0)
                },
                &none
            ),
            Standing::TooFewNeeds
        );
        assert_eq!(standing(few(1, 1), &none), Standing::Qualifies);
        let kept = |k| Figures {
            retention_at_need_acted: Some(k),
            ..good()
        };
        assert_eq!(standing(kept(0.9), &r), Standing::Qualifies);
        assert_eq!(standing(kept(0.899_999), &r), Standing::BelowTarget);
    }

    /// The figures a reason carries are the strategy's, where it acted.
    #[test]
    fn a_reason_carries_its_figures() {
        let r = rule();
        let f = good();
        assert_eq!(
            reason(&candidate("s", &f), &at(&r)),
            Reason::Qualifies {
                kept: 0.95,
                interval: Shown::Interval { lo: 0.85, hi: 0.99 },
                needs: 30,
                episodes: 12,
                cost: Some(1.0)
            }
        );
        let low = Figures {
            retention_at_need_acted: Some(0.5),
            ..good()
        };
        assert_eq!(
            reason(&candidate("s", &low), &at(&r)),
            Reason::BelowTarget {
                kept: 0.5,
                interval: Shown::Interval { lo: 0.85, hi: 0.99 },
                needs: 30
            }
        );
        let few = Figures {
            episodes_needed_acted: 1,
            ..good()
        };
        assert_eq!(
            reason(&candidate("s", &few), &at(&r)),
            Reason::TooFewEpisodes {
                episodes: 1,
                min: 5
            }
        );
        let needs = Figures {
            needs_acted: 4,
            ..good()
        };
        assert_eq!(
            reason(&candidate("s", &needs), &at(&r)),
            Reason::TooFewNeeds { needs: 4, min: 10 }
        );
        let dear = Figures {
            cost_usd: Some(20.363),
            baseline_cost_usd: Some(20.358),
            savings: 0.033,
            ..good()
        };
        assert_eq!(
            reason(&candidate("s", &dear), &at(&r)),
            Reason::Costlier {
                cost: Some(20.363),
                baseline_cost: Some(20.358),
                savings: 0.033,
                cost_savings_acted_priced: None
            }
        );
    }

    /// The cheapest that qualifies is picked (by savings where a cost is unknown, or on a tie); the
    /// verdicts keep the candidates' order.
    #[test]
    fn the_cheapest_that_qualifies_is_picked() {
        let r = rule();
        let dear = Figures {
            cost_usd: Some(1.5),
            ..good()
        };
        let cheap = Figures {
            cost_usd: Some(0.5),
            ..good()
        };
        let cheapest_but_lossy = Figures {
            cost_usd: Some(0.1),
            retention_at_need_acted: Some(0.5),
            ..good()
        };
        let all = [
            candidate("dear", &dear),
            candidate("lossy", &cheapest_but_lossy),
            candidate("cheap", &cheap),
        ];
        let rec = recommend(&all, &at(&r));
        assert_eq!(rec.strategy.as_deref(), Some("cheap"));
        let names: Vec<&str> = rec.verdicts.iter().map(|v| v.strategy.as_str()).collect();
        assert_eq!(names, ["dear", "lossy", "cheap"]);
        assert!(rec.next.is_empty());
        let pick = rec.pick.unwrap();
        assert_eq!(
            (pick.needs, pick.episodes, pick.acted, pick.of),
            (30, 12, 30, 36)
        );
        assert!(!pick.savings_alone);
        // Equal costs: the one that saves more tokens.
        let more = Figures {
            cost_usd: Some(0.5),
            savings: 0.6,
            input_tokens: 40,
            ..good()
        };
        let tie = [candidate("cheap", &cheap), candidate("more", &more)];
        assert_eq!(recommend(&tie, &at(&r)).strategy.as_deref(), Some("more"));
        // A cost unknown: by savings alone.
        let unpriced = Figures {
            cost_usd: None,
            savings: 0.7,
            input_tokens: 30,
            ..good()
        };
        let mixed = [candidate("cheap", &cheap), candidate("unpriced", &unpriced)];
        assert_eq!(
            recommend(&mixed, &at(&r)).strategy.as_deref(),
            Some("unpriced")
        );
    }

    /// Where retention measured nothing, nothing is picked unless asked; asked, the cheapest unmeasured, on
    /// savings alone — never one that costs more or acted nowhere.
    #[test]
    fn on_savings_alone_only_when_asked() {
        let unmeasured = |cost| Figures {
            needs: 0,
            cost_usd: Some(cost),
            ..good()
        };
        let (a, b, dear) = (unmeasured(1.0), unmeasured(0.5), unmeasured(3.0));
        let all = [
            candidate("a", &a),
            candidate("b", &b),
            candidate("dear", &dear),
        ];
        let r = rule();
        let rec = recommend(&all, &at(&r));
        assert_eq!(rec.strategy, None);
        assert_eq!(
            rec.next,
            [
                Next::AddFindings,
                Next::Sweep {
                    dataset: "mine.jsonl".into(),
                    window: 8000
                }
            ]
        );
        let asked = Rule {
            without_retention: true,
            ..r
        };
        let rec = recommend(&all, &at(&asked));
        assert_eq!(rec.strategy.as_deref(), Some("b"));
        assert!(rec.pick.unwrap().savings_alone);
        assert!(rec.text.contains("savings alone"), "{}", rec.text);
    }

    /// What to try when nothing is picked follows from why.
    #[test]
    fn what_to_try_follows_from_why() {
        let r = rule();
        let next = |f: Figures| recommend(&[candidate("s", &f)], &at(&r)).next;
        let sweep = Next::Sweep {
            dataset: "mine.jsonl".into(),
            window: 8000,
        };
        let low = Figures {
            retention_at_need_acted: Some(0.5),
            ..good()
        };
        assert_eq!(next(low), [Next::LowerTarget, sweep.clone()]);
        let few = Figures {
            episodes_needed_acted: 1,
            ..good()
        };
        assert_eq!(next(few), [Next::MoreEpisodes]);
        let needs = Figures {
            needs_acted: 1,
            ..good()
        };
        assert_eq!(next(needs), [Next::MoreEpisodes]);
        for f in [
            Figures {
                steps_over_window: 2,
                ..good()
            },
            Figures {
                episodes_below_floor: 1,
                budget_tokens: Some(10),
                ..good()
            },
            Figures {
                episodes_acted: 0,
                ..good()
            },
            Figures {
                cost_usd: Some(9.0),
                ..good()
            },
        ] {
            assert_eq!(next(f), std::slice::from_ref(&sweep));
        }
        assert!(next(good()).is_empty());
        // Where the window is too small for the traces, no sweep at it helps: a larger window does.
        let small = Setting {
            too_small: Some(18_789),
            ..at(&r)
        };
        let over = Figures {
            steps_over_window: 6,
            ..good()
        };
        assert_eq!(
            recommend(&[candidate("s", &over)], &small).next,
            [Next::LargerWindow {
                floor: 18_789,
                window: 8000
            }]
        );
    }
}
