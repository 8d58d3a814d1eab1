//! The recommendation's sentences, by hand.

use super::*;

fn rule() -> Rule {
    Rule {
        min_retention: 0.9,
        min_needs: 10,
        min_episodes: 5,
        without_retention: false,
    }
}

fn verdict(name: &str, reason: Reason) -> Verdict {
    Verdict::new(name, reason, &rule())
}

/// Each reason's line, with its figures: short, one line, no "-0.0%".
#[test]
fn each_reason_says_why_in_a_line() {
    let r = rule();
    let interval = Shown::Interval { lo: 0.66, hi: 1.0 };
    for (reason, want) in [
        (
            Reason::OverWindow {
                requests: 60,
                window: 8000,
            },
            "60 requests over the 8,000-token window",
        ),
        (
            Reason::OverWindow {
                requests: 1,
                window: 8000,
            },
            "1 request over the 8,000-token window",
        ),
        (
            Reason::BudgetBelowFloor {
                budget: 1000,
                floor: 15_372,
                episodes: 3,
            },
            "budget 1,000 tokens, under the 15,372 it may not reduce on 3 episodes",
        ),
        (Reason::ActedNowhere, "changed no request"),
        (
            Reason::Costlier {
                cost: Some(20.363_168),
                baseline_cost: Some(20.358_032),
                savings: 0.033,
                cost_savings_acted_priced: None,
            },
            "costs $20.363, more than no reduction's $20.358",
        ),
        (
            Reason::Costlier {
                cost: Some(2.0),
                baseline_cost: Some(2.0),
                savings: 0.1,
                cost_savings_acted_priced: None,
            },
            "costs $2.00, as much as no reduction",
        ),
        (
            Reason::Costlier {
                cost: None,
                baseline_cost: None,
                savings: -0.01,
                cost_savings_acted_priced: None,
            },
            "sends more tokens than no reduction",
        ),
        (
            Reason::Costlier {
                cost: None,
                baseline_cost: Some(1.0),
                savings: 0.0,
                cost_savings_acted_priced: None,
            },
            "sends as many tokens as no reduction",
        ),
        (
            Reason::Costlier {
                cost: None,
                baseline_cost: None,
                savings: 0.061,
                cost_savings_acted_priced: Some(-5.849),
            },
            "costs 584.9% more than no reduction from its first act on, where priced (the run's whole cost \
             is unknown: some episodes are unpriced)",
        ),
        (
            Reason::Costlier {
                cost: None,
                baseline_cost: None,
                savings: 0.061,
                cost_savings_acted_priced: Some(0.0),
            },
            "costs as much as no reduction from its first act on, where priced (the run's whole cost is \
             unknown: some episodes are unpriced)",
        ),
        (
            Reason::Unmeasured,
            "no found finding is needed: nothing measured its losses",
        ),
        (
            Reason::TooFewEpisodes {
                episodes: 1,
                min: 5,
            },
            "1 episode with a need where it acted; 5 count (--min-episodes)",
        ),
        (
            Reason::TooFewNeeds { needs: 4, min: 10 },
            "4 needs met where it acted; 10 count (--min-needs)",
        ),
        (
            Reason::BelowTarget {
                kept: 0.5,
                interval: Shown::TooFewEpisodes,
                needs: 4,
            },
            "kept 50.0% (too few episodes) of 4 needs where it acted; target 90.0%",
        ),
        (
            Reason::Qualifies {
                kept: 1.0,
                interval,
                needs: 136,
                episodes: 10,
                cost: Some(64.33),
            },
            "kept 100.0% [66.0%, 100.0%] of 136 needs on 10 episodes where it acted; $64.33",
        ),
    ] {
        assert_eq!(reason.why(&r), want, "{reason:?}");
    }
}

/// The pick names its figure where it acted with its interval, and warns where the interval reaches
/// below the target; the verdict table marks the pick.
#[test]
fn the_pick_carries_its_interval() {
    let pick = |lo: f64| Pick {
        strategy: "p".into(),
        savings_alone: false,
        kept: Some(0.971),
        interval: Shown::Interval { lo, hi: 0.99 },
        needs: 136,
        episodes: 10,
        acted: 10,
        of: 42,
        kept_all: Some(0.991),
        first_all: Some(0.991),
        savings: 0.377,
        cost: Some(64.33),
        cost_savings: Some(0.365),
        calls: 0,
    };
    let rec = Recommendation::new(Some(pick(0.93)), Vec::new(), Vec::new(), &rule());
    assert_eq!(rec.strategy.as_deref(), Some("p"));
    assert!(
        rec.text
            .contains("97.1% [93.0%, 99.0%] of 136 needs on 10 episodes (it acted on 10 of 42;"),
        "{}",
        rec.text
    );
    assert!(rec
        .text
        .contains("costs $64.33 (36.5% less than no reduction), with 0 strategy LLM calls"));
    assert!(!rec.text.contains("may not meet it"));
    let unsure = Recommendation::new(Some(pick(0.85)), Vec::new(), Vec::new(), &rule());
    assert!(
        unsure
            .text
            .contains("Its interval reaches below the target"),
        "{}",
        unsure.text
    );
    let table = verdict_table(&Recommendation::new(
        Some(pick(0.93)),
        Vec::new(),
        vec![
            verdict("p", Reason::ActedNowhere),
            verdict("q", Reason::ActedNowhere),
        ],
        &rule(),
    ));
    let labels: Vec<&str> = table.rows.iter().map(|r| r[1].text.as_str()).collect();
    assert_eq!(labels, ["picked", "acted nowhere"]);
}

/// Nothing picked: how many fell short for each reason, in the verdicts' order, and what to try —
/// commands that run as written.
#[test]
fn nothing_picked_says_why_and_what_to_try() {
    let verdicts = vec![
        verdict(
            "a",
            Reason::OverWindow {
                requests: 3,
                window: 8000,
            },
        ),
        verdict("b", Reason::ActedNowhere),
        verdict(
            "c",
            Reason::OverWindow {
                requests: 1,
                window: 8000,
            },
        ),
    ];
    let next = vec![
        Next::LowerTarget,
        Next::Sweep {
            dataset: "mine.jsonl".into(),
            window: 8000,
        },
        Next::MoreEpisodes,
        Next::AddFindings,
        Next::LargerWindow {
            floor: 18_789,
            window: 8000,
        },
    ];
    let rec = Recommendation::new(None, next, verdicts, &rule());
    assert_eq!(rec.strategy, None);
    assert_eq!(
        rec.text,
        "Nothing is recommended: of 3 strategies, 2 sent requests over the window, 1 changed no request. \
         A lower target (--min-retention, now 0.9) accepts more loss. `ctxbench sweep --dataset mine.jsonl \
         --window 8000` tries gentler settings on the same data. More episodes make the evidence \
         (--min-episodes 5, --min-needs 10). Add findings (README, Dataset format), or pick on savings \
         alone with --recommend-without-retention. The 8,000-token window is too small for these traces: \
         what no strategy may reduce reaches 18,789 tokens, so no setting of any strategy brings every \
         request under it; only a model with a larger window runs them."
    );
    let one = Recommendation::new(
        None,
        Vec::new(),
        vec![verdict("b", Reason::ActedNowhere)],
        &rule(),
    );
    assert_eq!(
        one.text,
        "Nothing is recommended: of 1 strategy, 1 changed no request."
    );
}

/// A verdict reads back from JSON as it was written: its standing, its figures and its line.
#[test]
fn a_verdict_round_trips_through_json() {
    let v = verdict(
        "s",
        Reason::BelowTarget {
            kept: 0.5,
            interval: Shown::Interval { lo: 0.2, hi: 0.8 },
            needs: 4,
        },
    );
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["standing"], "below_target");
    assert_eq!(json["why"], v.why);
    let back: Verdict = serde_json::from_value(json).unwrap();
    assert_eq!(back, v);
}
