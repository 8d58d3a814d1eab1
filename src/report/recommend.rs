//! What to pick, as the analysis decided it (`run::recommend`), and its sentences: the pick or why nothing is
//! picked, and for every strategy the one reason that decided its standing, in a short line.
//!
//! The rule (README, Metrics; the report's glossary): a strategy qualifies where it acted — from its first act
//! on, in each episode — with retention at need there at or above the target, on at least `--min-needs` needs
//! and `--min-episodes` episodes; it must save tokens and cost against no reduction; a request over the window
//! and a budget below what it may not reduce disqualify it; where no found finding is needed anywhere,
//! retention measured nothing. Among those that qualify, the cheapest is picked.

use serde::{Deserialize, Serialize};

use super::analysis::{Rule, Shown};
use super::pct;
use super::table::thousands;

/// A strategy's standing: the tag of its [`Reason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// It qualifies.
    Qualifies,
    /// The framework it reproduces fails (raises) on some episode.
    FailsInFramework,
    /// It sent requests over the model's window.
    OverWindow,
    /// Its budget is below what it may not reduce on some episode.
    BudgetBelowFloor,
    /// It changed no request.
    ActedNowhere,
    /// It costs more than no reduction, or saves no tokens.
    Costlier,
    /// No found finding is needed anywhere: nothing measured what it loses.
    Unmeasured,
    /// It acted on too few episodes with a need for its retention there to tell.
    TooFewEpisodes,
    /// It met too few needs where it acted for its retention there to tell.
    TooFewNeeds,
    /// Its retention where it acted is below the target.
    BelowTarget,
}

/// Why a strategy stands where it does: the first of these that applies, in this order, with its figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "standing")]
pub enum Reason {
    /// The framework it reproduces fails (raises) on some episodes: the agent's run ends there.
    FailsInFramework {
        /// Such episodes.
        episodes: u64,
        /// Episodes in the run.
        of: u64,
    },
    /// It sent requests over the window, which a provider refuses.
    OverWindow {
        /// Requests over it.
        requests: u64,
        /// The window.
        window: u64,
    },
    /// Its budget is below what it may not reduce on some episodes: there it cannot work.
    BudgetBelowFloor {
        /// Its budget.
        budget: u64,
        /// What it may not reduce, at most.
        floor: u64,
        /// Episodes where the budget is below it.
        episodes: u64,
    },
    /// It changed no request.
    ActedNowhere,
    /// It costs at least as much as no reduction, or sends at least as many tokens.
    Costlier {
        /// Its cost.
        cost: Option<f64>,
        /// No reduction's.
        baseline_cost: Option<f64>,
        /// Its token savings.
        savings: f64,
        /// Its cost saved from its first act on over the priced episodes it acted on, where the run's whole
        /// cost is unknown (some episode is unpriced) and that saving is none: what decided. Absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_savings_acted_priced: Option<f64>,
    },
    /// No found finding is needed on these episodes: nothing measured what it loses.
    Unmeasured,
    /// Too few episodes it acted on had a need met from its first act on.
    TooFewEpisodes {
        /// Such episodes.
        episodes: u64,
        /// The fewest that count.
        min: u64,
    },
    /// Too few needs met from its first act on.
    TooFewNeeds {
        /// Such needs.
        needs: u64,
        /// The fewest that count.
        min: u64,
    },
    /// Its retention where it acted is below the target.
    BelowTarget {
        /// Retention at need there.
        kept: f64,
        /// Its interval.
        interval: Shown,
        /// The needs it rests on.
        needs: u64,
    },
    /// It qualifies.
    Qualifies {
        /// Retention at need where it acted.
        kept: f64,
        /// Its interval.
        interval: Shown,
        /// The needs it rests on.
        needs: u64,
        /// The episodes it rests on.
        episodes: u64,
        /// Its cost.
        cost: Option<f64>,
    },
}

impl Reason {
    /// The standing this reason decides.
    #[must_use]
    pub fn standing(&self) -> Standing {
        match self {
            Self::FailsInFramework { .. } => Standing::FailsInFramework,
            Self::OverWindow { .. } => Standing::OverWindow,
            Self::BudgetBelowFloor { .. } => Standing::BudgetBelowFloor,
            Self::ActedNowhere => Standing::ActedNowhere,
            Self::Costlier { .. } => Standing::Costlier,
            Self::Unmeasured => Standing::Unmeasured,
            Self::TooFewEpisodes { .. } => Standing::TooFewEpisodes,
            Self::TooFewNeeds { .. } => Standing::TooFewNeeds,
            Self::BelowTarget { .. } => Standing::BelowTarget,
            Self::Qualifies { .. } => Standing::Qualifies,
        }
    }

    /// The verdict in a few words (the table's second column).
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self.standing() {
            Standing::Qualifies => "qualifies",
            Standing::FailsInFramework => "fails in its framework",
            Standing::OverWindow => "over the window",
            Standing::BudgetBelowFloor => "budget below floor",
            Standing::ActedNowhere => "acted nowhere",
            Standing::Costlier => "costs more",
            Standing::Unmeasured => "unmeasured",
            Standing::TooFewEpisodes => "too few episodes",
            Standing::TooFewNeeds => "too few needs",
            Standing::BelowTarget => "below target",
        }
    }

    /// Why, in one short line with its figures.
    #[must_use]
    pub fn why(&self, rule: &Rule) -> String {
        match *self {
            Self::FailsInFramework { episodes, of } => format!(
                "its framework fails {episodes} of {of} episodes (it raises where it cannot bring a request \
                 under its threshold)"
            ),
            Self::OverWindow { requests, window } => format!(
                "{} request{} over the {}-token window",
                thousands(requests),
                plural(requests),
                thousands(window)
            ),
            Self::BudgetBelowFloor {
                budget,
                floor,
                episodes,
            } => format!(
                "budget {} tokens, under the {} it may not reduce on {episodes} episode{}",
                thousands(budget),
                thousands(floor),
                plural(episodes)
            ),
            Self::ActedNowhere => "changed no request".to_owned(),
            Self::Costlier {
                cost,
                baseline_cost,
                savings,
                cost_savings_acted_priced,
            } => costlier(cost, baseline_cost, savings, cost_savings_acted_priced),
            Self::Unmeasured => {
                "no found finding is needed: nothing measured its losses".to_owned()
            }
            Self::TooFewEpisodes { episodes, min } => format!(
                "{episodes} episode{} with a need where it acted; {min} count (--min-episodes)",
                plural(episodes)
            ),
            Self::TooFewNeeds { needs, min } => format!(
                "{needs} need{} met where it acted; {min} count (--min-needs)",
                plural(needs)
            ),
            Self::BelowTarget {
                kept,
                interval,
                needs,
            } => format!(
                "kept {} of {needs} needs where it acted; target {}",
                with_interval(kept, interval),
                pct(Some(rule.min_retention))
            ),
            Self::Qualifies {
                kept,
                interval,
                needs,
                episodes,
                cost,
            } => format!(
                "kept {} of {needs} needs on {episodes} episodes where it acted; {}",
                with_interval(kept, interval),
                usd(cost)
            ),
        }
    }
}

/// Why a strategy that costs more, or saves no tokens, is not a pick.
fn costlier(
    cost: Option<f64>,
    baseline_cost: Option<f64>,
    savings: f64,
    cost_savings_acted_priced: Option<f64>,
) -> String {
    match (cost, baseline_cost, cost_savings_acted_priced) {
        (Some(c), Some(b), _) if c > b => format!(
            "costs {}, more than no reduction's {}",
            usd_exact(c, b),
            usd_exact(b, c)
        ),
        (Some(c), Some(b), _) if c >= b => {
            format!("costs {}, as much as no reduction", usd(Some(c)))
        }
        (_, _, Some(s)) if s < 0.0 => format!(
            "costs {} more than no reduction from its first act on, where priced (the run's whole cost is \
             unknown: some episodes are unpriced)",
            pct(Some(-s))
        ),
        (_, _, Some(s)) if s <= 0.0 => "costs as much as no reduction from its first act on, where priced \
             (the run's whole cost is unknown: some episodes are unpriced)"
            .to_owned(),
        _ if savings < 0.0 => "sends more tokens than no reduction".to_owned(),
        _ => "sends as many tokens as no reduction".to_owned(),
    }
}

/// `v` in dollars, with as many decimals as it takes to tell it from `other` (at most 6).
fn usd_exact(v: f64, other: f64) -> String {
    let decimals = (2..=6)
        .find(|&d| format!("{v:.d$}") != format!("{other:.d$}"))
        .unwrap_or(6);
    format!("${v:.decimals$}")
}

/// Dollars to the cent, or "an unknown amount".
fn usd(v: Option<f64>) -> String {
    v.map_or_else(|| "an unknown amount".into(), |c| format!("${c:.2}"))
}

/// A share with its interval (`92.6% [66.0%, 100.0%]`, as in every table), or with "too few episodes" in its place.
#[must_use]
pub fn with_interval(v: f64, interval: Shown) -> String {
    match interval {
        Shown::Interval { lo, hi } => {
            format!("{} [{}, {}]", pct(Some(v)), pct(Some(lo)), pct(Some(hi)))
        }
        Shown::TooFewEpisodes => format!("{} (too few episodes)", pct(Some(v))),
        Shown::Nothing => pct(Some(v)),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// One strategy's standing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The strategy.
    pub strategy: String,
    /// Why it stands where it does.
    #[serde(flatten)]
    pub reason: Reason,
    /// The same, in a line (for readers of `summary.json`).
    pub why: String,
}

impl Verdict {
    /// `strategy`'s verdict for `reason` under `rule`.
    #[must_use]
    pub fn new(strategy: &str, reason: Reason, rule: &Rule) -> Self {
        Self {
            strategy: strategy.to_owned(),
            why: reason.why(rule),
            reason,
        }
    }

    /// Its standing.
    #[must_use]
    pub fn standing(&self) -> Standing {
        self.reason.standing()
    }
}

/// The strategy picked, with the figures its sentence gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    /// The strategy.
    pub strategy: String,
    /// Picked on savings alone (`--recommend-without-retention`): retention measured nothing.
    pub savings_alone: bool,
    /// Retention at need where it acted, its interval and the needs and episodes it rests on.
    pub kept: Option<f64>,
    /// Its interval.
    pub interval: Shown,
    /// The needs met where it acted.
    pub needs: u64,
    /// The episodes it acted on, with a need met there.
    pub episodes: u64,
    /// The episodes it acted on.
    pub acted: u64,
    /// The run's episodes.
    pub of: u64,
    /// Retention at need over every episode, and at the first need.
    pub kept_all: Option<f64>,
    /// Retention at the first need over every episode.
    pub first_all: Option<f64>,
    /// Savings over every episode.
    pub savings: f64,
    /// Its cost, and the share of no reduction's it saves.
    pub cost: Option<f64>,
    /// The share of cost saved.
    pub cost_savings: Option<f64>,
    /// Its LLM calls.
    pub calls: u64,
}

/// A command the no-pick sentence offers, each one that runs as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "next")]
pub enum Next {
    /// Lower the target.
    LowerTarget,
    /// Try other settings of the strategies that fell short: a sweep on the same data and window.
    Sweep {
        /// The dataset, as the run read it.
        dataset: String,
        /// The window.
        window: u64,
    },
    /// What no strategy may reduce is over the window on some episode: no setting fits these traces in it.
    LargerWindow {
        /// What no strategy may reduce, at most.
        floor: u64,
        /// The window.
        window: u64,
    },
    /// Bring more episodes (or lower the minimums).
    MoreEpisodes,
    /// Add findings (where retention measured nothing), or pick on savings alone.
    AddFindings,
}

/// What the run recommends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The strategy picked, or `None`.
    pub strategy: Option<String>,
    /// The sentence every report prints.
    pub text: String,
    /// The pick's figures, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pick: Option<Pick>,
    /// What to try when nothing is picked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next: Vec<Next>,
    /// Every strategy but the baseline and `as_recorded`, with its standing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<Verdict>,
}

impl Recommendation {
    /// The recommendation of `pick` (or of nothing, with `next`), its sentence written under `rule`.
    #[must_use]
    pub fn new(pick: Option<Pick>, next: Vec<Next>, verdicts: Vec<Verdict>, rule: &Rule) -> Self {
        let text = match &pick {
            Some(p) => pick_text(p, rule),
            None => none_text(&verdicts, &next, rule),
        };
        Self {
            strategy: pick.as_ref().map(|p| p.strategy.clone()),
            text,
            pick,
            next,
            verdicts,
        }
    }
}

/// What the pick saves and costs, in a sentence.
fn saves(p: &Pick) -> String {
    format!(
        "It saves {} of input tokens and costs {} ({} less than no reduction), with {} strategy LLM call{}.",
        pct(Some(p.savings)),
        usd(p.cost),
        pct(p.cost_savings),
        p.calls,
        plural(p.calls)
    )
}

/// The sentence for the pick.
fn pick_text(p: &Pick, rule: &Rule) -> String {
    if p.savings_alone {
        return format!(
            "Use `{}` on savings alone (--recommend-without-retention): no finding the agent found is needed \
             on these episodes, so nothing measured what it loses. {}",
            p.strategy,
            saves(p)
        );
    }
    let kept = p.kept.unwrap_or_default();
    let caveat = match p.interval {
        Shown::Interval { lo, .. } if lo < rule.min_retention => {
            " Its interval reaches below the target: with these episodes it may not meet it."
        }
        _ => "",
    };
    format!(
        "Use `{}`: the cheapest that keeps at least {} of the findings the agent found where they are needed, \
         from its first act on — {} of {} needs on {} episode{} (it acted on {} of {}; over every episode \
         {}, {} at the first need). {}{caveat}",
        p.strategy,
        pct(Some(rule.min_retention)),
        with_interval(kept, p.interval),
        p.needs,
        p.episodes,
        plural(p.episodes),
        p.acted,
        p.of,
        pct(p.kept_all),
        pct(p.first_all),
        saves(p)
    )
}

/// The sentence when nothing is picked: how many strategies fell short for each reason, and what to try.
fn none_text(verdicts: &[Verdict], next: &[Next], rule: &Rule) -> String {
    let mut counts: Vec<(Standing, usize)> = Vec::new();
    for v in verdicts {
        match counts.iter_mut().find(|(s, _)| *s == v.standing()) {
            Some((_, n)) => *n += 1,
            None => counts.push((v.standing(), 1)),
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(s, n)| format!("{n} {}", short(*s, *n)))
        .collect();
    let next: Vec<String> = next.iter().map(|n| next_text(n, rule)).collect();
    format!(
        "Nothing is recommended: of {} strateg{}, {}. {}",
        verdicts.len(),
        if verdicts.len() == 1 { "y" } else { "ies" },
        parts.join(", "),
        next.join(" ")
    )
    .trim_end()
    .to_owned()
}

/// How many strategies fell short for a reason, in words.
fn short(s: Standing, n: usize) -> &'static str {
    let one = n == 1;
    match s {
        Standing::Qualifies => "qualified",
        Standing::FailsInFramework if one => "fails in its framework",
        Standing::FailsInFramework => "fail in their frameworks",
        Standing::OverWindow => "sent requests over the window",
        Standing::BudgetBelowFloor if one => "has a budget below what it may not reduce",
        Standing::BudgetBelowFloor => "have budgets below what they may not reduce",
        Standing::ActedNowhere => "changed no request",
        Standing::Costlier if one => "costs no less than no reduction",
        Standing::Costlier => "cost no less than no reduction",
        Standing::Unmeasured if one => "was measured by no needed finding",
        Standing::Unmeasured => "were measured by no needed finding",
        Standing::TooFewEpisodes => "acted on too few episodes to tell",
        Standing::TooFewNeeds => "met too few needs where they acted to tell",
        Standing::BelowTarget if one => "kept less than the target where it acted",
        Standing::BelowTarget => "kept less than the target where they acted",
    }
}

/// What to try, as a sentence naming commands that run as written.
fn next_text(n: &Next, rule: &Rule) -> String {
    match n {
        Next::LowerTarget => format!(
            "A lower target (--min-retention, now {}) accepts more loss.",
            rule.min_retention
        ),
        Next::Sweep { dataset, window } => format!(
            "`ctxbench sweep --dataset {dataset} --window {window}` tries gentler settings on the same data."
        ),
        Next::LargerWindow { floor, window } => format!(
            "The {}-token window is too small for these traces: what no strategy may reduce reaches {} \
             tokens, so no setting of any strategy brings every request under it; only a model with a larger \
             window runs them.",
            thousands(*window),
            thousands(*floor)
        ),
        Next::MoreEpisodes => format!(
            "More episodes make the evidence (--min-episodes {}, --min-needs {}).",
            rule.min_episodes, rule.min_needs
        ),
        Next::AddFindings => "Add findings (README, Dataset format), or pick on savings alone with \
                              --recommend-without-retention."
            .to_owned(),
    }
}

/// The verdicts as a table: strategy, verdict (`picked` for the pick), and why in a line.
#[must_use]
pub fn verdict_table(rec: &Recommendation) -> super::document::Table {
    use super::document::{col, Cell, Table};
    let picked = rec.strategy.as_deref();
    Table::of(
        "Why each strategy stands where it does",
        &[
            col("strategy", |v: &Verdict| Cell::text(&v.strategy)),
            col("verdict", move |v: &Verdict| {
                Cell::text(if Some(v.strategy.as_str()) == picked {
                    "picked"
                } else {
                    v.reason.label()
                })
            }),
            col("why", |v: &Verdict| Cell::text(&v.why)),
        ],
        &rec.verdicts,
        None,
    )
}

#[cfg(test)]
mod tests;
