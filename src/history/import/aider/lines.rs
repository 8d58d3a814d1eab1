//! The blocks of one aider session's lines: what aider wrote itself (user input, console output) and the
//! model's replies between.
//!
//! aider's own line shapes win over anything a reply holds: every line aider writes with `append_chat_history`
//! ends in two spaces (`#### …  ` for the user's input, `> …  ` for console output). So a user line ending in
//! two spaces, or a console line ending in two spaces, always ends a reply, whatever code fence the reply left
//! open (a reply interrupted with ^C can stop inside one). A model's own `#### ` heading, or a `> ` quote,
//! does not end in two spaces and stays in its reply.
//!
//! A console message of several lines is written with `> ` on its first line only, the others raw, and two
//! spaces after its last (`/run` and `/test` output, `Now at: …` and a commit body, `Tokens: …` with `Cost:`
//! on the next line): it runs, blank lines included, to the next line ending in two spaces after a
//! non-space.

/// One block of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Block<'a> {
    /// Consecutive user lines (`#### `), prefix and aider's two trailing spaces removed.
    User(Vec<&'a str>),
    /// One console message: its lines, the `> ` of the first and the two trailing spaces of the last removed.
    Console(Vec<&'a str>),
    /// A reply of the model: its lines as written.
    Reply(Vec<&'a str>),
}

/// The line without aider's two trailing spaces, when it has them.
fn unpadded(line: &str) -> Option<&str> {
    line.strip_suffix("  ")
}

/// Whether `line` ends a console message of several lines: two trailing spaces after a non-space (aider
/// strips the message, so its last line ends in a non-space; a raw line of spaces only is not the end).
fn ends_message(line: &str) -> bool {
    unpadded(line).is_some_and(|l| l.chars().last().is_some_and(|c| !c.is_whitespace()))
}

/// Whether `line` is a console line (`> …`, `>` alone).
fn is_console(line: &str) -> bool {
    line == ">" || line.starts_with("> ") || (line.starts_with('>') && line[1..].trim().is_empty())
}

/// A console line's text: `>` and one space removed, and aider's two trailing spaces.
fn console_text(line: &str) -> &str {
    let rest = &line[1..];
    let rest = unpadded(rest).unwrap_or(rest);
    rest.strip_prefix(' ').unwrap_or(rest)
}

/// A user line's text: `####` and one space removed, and aider's two trailing spaces.
fn user_text(line: &str) -> &str {
    let rest = &line[4..];
    let rest = unpadded(rest).unwrap_or(rest);
    rest.strip_prefix(' ').unwrap_or(rest)
}

/// Whether the console line at `at` that does not end in two spaces opens a message of several lines rather
/// than quoting inside a reply: its end (a line ending in two spaces) comes before the next blank line.
fn opens_message(lines: &[&str], at: usize) -> bool {
    lines[at..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .any(|l| ends_message(l))
}

/// The blocks of a session's lines.
pub(super) fn blocks<'a>(lines: &[&'a str]) -> Vec<Block<'a>> {
    let mut out: Vec<Block<'a>> = Vec::new();
    // An open console message of several lines, waiting for its last.
    let mut open: Option<Vec<&'a str>> = None;
    let mut after_blank = true;
    // Where aider pads its user lines (every version since 2023), a `#### ` line without the padding outside a
    // reply is a reply's heading, unless it is a command; an older or edited transcript pads none.
    let padded_users = lines
        .iter()
        .any(|l| l.starts_with("####") && unpadded(l).is_some());
    for (at, &line) in lines.iter().enumerate() {
        let padded = unpadded(line).is_some();
        let user = line.starts_with("####");
        if let Some(mut message) = open.take() {
            if !(user && padded) {
                if ends_message(line) {
                    message.push(unpadded(line).unwrap_or(line));
                    out.push(Block::Console(message));
                } else {
                    message.push(line);
                    open = Some(message);
                }
                continue;
            }
            // A user line ends even a message that never wrote its last line.
            out.push(Block::Console(message));
        }
        let in_reply = matches!(out.last(), Some(Block::Reply(_)));
        let loose_user =
            user && !in_reply && (!padded_users || line[4..].trim_start().starts_with('/'));
        if user && (padded || loose_user) {
            match out.last_mut() {
                Some(Block::User(prompt)) if !after_blank => prompt.push(user_text(line)),
                _ => out.push(Block::User(vec![user_text(line)])),
            }
        } else if is_console(line) && (padded || !in_reply || opens_message(lines, at)) {
            if padded || line.len() <= 1 {
                out.push(Block::Console(vec![console_text(line)]));
            } else {
                open = Some(vec![console_text(line)]);
            }
        } else if line.trim().is_empty() {
            if let Some(Block::Reply(reply)) = out.last_mut() {
                reply.push("");
            }
            after_blank = true;
            continue;
        } else if let Some(Block::Reply(reply)) = out.last_mut() {
            reply.push(line);
        } else {
            out.push(Block::Reply(vec![line]));
        }
        after_blank = false;
    }
    if let Some(message) = open {
        out.push(Block::Console(message));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> Vec<Block<'_>> {
        blocks(&text.lines().collect::<Vec<_>>())
    }

    #[test]
    fn a_user_line_ends_a_reply_left_inside_a_fence() {
        let b = of("#### go  \n\nHere:\n```python\nfrom aider\n\n#### next  \n> Tokens: 1 sent, 2 received.  \n");
        assert_eq!(
            b,
            [
                Block::User(vec!["go"]),
                Block::Reply(vec!["Here:", "```python", "from aider", ""]),
                Block::User(vec!["next"]),
                Block::Console(vec!["Tokens: 1 sent, 2 received."]),
            ]
        );
    }

    #[test]
    fn a_reply_may_open_with_a_heading() {
        let b = of("#### q  \n\n#### Step 1\ndo it\n\n> Tokens: 1 sent, 1 received.  \n");
        assert_eq!(b[1], Block::Reply(vec!["#### Step 1", "do it", ""]));
        // A transcript that pads no user line (an edited page) has its user lines unpadded.
        let b = of("#### /run pytest\n> ok  \n");
        assert_eq!(b[0], Block::User(vec!["/run pytest"]));
    }

    #[test]
    fn a_heading_or_a_quote_without_two_spaces_stays_in_its_reply() {
        let b = of(
            "#### q  \n\n#### `Coder` Class\n> a quote\nmore\n\n> Tokens: 1 sent, 1 received.  \n",
        );
        assert_eq!(
            b[1],
            Block::Reply(vec!["#### `Coder` Class", "> a quote", "more", ""])
        );
        assert_eq!(b.len(), 3);
    }

    #[test]
    fn a_console_message_runs_to_its_last_line_blank_lines_included() {
        let b = of("#### /test pytest  \n> ===== start\nraw\n\n>   assert x\n=== 1 failed ===  \n> ===== start  \n");
        assert_eq!(
            b,
            [
                Block::User(vec!["/test pytest"]),
                Block::Console(vec![
                    "===== start",
                    "raw",
                    "",
                    ">   assert x",
                    "=== 1 failed ==="
                ]),
                Block::Console(vec!["===== start"]),
            ]
        );
        // `Tokens:` with `Cost:` on the next line, right after a reply.
        let b =
            of("#### q  \n\nok\n\n> Tokens: 5.8k sent, 380 received.\nCost: $0.02 message.  \n");
        assert_eq!(
            b[2],
            Block::Console(vec![
                "Tokens: 5.8k sent, 380 received.",
                "Cost: $0.02 message."
            ])
        );
    }

    #[test]
    fn console_text_keeps_what_aider_did_not_strip() {
        assert_eq!(console_text(">     mp = None  "), "    mp = None");
        assert_eq!(console_text(">   "), "");
        assert_eq!(console_text(">  "), "");
        assert_eq!(console_text(">"), "");
        assert_eq!(user_text("####  pardon?  "), " pardon?");
    }
}
