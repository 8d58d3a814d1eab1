//! What the run's analysis step (`run::analyze`) decided, as typed values a report renders and never decides
//! again: the rule, which interval each figure may show, the facts of the reading (where each strategy acted
//! or why it did not, requests over the window, budgets below the floor, the window advice) and which of the
//! report's general sentences the run's own data supports. `summary.json` holds it (`analysis`), so that
//! `ctxbench report` renders what the run decided.

use serde::{Deserialize, Serialize};

/// What the recommendation asks of a strategy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// The retention at need it must keep where it acted.
    pub min_retention: f64,
    /// The fewest needs met where it acted that count as evidence.
    pub min_needs: u64,
    /// The fewest episodes it acted on, with a need met there, that count as evidence; also the fewest
    /// episodes an interval is shown over.
    pub min_episodes: u64,
    /// Recommend on savings alone where retention measured nothing.
    pub without_retention: bool,
}

/// An interval as a report shows it beside its figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "shown")]
pub enum Shown {
    /// The 95% interval.
    Interval {
        /// Its lower end.
        lo: f64,
        /// Its upper end.
        hi: f64,
    },
    /// Fewer episodes than `--min-episodes`: no interval would be honest.
    TooFewEpisodes,
    /// None belongs here: the baseline's own figure, a strategy whose figures are the baseline's, or a figure
    /// that is unknown.
    Nothing,
}

/// What a strategy is in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// No reduction (a strategy of type `none`, whatever its name): every other is compared with it.
    Baseline,
    /// What the agent itself sent where it compacted its own context (`as_recorded`): compared, never picked.
    Recorded,
    /// A strategy one can pick.
    Candidate,
}

/// The intervals a strategy's figures show.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Intervals {
    /// Savings.
    pub savings: Shown,
    /// Cost saved, with the prompt cache.
    pub cost_savings: Shown,
    /// Retention at need.
    pub retention: Shown,
    /// Retention at the first need.
    pub first_need: Shown,
    /// Task-given findings' retention at need.
    pub task: Shown,
    /// Retention at need where it acted (from its first act on): the figure a pick rests on.
    pub retention_acted: Shown,
}

/// What the analysis decided about one strategy's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assessment {
    /// The strategy.
    pub strategy: String,
    /// What it is in the run.
    pub role: Role,
    /// Requests it sent over the model's window: failures, which a provider refuses.
    pub over_window: u64,
    /// The intervals its figures show.
    pub intervals: Intervals,
}

/// The model's window against the largest request and what no strategy may reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// The window, in tokens.
    pub tokens: u64,
    /// The largest request no strategy reduced (the baseline's).
    pub peak: Option<u64>,
    /// The largest part of a request no strategy may reduce (system prompt, tool schemas, task, unrecorded
    /// context).
    pub floor: Option<u64>,
    /// Episodes where that part alone is over the window.
    pub too_small_on: u64,
    /// Episodes in the run.
    pub episodes: u64,
}

/// Why a strategy never changed a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "trigger")]
pub enum Idle {
    /// A share of the window triggers it, above every request at this window.
    Window {
        /// Where it acts at this window.
        at: u64,
        /// A window under which it would act and could work (its budget above the floor, below the largest
        /// request; never the window in use); none when no window does.
        suggest: Option<u64>,
    },
    /// A budget of its own, not the window, triggers it; no request reached it.
    Budget {
        /// The budget.
        at: u64,
    },
    /// Requests were over where it acts, yet it changed none: it found nothing it reduces in them (they are
    /// mostly what no strategy may reduce, or what it reduces was not there); no window changes that.
    NothingToReduce {
        /// Where it acts at this window.
        at: u64,
    },
    /// Something other than a size triggers it (a count of turns or items, its own estimate); it never came.
    Other,
}

/// What a strategy did over the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "activity")]
pub enum Activity {
    /// It changed a request in `episodes` episodes: its figures from each one's first act, and over every
    /// episode.
    Acted {
        /// Episodes it acted on.
        episodes: u64,
        /// Savings from the first act on.
        savings: Option<f64>,
        /// Cost saved from the first act on.
        cost_savings: Option<f64>,
        /// Needs met from the first act on.
        needs: u64,
        /// Retention at need there.
        kept: Option<f64>,
        /// Its interval.
        interval: Shown,
        /// Retention at the first need there.
        first: Option<f64>,
        /// Savings over every episode.
        savings_all: f64,
        /// Cost saved over every episode (the comparison's `cost saved`).
        cost_savings_all: Option<f64>,
        /// Retention at need over every episode.
        kept_all: Option<f64>,
    },
    /// It changed no request: its figures are the baseline's.
    Idle(Idle),
}

/// The facts of one strategy's reading line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyFacts {
    /// The strategy.
    pub strategy: String,
    /// Episodes in the run.
    pub of: u64,
    /// Its budget below what it may not reduce: (budget, floor, episodes where it is).
    pub below_floor: Option<(u64, u64, u64)>,
    /// Episodes the framework it reproduces fails (raises) on.
    #[serde(default)]
    pub failed: u64,
    /// Requests it sent over the window.
    pub over_window: u64,
    /// What it did.
    pub activity: Activity,
}

/// A fact of the report's reading, about one strategy or the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "fact")]
pub enum Fact {
    /// What no strategy may reduce is over the window on some episodes: the window is too small for them.
    WindowTooSmall(Window),
    /// The baseline's own requests over the window: the traces outgrow it.
    BaselineOverWindow {
        /// Requests over it.
        requests: u64,
        /// The window.
        window: u64,
    },
    /// One strategy.
    Strategy(StrategyFacts),
    /// Episodes with no found finding needed at a call point: retention at need leaves them out.
    WithoutFoundNeeds {
        /// Such episodes.
        episodes: u64,
        /// Episodes in the run.
        of: u64,
    },
    /// Task-given findings, reported apart.
    TaskGiven {
        /// Their needs.
        needs: u64,
        /// The lowest retention any strategy gave them, and which (none: every strategy gave the same).
        lowest: Option<(f64, Option<String>)>,
    },
    /// Models without a price: how to give one.
    Unpriced {
        /// The models, as the config names them.
        models: Vec<String>,
        /// Episodes whose trace names no model where the configuration names no `agent_model` either (absent
        /// in a summary.json written before it was counted: 0).
        #[serde(default)]
        unnamed: usize,
    },
}

impl Fact {
    /// The strategy the fact is about, if one.
    #[must_use]
    pub fn strategy(&self) -> Option<&str> {
        match self {
            Self::Strategy(s) => Some(&s.strategy),
            _ => None,
        }
    }
}

/// Which general sentences the run's own data supports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Claims {
    /// The baseline's share of tokens in tool output, and its largest kind with that kind's share.
    pub tool_output: Option<(f64, String, f64)>,
    /// The finding kind kept least by most strategies that acted: the kind, for how many, of how many.
    pub weakest_kind: Option<(String, u64, u64)>,
    /// Whether some strategy saved less cost than tokens (it rewrote the start of the context and lost the
    /// prompt cache).
    pub cache_cost: bool,
    /// Whether the mock LLM wrote summaries in this run (its retention is an upper bound for a real model's).
    pub mock_summaries: bool,
}

/// What the analysis decided, as the report renders it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// The rule the recommendation applied.
    pub rule: Rule,
    /// The window against the requests.
    pub window: Window,
    /// Per strategy, in the order of the run's strategies.
    pub assessments: Vec<Assessment>,
    /// The reading, in order.
    pub facts: Vec<Fact>,
    /// The general sentences the data supports.
    pub claims: Claims,
}

impl Analysis {
    /// The analysis of a run before any episode: its rule and window, nothing decided yet.
    #[must_use]
    pub fn empty(rule: Rule, window: u64) -> Self {
        Self {
            rule,
            window: Window {
                tokens: window,
                peak: None,
                floor: None,
                too_small_on: 0,
                episodes: 0,
            },
            assessments: Vec::new(),
            facts: Vec::new(),
            claims: Claims::default(),
        }
    }

    /// The assessment of `strategy`.
    #[must_use]
    pub fn of(&self, strategy: &str) -> Option<&Assessment> {
        self.assessments.iter().find(|a| a.strategy == strategy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary.json written before episodes naming no model were counted still reads: none counted.
    #[test]
    fn an_unpriced_fact_without_its_count_of_unnamed_episodes_reads() {
        let f: Fact = serde_json::from_str(r#"{"fact":"unpriced","models":["my-local"]}"#).unwrap();
        assert_eq!(
            f,
            Fact::Unpriced {
                models: vec!["my-local".into()],
                unnamed: 0
            }
        );
    }
}
