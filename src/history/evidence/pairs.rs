//! The matching rule on hand-written pairs: an evidence string and a text, read exactly or as a model's
//! words, and whether the fact is there. The situations are those of the real traces in `shared/traces`
//! (tau-bench's airline bookings, SWE-agent's marshmallow fix, mini-swe-agent's sqlfluff rule), the texts
//! written anew; `tests/cli/retention.rs` checks pairs taken from the traces themselves.

use super::*;

use Reading::{Exact, Written};

/// (evidence, text, how it is read, kept).
const PAIRS: &[(&str, &str, Reading, bool)] = &[
    // Token boundaries: a number or an identifier never matches inside a longer one.
    (
        "397",
        "user mia_kim_4397 has two reservations",
        Exact,
        false,
    ),
    ("202", "the flight leaves on 2024-05-15", Exact, false),
    ("1459", "escalated as TCK-1459", Exact, false),
    ("4719", "counted 14,719 rows", Exact, false),
    (
        "keep requests at 2.3",
        "Decided to stay on requests 2.31.",
        Written,
        false,
    ),
    ("TCK-1459", "escalated as TCK-1459.", Exact, true),
    // Faithful paraphrase: thousands separators, `NAME = value` and "NAME is value", identifiers' case.
    ("4,719 rows", "SELECT count(*) -> 4719 rows", Exact, true),
    ("4719", "The query returned 4,719 records.", Written, true),
    (
        "MAX_RETRIES = 37",
        "settings.py: MAX_RETRIES is 37",
        Exact,
        true,
    ),
    (
        "MAX_RETRIES = 37",
        "Settings set MAX_RETRIES=37 during the migration.",
        Written,
        true,
    ),
    (
        "MAX_RETRIES = 37",
        "Settings set max_retries to 37 during the migration.",
        Written,
        false,
    ),
    ("TimeDelta", "from datetime import timedelta", Exact, false),
    (
        "the WHO raw tables",
        "who knows where the raw tables are",
        Written,
        false,
    ),
    (
        "the WHO raw tables",
        "Check it against the WHO tables (raw).",
        Written,
        true,
    ),
    // A model's words: identifying tokens and enough content words; one token stands for a fact only when the
    // evidence is that token.
    (
        "refunds above $200 need approval",
        "SELECT * FROM refunds LIMIT 200",
        Written,
        false,
    ),
    (
        "refunds above $200 need approval",
        "Policy: refunds over $200 require manager approval.",
        Written,
        true,
    ),
    (
        "edited src/app3/billing.py",
        "Let me read src/app3/billing.py first.",
        Written,
        false,
    ),
    (
        "Applied edit to src/app3/billing.py",
        "I edited src/app3/billing.py to drop the double discount.",
        Written,
        true,
    ),
    // A word is there when a word of the same stem is, not a longer word that starts alike.
    (
        "Applied edit to src/app3/billing.py",
        "Opened src/app3/billing.py in the application.",
        Written,
        false,
    ),
    (
        "Created ticket TCK-1459",
        "Following up on TCK-1459.",
        Written,
        false,
    ),
    // On one line: tokens gathered from different lines of a model's text do not state the fact. A summary's
    // list of tools names `edit_file`; its key findings name the path, as read.
    (
        "Applied edit to src/app3/billing.py",
        "[Previous work summary]\n## Tools used\nread_file ×2, edit_file ×1\n## Key findings\n\
         - Let me read src/app3/billing.py first.",
        Written,
        false,
    ),
    (
        "Applied edit to src/app3/billing.py",
        "[Previous work summary]\n## Key findings\n\
         - I edited src/app3/billing.py to drop the double discount.\n## Tools used\nedit_file ×1",
        Written,
        true,
    ),
    (
        "Created ticket TCK-1459",
        "A ticket was created for the warehouse.\nFollowing up on TCK-1459.",
        Written,
        false,
    ),
    (
        "Created ticket TCK-1459",
        "Ticket TCK-1459 was created for the warehouse.",
        Written,
        true,
    ),
    (
        "AssertionError: assert 4719 == 4718",
        "The assertion failed: it got 4719 where 4718 was expected.",
        Written,
        true,
    ),
    (
        "AssertionError: assert 4719 == 4718",
        "The test failed with an off-by-one assertion.",
        Written,
        false,
    ),
    (
        "offer a replacement instead of a refund",
        "Offer the customer a replacement rather than a refund.",
        Written,
        true,
    ),
    (
        "offer a replacement instead of a refund",
        "The customer asked for a refund.",
        Written,
        false,
    ),
    (
        "order #W2378156 is pending",
        "The order W2378156 has not shipped yet (still pending).",
        Written,
        true,
    ),
    (
        "total price is 375",
        "The total cost for the booking is $375.",
        Written,
        true,
    ),
    (
        "total price is 375",
        "You will have $125 remaining on the certificate.",
        Written,
        false,
    ),
    (
        "Output of this snippet is `344`",
        "The output has changed from 344 to 345.",
        Written,
        true,
    ),
    (
        "src/sqlfluff/rules/L060.py",
        "Let me examine the L060 rule file.",
        Written,
        false,
    ),
    (
        "IFNULL",
        "It replaces IFNULL/NVL with COALESCE.",
        Written,
        true,
    ),
    (
        "certificate_8998287",
        "You have a certificate with a balance of $500.",
        Written,
        false,
    ),
    (
        "\"customer_id\": \"CUS-47215\"",
        "{\"customer_id\": \"CUS-47215\", \"tier\": 2}",
        Exact,
        true,
    ),
    (
        "\"customer_id\": \"CUS-47215\"",
        "{\"customer_id\": \"CUS-472150\"}",
        Exact,
        false,
    ),
];

#[test]
fn hand_written_pairs() {
    let mut kept = 0;
    for &(evidence, text, reading, want) in PAIRS {
        assert_eq!(
            holds(text, reading, evidence),
            want,
            "{evidence:?} in {text:?} read {reading:?}"
        );
        // What a text holds exactly, it holds as a model's words too; the exact rule never needs the written one.
        if want && reading == Exact {
            assert!(holds(text, Written, evidence));
        }
        kept += usize::from(want);
    }
    assert!(PAIRS.len() >= 20 && kept >= 10 && PAIRS.len() - kept >= 10);
}

/// A tool call's arguments are not prose: only the exact evidence counts there.
#[test]
fn tool_call_arguments_count_exactly() {
    let call = Item::tool_call(
        "c1",
        "edit",
        r#"{"path": "src/app3/billing.py", "old": "x"}"#,
    );
    assert_eq!(reading(&call), Exact);
    let evidence = "Applied edit to src/app3/billing.py";
    assert!(!holds(&call.searchable(), reading(&call), evidence));
    assert!(holds(
        &call.searchable(),
        reading(&call),
        "src/app3/billing.py"
    ));
    for written in [
        Item::assistant("I edited src/app3/billing.py."),
        Item::Reasoning {
            content: "I edited src/app3/billing.py.".into(),
            sent_back: crate::history::SentBack::Always,
        },
        Item::user(format!("{SUMMARY_PREFIX}Edited src/app3/billing.py.")),
    ] {
        assert_eq!(reading(&written), Written, "{written:?}");
        assert!(holds(&written.searchable(), Written, evidence));
    }
    for exact in [
        Item::user("I edited src/app3/billing.py."),
        Item::tool_result("c1", "edit", "I edited src/app3/billing.py."),
        Item::observation("edit", "I edited src/app3/billing.py."),
    ] {
        assert_eq!(reading(&exact), Exact, "{exact:?}");
    }
    assert_eq!(instruction_reading(&format!("{SUMMARY_PREFIX}x")), Written);
    assert_eq!(instruction_reading("Be brief."), Exact);
}

/// A placeholder a strategy wrote holds nothing; a truncation keeps what it kept of the recorded output, whole
/// tokens only; a recorded item is read whole.
#[test]
fn placeholders_hold_no_evidence() {
    let output = "user mia_kim_4397\nbalance 397 USD\nline three\nlast line 4718";
    let items = vec![
        Item::user("task"),
        Item::tool_call("c1", "lookup", "{}"),
        Item::tool_result("c1", "lookup", output),
        Item::observation("bash", "first line\nsecond 4719"),
    ];
    let texts = |item: &Item| -> Vec<String> {
        visible(&items, item)
            .into_iter()
            .map(|c| c.into_owned())
            .collect()
    };
    let held = |item: &Item, e: &str| {
        visible(&items, item)
            .iter()
            .any(|t| holds(t, reading(item), e))
    };
    assert_eq!(texts(&items[2]), [output]);
    assert!(held(&items[2], "397"));
    // A stub whose own count is the evidence: nothing of it counts.
    let stub = Item::tool_result(
        "c1",
        "lookup",
        "[compacted output of 'lookup': 397 chars, 4 lines; ref #1]",
    );
    assert!(texts(&stub).is_empty() || texts(&stub).iter().all(|t| t.len() <= 1));
    assert!(!held(&stub, "397"));
    let placeholder = Item::observation("bash", "Old environment output: (2 lines omitted)");
    assert!(texts(&placeholder).is_empty());
    // A truncation: the head and the tail are the output's, the marker is not; a token cut in two is not kept.
    let truncated = Item::tool_result(
        "c1",
        "lookup",
        "user mia_kim_4397\nbalance 39\n[... 30 chars elided; ref #2 ...]\nline 4718",
    );
    assert_eq!(
        texts(&truncated),
        ["user mia_kim_4397\nbalance ", "line 4718"]
    );
    assert!(held(&truncated, "mia_kim_4397") && held(&truncated, "4718"));
    assert!(!held(&truncated, "39") && !held(&truncated, "30") && !held(&truncated, "ref"));
    // An observation has no call id: its recording is the first observation that starts with its first line.
    let head = Item::observation("bash", "first line\n[... 9 chars elided ...]\n 4719");
    assert_eq!(texts(&head), ["first line\n", " 4719"]);
    // A tool call's arguments, truncated: what is left of the recorded call (by its id) counts, exactly.
    let call = Item::tool_call(
        "c2",
        "lookup",
        "{\"user\": \"mia_kim_4397\", \"limit\": 200}",
    );
    let items = [items.as_slice(), std::slice::from_ref(&call)].concat();
    let cut = Item::tool_call("c2", "lookup", "{\"user\": \"mia_kim_4397\", [...]}");
    let cut_texts: Vec<String> = visible(&items, &cut)
        .into_iter()
        .map(|c| c.into_owned())
        .collect();
    assert_eq!(cut_texts, ["lookup {\"user\": \"mia_kim_4397\", ", "}"]);
    // An observation stands for the first recorded one that starts with its first line, not the first of all.
    let items = [
        items.as_slice(),
        &[Item::observation("bash", "first line too\nsecond")],
    ]
    .concat();
    let tail = Item::observation("bash", "first line too\n[...]\nsecond");
    let tail_texts: Vec<String> = visible(&items, &tail)
        .into_iter()
        .map(|c| c.into_owned())
        .collect();
    assert_eq!(tail_texts, ["first line too\n", "second"]);
    // Any other item a strategy wrote is read whole.
    let shadow = Item::user("Summarize the conversation so far.");
    assert_eq!(texts(&shadow), ["Summarize the conversation so far."]);
}

#[test]
fn kept_cuts_back_to_whole_tokens() {
    assert_eq!(kept("abc 12[x]", "abc 1234 end"), ["abc ", "", ""]);
    assert_eq!(kept("[x]34 end", "abc 1234 end"), ["", "", " end"]);
    assert_eq!(kept("same", "same"), ["same", "", ""]);
    assert_eq!(kept("é [x] é", "é a é"), ["é ", "", " é"]);
    assert_eq!(kept("é[x]é", "éaé"), ["", "", ""]);
    assert_eq!(kept("", "abc"), ["", "", ""]);
    // Bytes in common that end inside a character are not kept: `→` and `←` share their first two bytes.
    assert_eq!(kept("→x", "←y"), ["", "", ""]);
    // At the end too: `é` and `ũ` share their last byte.
    assert_eq!(kept(" é", " ũ"), [" ", "", ""]);
}

#[test]
fn a_preview_after_a_header_is_kept_and_a_short_start_is_not() {
    let original = format!(
        "{}ERROR E0042 at line 7\n{}",
        "setup line\n".repeat(8),
        "ok\n".repeat(500)
    );
    // Strands' offloader: a notice, the first characters of the output, the references.
    let preview = &original[..120];
    let rewritten = format!(
        "[Offloaded: 1 blocks, ~900 tokens]\nUse the preview.\n\n{preview}\n\n[Stored references:]"
    );
    let [start, inside, end] = kept(&rewritten, &original);
    assert_eq!((start, end), ("", ""));
    // Cut back to the last whole token of the original.
    assert!(
        preview.starts_with(inside) && inside.len() > 100,
        "{inside:?}"
    );
    assert!(
        inside.contains("ERROR E0042 at line 7") && inside.ends_with("ok\nok\nok\n"),
        "{inside:?}"
    );
    // A placeholder that happens to hold a short output is not a preview of it.
    let short = "ok\n";
    assert_eq!(kept("[compacted: ok\n]", short), ["", "", ""]);
    // A model's rewrite of a tool output is read whole, as written.
    let items = [Item::tool_result("c1", "bash", original.clone())];
    let refined = Item::tool_result(
        "c1",
        "bash",
        format!("{REFINED_PREFIX}The build failed: ERROR E0042 at line 7."),
    );
    assert_eq!(visible(&items, &refined).len(), 1);
    assert_eq!(reading(&refined), Reading::Written);
}

#[test]
fn the_task_gives_what_it_or_the_first_user_message_says() {
    let ep = Episode {
        task: "Fix TimeDelta rounding".into(),
        items: vec![
            Item::system("You fix bugs. Policy: refunds above $200 need approval."),
            Item::user("The output of td_field is 344, expected 345."),
            Item::tool_result("c1", "cat", "timedelta and 4719"),
            Item::user("Also check 4719."),
        ],
        ..Episode::default()
    };
    let finding = |evidence: &[&str]| Finding {
        evidence: evidence.iter().map(|e| (*e).to_owned()).collect(),
        ..Finding::default()
    };
    let task = TaskText::new(&ep);
    assert!(task.gives(&finding(&["TimeDelta"])));
    assert!(task.gives(&finding(&["td_field", "344"])));
    assert!(
        !task.gives(&finding(&["td_field", "4719"])),
        "4719 is only in a later message"
    );
    assert!(!task.gives(&finding(&["timedelta"])) || task.gives(&finding(&["TimeDelta"])));
    assert!(
        !task.gives(&finding(&["refunds above $200 need approval"])),
        "the system prompt is not the task"
    );
    assert!(!task.gives(&finding(&["34"])), "inside a longer number");
    assert!(!task.gives(&finding(&[])));
    assert!(from_task(&ep, &finding(&["TimeDelta"])));
    assert!(!from_task(&ep, &finding(&["td_field", "4719"])));
}

#[test]
fn identifying_tokens_are_what_names_the_fact() {
    assert_eq!(
        identifying_tokens("AssertionError: assert 4,719 == 4718"),
        ["4719", "4718"]
    );
    assert_eq!(
        identifying_tokens("MAX_RETRIES = 37"),
        ["max_retries", "37"]
    );
    assert_eq!(
        identifying_tokens("Applied edit to src/app/parse.py"),
        ["src/app/parse.py"]
    );
    assert_eq!(
        identifying_tokens("the error code was 'E_QUOTA' on parseDate"),
        ["e_quota", "parsedate"]
    );
    assert_eq!(
        identifying_tokens("the customer wants a refund for the broken kettle"),
        ["customer", "wants", "refund", "broken", "kettle"]
    );
    // A flag's leading dashes are not part of it; an apostrophe inside a word opens no quote; a quoted string,
    // even of one letter, is one token.
    assert_eq!(identifying_tokens("make -j4 fails"), ["j4"]);
    // Each shape alone makes a word identifying: a `_`, a `/`, an inner `.` or `:`, two capitals.
    assert_eq!(
        identifying_tokens("call parse_date from docs/notes via os.path and std::fmt for HTTP"),
        ["parse_date", "docs/notes", "os.path", "std::fmt", "http"]
    );
    assert_eq!(
        identifying_tokens("don't retry 'out of stock'"),
        ["out of stock"]
    );
    assert_eq!(identifying_tokens("the answer was 'B'"), ["b"]);
    assert_eq!(identifying_tokens("he said \"no\""), ["no"]);
    // Quotes around white space quote nothing.
    assert_eq!(identifying_tokens("press ' ' to start"), ["press", "start"]);
    let keys = identifying_tokens("MAX_RETRIES = 37");
    assert!((token_share(&keys, "max_retries is 37") - 1.0).abs() < 1e-12);
    assert!((token_share(&keys, "it is 137") - 0.0).abs() < 1e-12);
    assert!((token_share(&keys, "MAX_RETRIES") - 0.5).abs() < 1e-12);
}

/// The pieces the indexed search looks for before it puts a text in canonical form: the longest piece of the
/// evidence (of its longest identifying token, for the written rule; else of enough of its content words that a
/// text holding the evidence holds one of them), and none when one is not ASCII (every text is then searched).
#[test]
fn prefilter_pieces_are_what_a_holding_text_must_have() {
    assert_eq!(
        Needle::new("MAX_RETRIES = 37").exact_piece(),
        Some("max_retries")
    );
    assert_eq!(Needle::new("4,719 rows").exact_piece(), Some("rows"));
    assert_eq!(Needle::new("café au lait").exact_piece(), None);
    assert_eq!(
        Needle::new("Applied edit to src/app3/billing.py").written_pieces(),
        Some(vec!["src/app3/billing.py"])
    );
    // Three content words, two needed: a text that holds two of them holds one of the two longest.
    let refund = Needle::new("the refund needs approval");
    assert_eq!(refund.written_pieces(), Some(vec!["refund", "approv"]));
    for text in ["approval needed first", "refunds need a form"] {
        assert!(holds(text, Written, "the refund needs approval"), "{text}");
    }
    assert_eq!(Needle::new("café crème").written_pieces(), None);
}
