//! The aider importer by hand: token reports, commands, models, what changes what aider sends, edits.
use super::*;

#[test]
fn token_reports_in_both_forms() {
    let (u, rounded) =
        usage_of("Tokens: 13,749 sent, 618 received. Cost: $0.05 request, $0.05 session.").unwrap();
    assert_eq!(
        (u.input_tokens, u.output_tokens, rounded),
        (13_749, 618, false)
    );
    let (u, rounded) = usage_of("Tokens: 5.8k sent, 2.1k cache write, 380 received.").unwrap();
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cache_write_tokens,
            rounded
        ),
        (5_800, 380, Some(2_100), true)
    );
    assert!(usage_of("Applied edit to x.py").is_none());
}

/// What aider sends besides the history changes where the transcript shows it: `/add` before the first
/// call, an applied edit (the next call sends the file as edited), `/ask question` (the ask prompt for its
/// one call, the main prompt again after it), `/undo` (the files back as they were); a failed edit and a
/// `/run` (its output is in the history) change nothing.
#[test]
fn changes_to_what_aider_sends_are_recorded() {
    let text = "# aider chat started at 2024-08-21 09:31:03\n\n\
        > Aider v0.51.2-dev  \n\
        > Main model: claude-3-5-sonnet-20240620 with diff edit format, infinite output  \n\n\
        #### /add a.py  \n\
        > Added /x/a.py to the chat  \n\n\
        #### first  \n\nOne.\n\n> Tokens: 1,000 sent, 10 received.  \n\
        > Applied edit to a.py  \n\
        > Commit abc1234 fix: one  \n\n\
        #### second  \n\nTwo.\n\n> Tokens: 1,100 sent, 10 received.  \n\
        > Did not apply edit to a.py (--dry-run)  \n\n\
        #### /ask why  \n\n\
        ####  why  \n\nBecause.\n\n> Tokens: 900 sent, 10 received.  \n\n\
        #### third  \n\nThree.\n\n> Tokens: 1,200 sent, 10 received.  \n\n\
        #### /undo  \n\
        > Removed: abc1234 fix: one  \n\n\
        #### fourth  \n\nFour.\n\n> Tokens: 1,150 sent, 10 received.  \n";
    let eps = import(text, Path::new("h.md")).unwrap();
    assert_eq!(eps.len(), 1);
    let usage = ProviderUsage::of(&eps[0]).unwrap();
    assert_eq!(usage.calls.len(), 5);
    assert_eq!(usage.context_changes, [0, 1, 2, 3, 4]);
}

/// An applied edit whose SEARCH/REPLACE blocks the reply holds is no change point: its text is kept
/// (`meta.usage.context_edits`, from the next call point on) for the fit to size. `/undo` of that edit's
/// commit reverts it; where blocks failed to match, the others applied; a file aider committed and must
/// commit again before applying edits changed outside aider (a change point at the call just answered),
/// and a lint commit after an edit's is a change of unknown size.
#[test]
fn applied_edits_are_kept_with_their_text() {
    let text = "# aider chat started at 2024-08-21 09:31:03\n\n\
        > Aider v0.51.2-dev  \n\
        > Main model: claude-3-5-sonnet-20240620 with diff edit format, infinite output  \n\n\
        #### /add a.py b.py  \n\
        > Added /x/a.py to the chat  \n\n\
        #### first  \n\na.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\ny = 3\n\
        >>>>>>> REPLACE\n```\n\n> Tokens: 1,000 sent, 10 received.  \n\
        > Applied edit to a.py  \n\
        > Commit abc1234 fix: one  \n\n\
        #### /undo  \n\
        > Removed: abc1234 fix: one  \n\
        > Now at:  0000000 start  \n\n\
        #### second  \n\na.py\n```\n<<<<<<< SEARCH\ny = 3\n=======\n>>>>>>> REPLACE\n```\n\n\
        b.py\n```\n<<<<<<< SEARCH\n=======\nz\n>>>>>>> REPLACE\n```\n\n\
        > Tokens: 1,100 sent, 10 received.  \n\
        > # 1 SEARCH/REPLACE block failed to match!  \n\
        >   \n\
        > ## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in b.py  \n\
        > <<<<<<< SEARCH  \n\
        > =======  \n\
        > z  \n\
        > >>>>>>> REPLACE  \n\
        >   \n\
        > # The other 1 SEARCH/REPLACE block were applied successfully.  \n\n\
        #### third  \n\na.py\n```\n<<<<<<< SEARCH\nx = 2\n=======\nx = 3\n>>>>>>> REPLACE\n```\n\n\
        > Tokens: 1,200 sent, 10 received.  \n\
        > Committing a.py before applying edits.  \n\
        > Commit 1111111 fix: outside  \n\
        > Applied edit to a.py  \n\
        > Commit 2222222 fix: three  \n\
        > Commit 3333333 style: lint  \n\n\
        #### fourth  \n\nFour.\n\n> Tokens: 1,300 sent, 10 received.  \n";
    let eps = import(text, Path::new("h.md")).unwrap();
    assert_eq!(eps.len(), 1);
    let usage = ProviderUsage::of(&eps[0]).unwrap();
    assert_eq!(usage.calls.len(), 4);
    assert_eq!(usage.context_changes, [0, 2, 3]);
    let edits: Vec<(usize, &str, &str, &str)> = usage
        .context_edits
        .iter()
        .map(|e| {
            (
                e.call_point,
                e.file.as_str(),
                e.added.as_str(),
                e.removed.as_str(),
            )
        })
        .collect();
    assert_eq!(
        edits,
        [
            (1, "a.py", "x = 2\ny = 3", "x = 1"),
            (1, "a.py", "x = 1", "x = 2\ny = 3"),
            (2, "a.py", "", "y = 3"),
            (3, "a.py", "x = 3", "x = 2"),
        ]
    );
    assert!(usage.context_edits.iter().all(|e| e.tokens.is_none()));
}

#[test]
fn commands_resolve_as_aider_resolves_them() {
    assert_eq!(command("/cle"), Some(("clear", "")));
    assert_eq!(command("/clean"), None);
    assert_eq!(command("/c"), None);
    assert_eq!(command("/test pytest -k x"), Some(("test", " pytest -k x")));
    assert_eq!(command("!ls"), Some(("run", "ls")));
    assert_eq!(command("/ex"), Some(("exit", "")));
    assert_eq!(command("hello"), None);
}

#[test]
fn the_main_model_of_each_announcement() {
    for (line, model) in [
        (
            "Main model: claude-3-5-sonnet-20240620 with diff edit format, infinite output",
            Some("claude-3-5-sonnet-20240620"),
        ),
        (
            "Models: openrouter/anthropic/claude-3.5-sonnet with ask edit format, weak model x",
            Some("openrouter/anthropic/claude-3.5-sonnet"),
        ),
        (
            "Model: claude-3-haiku-20240307 with ♾️ whole edit format",
            Some("claude-3-haiku-20240307"),
        ),
        ("Model: gpt-4 using diff edit format", Some("gpt-4")),
        ("Weak model: claude-3-haiku-20240307", None),
        ("Tokens: 5.8k sent", None),
    ] {
        assert_eq!(announced_model(line), model, "{line}");
    }
}

/// The header's model answers until `/model` announces another; a `/clear` keeps the model in force.
#[test]
fn a_model_switch_is_a_switch_from_the_next_reply_on() {
    let text = "# aider chat started at 2024-08-08 10:12:57\n\n\
        > Aider v0.48.2-dev  \n\
        > Models: claude-3-5-sonnet-20240620 with diff edit format, weak model claude-3-haiku-20240307  \n\n\
        #### first  \n\nOne.\n\n> Tokens: 1,000 sent, 10 received.  \n\n\
        #### /model gpt-4o  \n\n\
        > Aider v0.48.2-dev  \n\
        > Models: gpt-4o with diff edit format, weak model gpt-4o-mini  \n\n\
        #### second  \n\nTwo.\n\n> Tokens: 1,100 sent, 10 received.  \n\n\
        #### third  \n\nThree.\n\n> Tokens: 1,200 sent, 10 received.  \n\n\
        #### /clear  \n\n\
        #### fourth  \n\nFour.\n\n> Tokens: 900 sent, 10 received.  \n";
    let eps = import(text, Path::new("h.md")).unwrap();
    assert_eq!(eps.len(), 2);
    assert_eq!(eps[0].model.as_deref(), Some("gpt-4o"));
    assert_eq!(
        (0..3).map(|k| eps[0].model_at(k)).collect::<Vec<_>>(),
        [
            Some("claude-3-5-sonnet-20240620"),
            Some("gpt-4o"),
            Some("gpt-4o")
        ]
    );
    assert_eq!(eps[1].models(), [("gpt-4o", 1)]);
}

/// By hand, the interrupted-reply rule (aider's `send_message` at v0.48–v0.72.1: the partial text, then
/// `\n^C KeyboardInterrupt`, joins the history and goes with the next prompt; from v0.72.2 a note instead):
/// the reply is a call point without usage, its complete SEARCH/REPLACE block is not applied (aider returns
/// before applying edits), and the next prompt follows it.
#[test]
fn an_interrupted_reply_is_kept_as_aider_keeps_it() {
    let session = |version: &str| {
        format!(
            "# aider chat started at 2024-08-09 19:32:47\n\n\
             > Aider v{version}  \n\
             > Models: claude-3-5-sonnet-20240620 with diff edit format, weak model x  \n\n\
             #### first  \n\n\
             >  \n\
             >  \n\
             > ^C again to exit  \n\n\
             Sure.\n\na.py\n```\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n\nAnd th\n\n\
             #### second  \n\nTwo.\n\n> Tokens: 1,100 sent, 10 received.  \n"
        )
    };
    for (version, kept) in [
        (
            "0.48.2-dev",
            "Sure.\n\na.py\n```\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n\nAnd th\n\
             ^C KeyboardInterrupt",
        ),
        ("0.72.2", "I see that you interrupted my previous reply."),
    ] {
        let eps = import(&session(version), Path::new("h.md")).unwrap();
        let ep = &eps[0];
        let usage = ProviderUsage::of(ep).unwrap();
        assert_eq!(usage.unrecorded.len(), 1, "{version}");
        assert_eq!(usage.unrecorded[0].call_point, 0);
        assert_eq!(usage.calls.len(), 1);
        assert!(usage.context_edits.is_empty(), "{version}");
        let texts: Vec<(Role, &str)> = ep
            .items
            .iter()
            .filter_map(|i| match i {
                crate::history::Item::Message { role, content } => Some((*role, &content[..])),
                _ => None,
            })
            .collect();
        assert_eq!(
            texts,
            [
                (Role::User, "first"),
                (Role::Assistant, kept),
                (Role::User, "second"),
                (Role::Assistant, "Two.")
            ],
            "{version}"
        );
    }
}

/// aider's summary of older turns, by its rule: two applied edits whose turns pass 2,048 of aider's tokens
/// (Claude 3.5 Sonnet's budget: its window is 200k) are summarized, and the next call sends the summary (not
/// in the transcript), the commit note and the prompt: the as-recorded request drops the older turns from
/// call point 2 on, which is a change point of the unrecorded context. Each reply is `x` repeated, 1,000 or
/// 900 tokens of cl100k_base; with 900 the turns stay under the budget and nothing is summarized.
#[test]
fn older_turns_are_summarized_past_aiders_budget() {
    use crate::history::recorded::RecordedCompaction;
    use crate::history::Item;
    let transcript = |words: usize| {
        let reply = vec!["x"; words].join(" ");
        format!(
            "# aider chat started at 2024-08-09 16:16:42\n\n\
             > Aider v0.48.2-dev  \n\
             > Models: claude-3-5-sonnet-20240620 with diff edit format, weak model claude-3-haiku-20240307  \n\n\
             #### first  \n\n{reply}\n\n> Tokens: 3,000 sent, 1,000 received.  \n\
             > Applied edit to a.py  \n\
             > Commit aaa1111 fix: one  \n\n\
             #### second  \n\n{reply}\n\n> Tokens: 4,000 sent, 1,000 received.  \n\
             > Applied edit to a.py  \n\
             > Commit bbb2222 fix: two  \n\n\
             #### third  \n\nThree.\n\n> Tokens: 2,500 sent, 10 received.  \n"
        )
    };
    let eps = import(&transcript(1000), Path::new("h.md")).unwrap();
    let ep = &eps[0];
    // aider's counts: each reply 1,000 tokens of text and 11 of its JSON; done_messages after the second
    // edit hold both prompts, replies, the first commit note and "Ok.": 2,087 (Python's tiktoken of
    // `json.dumps`), past 2,048.
    assert_eq!(
        summary::aider_tokens("assistant", &vec!["x"; 1000].join(" ")),
        1011
    );
    let recorded = RecordedCompaction::of(ep).expect("a summary");
    assert_eq!(recorded.compactions.len(), 1);
    assert_eq!(recorded.compactions[0].call_point, 2);
    assert!(recorded.compactions[0].unseen_summary);
    let points = ep.call_points();
    // Before the summary, the history as recorded.
    assert_eq!(recorded.request(&ep.items, 1), None);
    // From call point 2: the last commit note (aider's tail, under half the budget) and the prompt; the
    // summary is no item (its size is the unrecorded context's).
    let sent = recorded.request(&ep.items, 2).unwrap();
    assert_eq!(
        sent.iter().map(Item::text).collect::<Vec<_>>(),
        [
            "I committed the changes with git hash bbb2222 & commit msg: fix: two",
            "third"
        ]
    );
    assert_eq!(points.len(), 3);
    let usage = ProviderUsage::of(ep).unwrap();
    assert!(crate::replay::fit::changes(ep, &usage).contains(&2));
    // 900 tokens a reply: 1,887 of aider's tokens (Python's tiktoken of `json.dumps`), under the budget.
    let eps = import(&transcript(900), Path::new("h.md")).unwrap();
    assert!(RecordedCompaction::of(&eps[0]).is_none());
}

/// aider's `Tokens:` report is its own count where each reply's received figure is the reply's cl100k_base
/// count: "One two three." is 4 cl100k tokens, "Four five." 3. Then its prompt counts are litellm's too,
/// o200k_base for a gpt-4o model, cl100k_base for any other; a received figure 1% or more off (the provider's
/// count), rounded reports, or none equal, and it says nothing.
#[test]
fn aiders_own_count_is_named() {
    let session = |model: &str, received: (u32, u32)| {
        format!(
            "# aider chat started at 2024-08-09 16:16:42\n\n\
             > Aider v0.48.2-dev  \n\
             > Models: {model} with diff edit format, weak model claude-3-haiku-20240307  \n\n\
             #### first  \n\nOne two three.\n\n> Tokens: 1,000 sent, {} received.  \n\n\
             #### second  \n\nFour five.\n\n> Tokens: 1,100 sent, {} received.  \n",
            received.0, received.1
        )
    };
    let counted_by = |text: &str| {
        let eps = import(text, Path::new("h.md")).unwrap();
        ProviderUsage::of(&eps[0]).unwrap().counted_by
    };
    let claude = "claude-3-5-sonnet-20240620";
    assert_eq!(
        counted_by(&session(claude, (4, 3))).as_deref(),
        Some("cl100k_base")
    );
    assert_eq!(
        counted_by(&session("gpt-4o-2024-05-13", (4, 3))).as_deref(),
        Some("o200k_base")
    );
    // The provider's count of the same replies (Claude's tokenizer: 5 and 4).
    assert_eq!(counted_by(&session(claude, (5, 4))), None);
    // Rounded reports cannot say.
    let rounded = session(claude, (4, 3)).replace("1,000 sent", "1.0k sent");
    assert_eq!(counted_by(&rounded), None);
}
