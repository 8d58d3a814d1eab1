//! Tests of the automatic findings: candidates, noise, probes, and what import counts as found and needed later.
use super::*;
use crate::history::validate::check_episode;

fn episode(items: Vec<Item>) -> Episode {
    let mut ep = Episode {
        id: "e".into(),
        source: "t".into(),
        items,
        ..Episode::default()
    };
    extract(&mut ep);
    ep
}

fn evidence(ep: &Episode) -> Vec<(&str, FindingKind)> {
    ep.findings
        .iter()
        .map(|f| (f.evidence[0].as_str(), f.kind))
        .collect()
}

#[test]
fn finds_what_a_tool_introduced_and_the_agent_used() {
    let ep = episode(vec![
        Item::user("fix the bug"),
        Item::tool_call("1", "grep", "{\"q\":\"parse\"}"),
        Item::tool_result(
            "1",
            "grep",
            "src/app/parse_date.py:88: def parse_date(value):\nnoise words here",
        ),
        Item::assistant("The bug is in src/app/parse_date.py at line 88, in parse_date."),
    ]);
    assert_eq!(
        evidence(&ep),
        vec![
            ("src/app/parse_date.py", FindingKind::Artifact),
            ("parse_date", FindingKind::Recall)
        ]
    );
    // 88 is a line number: not a finding.
    assert!(ep.findings.iter().all(|f| f.evidence[0] != "88"));
    assert_eq!(ep.findings[0].needed_at, [3]);
    assert_eq!(ep.probes[0].after_item, 2);
    assert!(
        ep.probes[0].question.contains(
            "output of `grep`: what fills the blank in \"____:88: def parse_date(value):\""
        ),
        "{}",
        ep.probes[0].question
    );
    assert_eq!(check_episode(&ep), vec![]);
}

#[test]
fn noise_is_left_out_and_urls_are_whole() {
    let out = "HTTP/1.1 200 OK content-type: text/html\n\
               {\"request_id\": \"abc\", \"total\": 1234}\n\
               python 3.11.7 raised ValueError at line 4512 in handler.py\n\
               see https://example.com/docs/api?id=77 for the spec";
    let ep = episode(vec![
        Item::user("investigate"),
        Item::tool_call("1", "curl", "{}"),
        Item::tool_result("1", "curl", out),
        Item::assistant(
            "text/html, request_id, 3.11.7, ValueError, 4512 and 1234 seen; handler.py and \
             https://example.com/docs/api?id=77 matter",
        ),
    ]);
    assert_eq!(
        evidence(&ep),
        vec![
            ("1234", FindingKind::Recall),
            ("handler.py", FindingKind::Artifact),
            ("https://example.com/docs/api?id=77", FindingKind::Artifact),
        ]
    );
}

#[test]
fn file_views_css_dunders_and_tool_names_are_noise() {
    let view = "[File: /repo/fields.py (1500 lines total)]\n\
                1475:        return int(value.total_seconds() / base_unit)\n\
                  41|  color: #888;\n\
                if __name__ == '__main__': run_checks(a/b)\n\
                #!/usr/bin/env python3\n\
                <div>App</div>\n\
                import './App.css'";
    let ep = episode(vec![
        Item::user("fix the rounding"),
        Item::tool_call("1", "open_file", "{}"),
        Item::tool_result("1", "open_file", view),
        Item::assistant(
            "edit 1475 of /repo/fields.py: base_unit, value.total_seconds, 888, __name__, \
             run_checks, a/b, /usr/bin/env, /div, open_file and App.css",
        ),
    ]);
    assert_eq!(
        evidence(&ep),
        vec![
            ("/repo/fields.py", FindingKind::Artifact),
            ("value.total_seconds", FindingKind::Recall),
            ("base_unit", FindingKind::Recall),
            ("run_checks", FindingKind::Recall),
            ("App.css", FindingKind::Artifact),
        ]
    );
}

#[test]
fn line_numbers_leaders_and_what_the_task_holds_are_not_found() {
    let view = "   1→import os\n  120→def run_checks(path):\n  121\tvalue = 4719\n  122│ MAX_TOTAL = 8088\n\
                isort....................................................................Passed\n\
                flake8..................Failed\n\
                total 1,234 rows for src/app/billing.py";
    let ep = episode(vec![
        Item::user("fix src/app/billing.py so that MAX_TOTAL holds"),
        Item::tool_call("1", "view", "{}"),
        Item::tool_result("1", "view", view),
        Item::assistant(
            "120, 121, 122 and 1 are lines; run_checks, 4719, 8088, isort....Passed, flake8..Failed, 234, \
             MAX_TOTAL and src/app/billing.py matter",
        ),
    ]);
    // The task's path and identifier are the task's (labelled so); the output's copy of them is no find;
    // 234 is inside 1,234; the line numbers and the status lines are noise.
    let got: Vec<(&str, bool)> = ep
        .findings
        .iter()
        .map(|f| (f.evidence[0].as_str(), f.from_task))
        .collect();
    assert_eq!(
        got,
        [
            ("src/app/billing.py", true),
            ("MAX_TOTAL", true),
            ("run_checks", false),
            ("4719", false),
            ("8088", false),
        ]
    );
}

#[test]
fn the_task_introduces_findings_labelled_as_such() {
    let ep = episode(vec![
        Item::system("You are an agent."),
        Item::user("TimeDelta serialization in src/fields.py rounds 345 ms down"),
        Item::assistant("Opening src/fields.py to see how TimeDelta is serialized."),
    ]);
    assert_eq!(
        evidence(&ep),
        vec![
            ("TimeDelta", FindingKind::Recall),
            ("src/fields.py", FindingKind::Artifact)
        ]
    );
    assert!(ep.findings.iter().all(|f| f.from_task));
    assert!(ep.probes[0].question.starts_with("From the task:"));
}

#[test]
fn a_quote_with_quotation_marks_is_delimited_by_others_and_cut_between_fields() {
    let record = r#"{"reservation_id": "ABC123", "user": "mia_kim_4397", "cabin": "economy", "refund_amount": 1234}"#;
    let ep = episode(vec![
        Item::user("refund the reservation"),
        Item::tool_call("1", "get_reservation_details", "{}"),
        Item::tool_result("1", "get_reservation_details", record),
        Item::assistant("Your refund of 1234 is confirmed."),
    ]);
    let question = &ep.probes[0].question;
    assert_eq!(
        question,
        "From the output of `get_reservation_details`: what fills the blank in \
         `\"cabin\": \"economy\", \"refund_amount\": ____}`?"
    );
    assert_eq!(delimited("a `b` \"c\""), "«a `b` \"c\"»");
}

#[test]
fn an_ambiguous_or_bare_blank_gets_no_probe() {
    // The value alone on its line: nothing to quote. Twice the same context with two values: ambiguous.
    let ep = episode(vec![
        Item::user("check the ports"),
        Item::tool_call("1", "cat", "{}"),
        Item::tool_result("1", "cat", "8443\nport = 9001\nport = 9002"),
        Item::assistant("Using 8443, 9001 and 9002."),
    ]);
    assert_eq!(ep.findings.len(), 3);
    assert!(ep.probes.is_empty(), "{:?}", ep.probes);
}

#[test]
fn bare_common_numbers_and_format_markers_are_left_out_values_and_codes_kept() {
    let out = "Repo-map: using 1024 tokens\n\
               if num_files > 1000: warn()\n\
               # 3 SEARCH/REPLACE blocks failed to match! SearchReplaceNoExactMatch\n\
               <system-reminder>Whenever you read mark_reminder_fact, check it</system-reminder>\n\
               {\"amount\": 500, \"flight_number\": \"HAT238\", \"reservation\": \"EUJUY6\"}\n\
               commit cc2b48b; color: #646cffaa; echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; total $2000, born in 1900, retired 1842, answer 125379498";
    let ep = episode(vec![
        Item::user("check the booking"),
        Item::tool_call("1", "lookup", "{}"),
        Item::tool_result("1", "lookup", out),
        Item::assistant(
            "1024, 1000, SEARCH/REPLACE, SearchReplaceNoExactMatch, mark_reminder_fact; refund 500 and \
             1024 for HAT238 on EUJUY6 (cc2b48b, 646cffaa, COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT): $2000, 1900, 1842, 125379498",
        ),
    ]);
    let got: Vec<&str> = ep.findings.iter().map(|f| f.evidence[0].as_str()).collect();
    assert_eq!(
        got,
        [
            "500",
            "HAT238",
            "EUJUY6",
            "cc2b48b",
            "2000",
            "1900",
            "1842",
            "125379498"
        ],
        "{:?}",
        ep.findings
    );
}

#[test]
fn common_numbers_values_years_and_codes() {
    for w in [
        "100", "500", "1000", "1500", "25000", "128", "1024", "65536",
    ] {
        assert!(common_number(w), "{w}");
    }
    for w in [
        "158", "4719", "1842", "2022", "1234", "96", "1,000", "12.50",
    ] {
        assert!(!common_number(w), "{w}");
    }
    assert!(
        a_value("{\"amount\": ") && a_value("price=") && a_value("total $") && a_value("cost: ")
    );
    assert!(!a_value("num_files > ") && !a_value("call(") && !a_value("using "));
    assert!(a_year("2000", "born in ") && a_year("1900", "since ") && a_year("2000", "May "));
    assert!(!a_year("1000", "in ") && !a_year("2048", "game "));
    for w in ["HAT238", "EUJUY6", "4WQ150", "cc2b48b", "4590162224af"] {
        assert!(code(w), "{w}");
    }
    for w in ["ORD", "HAT", "E501", "deadbeef", "Analytics", "abcdef1"] {
        assert!(!code(w), "{w}");
    }
}

/// What import counts as found and needed later is what retention at need measures: the findings of the
/// baseline's ledger that the task does not give, on the bundled episodes and on hand-made ones.
#[test]
fn found_needed_later_is_what_the_ledger_measures() {
    let tok = crate::tokens::Tokenizer::shared_default().unwrap();
    let llm = crate::llm::mock::MockLlm::new(
        crate::llm::mock::MockConfig::default(),
        std::sync::Arc::clone(&tok),
    );
    let replayer = crate::replay::Replayer::new(tok, &llm, 1_000_000);
    let none = [crate::strategy::NamedStrategy::new(
        "none",
        crate::strategy::StrategyConfig::None,
    )];
    let mut episodes = crate::gen::generate(42);
    episodes.truncate(12);
    let mut made = episode(vec![
        Item::user("fix src/app/billing.py"),
        Item::tool_call("1", "view", "{}"),
        Item::tool_result(
            "1",
            "view",
            "run_checks fails with 4719 in src/app/billing.py",
        ),
        Item::assistant("run_checks and 4719: editing src/app/billing.py"),
        Item::tool_call("2", "edit", "{}"),
        Item::tool_result("2", "edit", "ok"),
    ]);
    episodes.push(made.clone());
    made.findings.iter_mut().for_each(|f| f.needed_at.clear());
    episodes.push(made);
    let mut found_some = 0;
    for ep in &episodes {
        let replay = &replayer.replay_all(ep, &none).unwrap()[0];
        let rows = crate::metrics::needs::ledger(ep, &replay.steps);
        let mut found: Vec<usize> = rows
            .iter()
            .filter(|r| !r.from_task)
            .map(|r| r.finding)
            .collect();
        found.dedup();
        assert_eq!(found_needed_later(ep), found.len(), "{}", ep.id);
        found_some += usize::from(!found.is_empty());
    }
    assert!(found_some > 2, "the check compares episodes that have some");
}
