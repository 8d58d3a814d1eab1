//! The SEARCH/REPLACE blocks of a reply in aider's `diff` edit format, read as aider reads them
//! (`find_original_update_blocks` in `aider/coders/editblock_coder.py`, v0.48–v0.51): a block opens on a line
//! `<<<<<<< SEARCH`, its search text runs to `=======`, its replacement to `>>>>>>> REPLACE`; its file is named
//! on one of the three lines before it (through fences), else it is the previous block's file. Applied, a
//! block swaps its search text for its replacement in the file, which aider sends whole with every later
//! call: the context a transcript leaves out grows by the difference.

use super::Reader;
use crate::history::usage::ContextEdit;

/// One SEARCH/REPLACE block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Block {
    pub file: String,
    pub search: String,
    pub replace: String,
}

/// A marker line, as aider matches it: 5 to 9 of `c`, then `word` (if any), then only whitespace.
fn marker(line: &str, c: char, word: &str) -> bool {
    let t = line.trim_end();
    let n = t.chars().take_while(|&x| x == c).count();
    (5..=9).contains(&n) && t[n..].trim() == word && (word.is_empty() || t[n..].starts_with(' '))
}

/// A file name on a line before a block (aider's `strip_filename`): `None` for a fence, `...` or nothing.
fn file_name(line: &str) -> Option<String> {
    let t = line.trim();
    if t == "..." || t.starts_with("```") {
        return None;
    }
    let t = t.trim_end_matches(':').trim_start_matches('#').trim();
    let t = t.trim_matches('`').trim_matches('*').replace("\\_", "_");
    (!t.is_empty()).then_some(t)
}

/// The file named on the (up to) three lines before a block, back through fences (aider's `find_filename`).
fn named_before(before: &[&str]) -> Option<String> {
    for line in before.iter().rev().take(3) {
        if let Some(name) = file_name(line) {
            return Some(name);
        }
        if !line.trim_start().starts_with("```") {
            return None;
        }
    }
    None
}

/// The complete blocks among `lines` (an unfinished one, as a reply interrupted midway leaves, is none).
pub(super) fn blocks(lines: &[&str]) -> Vec<Block> {
    let mut out = Vec::new();
    let mut file: Option<String> = None;
    let mut at = 0;
    while at < lines.len() {
        if !marker(lines[at], '<', "SEARCH") {
            at += 1;
            continue;
        }
        if let Some(name) = named_before(&lines[..at]) {
            file = Some(name);
        }
        let Some(divider) = (at + 1..lines.len()).find(|&i| marker(lines[i], '=', "")) else {
            break;
        };
        let Some(end) = (divider + 1..lines.len()).find(|&i| marker(lines[i], '>', "REPLACE"))
        else {
            break;
        };
        if let Some(f) = &file {
            out.push(Block {
                file: f.clone(),
                search: text(&lines[at + 1..divider]),
                replace: text(&lines[divider + 1..end]),
            });
        }
        at = end + 1;
    }
    out
}

/// Lines as one text, each line's trailing whitespace dropped (aider's console drops it; a reply keeps it),
/// so that a block a console message repeats is the reply's.
fn text(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether two file names are the same file (aider names a file relative to the repository, its console
/// sometimes absolutely).
pub(super) fn same_file(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"))
}

/// How the reader keeps the edits aider applied to the files in the chat.
impl Reader<'_> {
    /// Edits applied to `file` from the next call point on: the last reply's blocks for it, sized; or, where
    /// the reply holds none (a whole-file format, whose old text the transcript does not hold), a change of
    /// unknown size.
    pub(super) fn applied(&mut self, file: &str, blocks: Vec<Block>) {
        let at = self.ctx.points.len();
        if blocks.is_empty() {
            self.change();
            return;
        }
        for b in blocks {
            let edit = ContextEdit {
                call_point: at,
                file: file.to_owned(),
                added: b.replace,
                removed: b.search,
                tokens: None,
            };
            self.last_applied.push(edit.clone());
            self.ctx.edits.push(edit);
        }
        if !self.committed.iter().any(|f| same_file(f, file)) {
            self.committed.push(file.to_owned());
        }
    }

    /// The last reply's blocks for `file`, taken out of those left to apply.
    pub(super) fn blocks_of(&mut self, file: &str) -> Vec<Block> {
        let (mine, rest) = std::mem::take(&mut self.blocks)
            .into_iter()
            .partition(|b| same_file(&b.file, file));
        self.blocks = rest;
        mine
    }

    /// Some blocks failed to match and the others were applied (no `Applied edit to` then): the failed ones
    /// are the blocks the message listed since its `# N … failed to match!`.
    pub(super) fn partly_applied(&mut self) {
        self.last_applied.clear();
        self.linted = false;
        self.last_commit = None;
        let failed = self.failed_blocks();
        let mut applied = std::mem::take(&mut self.blocks);
        for f in failed {
            if let Some(i) = applied.iter().position(|b| {
                same_file(&b.file, &f.file) && b.search == f.search && b.replace == f.replace
            }) {
                applied.remove(i);
            }
        }
        let mut files: Vec<String> = Vec::new();
        for b in &applied {
            if !files.iter().any(|f| f == &b.file) {
                files.push(b.file.clone());
            }
        }
        for file in files {
            let (mine, rest): (Vec<_>, Vec<_>) = applied.into_iter().partition(|b| b.file == file);
            applied = rest;
            self.applied(&file, mine);
        }
    }

    /// The blocks a `# N SEARCH/REPLACE blocks failed to match!` message listed, since it began.
    fn failed_blocks(&self) -> Vec<Block> {
        const NAMED: &str =
            "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in ";
        let Some(from) = self.since.iter().rposition(|m| {
            m.first()
                .is_some_and(|l| l.starts_with("# ") && l.contains("failed to match"))
        }) else {
            return Vec::new();
        };
        let lines: Vec<String> = self.since[from..]
            .iter()
            .flat_map(|m| m.iter())
            .map(|l| {
                l.strip_prefix(NAMED)
                    .map_or_else(|| (*l).to_owned(), str::to_owned)
            })
            .collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        blocks(&lines)
    }

    /// `/undo` removed commit `removed` (`hash message`): where it is the commit of the last edits applied,
    /// and no lint commit came after it, the files go back by those edits; otherwise by an unknown size.
    pub(super) fn undone(&mut self, removed: &str) {
        let hash = removed.split_whitespace().next().unwrap_or("");
        let theirs = !self.linted
            && !self.last_applied.is_empty()
            && self
                .last_commit
                .as_deref()
                .is_some_and(|c| !hash.is_empty() && c.starts_with(hash));
        let at = self.ctx.points.len();
        if theirs {
            for e in std::mem::take(&mut self.last_applied).into_iter().rev() {
                self.ctx.edits.push(ContextEdit {
                    call_point: at,
                    added: e.removed,
                    removed: e.added,
                    ..e
                });
            }
        } else {
            self.last_applied.clear();
            self.change();
        }
        self.last_commit = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_read_as_aider_reads_them() {
        let reply = "Here:\n\naider/x.py\n```python\n<<<<<<< SEARCH\na = 1   \n=======\na = 2\nb = 3\n\
            >>>>>>> REPLACE\n```\n\nAnd without a name, the same file:\n\n```python\n<<<<<<< SEARCH\n\
            c\n=======\n>>>>>>> REPLACE\n```\n\n**tests/y.py**\n```\n<<<<<<< SEARCH\n=======\nnew\n\
            >>>>>>> REPLACE\n```\n\nunfinished.py\n```\n<<<<<<< SEARCH\nz\n";
        let lines: Vec<&str> = reply.lines().collect();
        let b = blocks(&lines);
        assert_eq!(
            b,
            [
                Block {
                    file: "aider/x.py".into(),
                    search: "a = 1".into(),
                    replace: "a = 2\nb = 3".into()
                },
                Block {
                    file: "aider/x.py".into(),
                    search: "c".into(),
                    replace: String::new()
                },
                Block {
                    file: "tests/y.py".into(),
                    search: String::new(),
                    replace: "new".into()
                },
            ]
        );
        assert!(same_file("/Users/a/p/aider/x.py", "aider/x.py"));
        assert!(!same_file("aider/x.py", "aider/y.py"));
        assert!(!marker("<<<<<<< SEARCHING", '<', "SEARCH"));
        assert!(marker("=======  ", '=', ""));
    }
}
