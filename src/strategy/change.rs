//! [`Change`]: what a strategy did to the request, as far as the replay may rely on it.

use crate::llm::LlmRequest;

/// What a strategy did to the request, as far as the replay may rely on it.
///
/// Each variant is a promise about the request after the strategy against the request as handed in; the
/// replay trusts it to skip work, and checks it in debug builds and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Instructions and contents are exactly as handed in.
    Unchanged,
    /// Instructions are as handed in; the contents are the handed-in items whose flag is set, in order (one
    /// flag per item handed in).
    Dropped(Vec<bool>),
    /// Instructions and the first `kept_prefix` content items are as handed in; the rest may differ.
    Rewrote {
        /// Content items at the start left as they were.
        kept_prefix: usize,
    },
    /// Anything may differ, instructions included.
    Replaced,
}

impl Change {
    /// Whether the request may differ from the one handed in.
    #[must_use]
    pub fn is_change(&self) -> bool {
        *self != Change::Unchanged
    }

    /// The change of `self` followed by `then` (which saw the request as `self` left it).
    #[must_use]
    pub fn then(self, then: Change) -> Change {
        use Change::{Dropped, Replaced, Rewrote, Unchanged};
        let first_dropped = |kept: &[bool]| kept.iter().position(|&k| !k).unwrap_or(kept.len());
        match (self, then) {
            (first, Unchanged) => first,
            (Unchanged, then) => then,
            (Replaced, _) | (_, Replaced) => Replaced,
            (Dropped(first), Dropped(then)) => {
                // `then` chose among the items `first` kept.
                if first.iter().filter(|&&k| k).count() != then.len() {
                    return Replaced;
                }
                let mut then = then.into_iter();
                Dropped(
                    first
                        .into_iter()
                        .map(|kept| kept && then.next().unwrap_or(false))
                        .collect(),
                )
            }
            // Before the first dropped item the indices of both requests agree.
            (Dropped(first), Rewrote { kept_prefix }) => Rewrote {
                kept_prefix: kept_prefix.min(first_dropped(&first)),
            },
            (Rewrote { kept_prefix }, Dropped(then)) => Rewrote {
                kept_prefix: kept_prefix.min(first_dropped(&then)),
            },
            (Rewrote { kept_prefix: a }, Rewrote { kept_prefix: b }) => Rewrote {
                kept_prefix: a.min(b),
            },
        }
    }

    /// Checks the declaration against the request as handed in (`before`) and as left (`after`): `Err` says
    /// how it is wrong.
    ///
    /// # Errors
    /// When the request does not match what the change promises.
    pub fn verify(
        &self,
        before: &LlmRequest,
        after: &LlmRequest,
    ) -> std::result::Result<(), String> {
        let same_instructions = || {
            if before.instructions == after.instructions {
                Ok(())
            } else {
                Err("the instructions changed".to_owned())
            }
        };
        match self {
            Change::Replaced => Ok(()),
            Change::Unchanged => {
                same_instructions()?;
                match (0..before.contents.len().max(after.contents.len()))
                    .find(|&i| before.contents.get(i) != after.contents.get(i))
                {
                    None => Ok(()),
                    Some(i) => Err(format!("content item {i} changed")),
                }
            }
            Change::Dropped(kept) => {
                same_instructions()?;
                if kept.len() != before.contents.len() {
                    return Err(format!(
                        "{} flags for {} items handed in",
                        kept.len(),
                        before.contents.len()
                    ));
                }
                let expected: Vec<&crate::history::Item> = before
                    .contents
                    .iter()
                    .zip(kept)
                    .filter(|(_, &k)| k)
                    .map(|(i, _)| i)
                    .collect();
                if expected.len() != after.contents.len()
                    || expected.iter().zip(&after.contents).any(|(a, b)| *a != b)
                {
                    return Err("the items left are not the flagged items handed in".to_owned());
                }
                Ok(())
            }
            Change::Rewrote { kept_prefix } => {
                same_instructions()?;
                if *kept_prefix > before.contents.len() || *kept_prefix > after.contents.len() {
                    return Err(format!(
                        "kept_prefix {kept_prefix} is past the end of the request"
                    ));
                }
                match (0..*kept_prefix).find(|&i| before.contents[i] != after.contents[i]) {
                    None => Ok(()),
                    Some(i) => Err(format!("content item {i}, inside the kept prefix, changed")),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Item;

    #[test]
    fn changes_compose() {
        use Change::{Dropped, Replaced, Rewrote, Unchanged};
        // Of five items the first drops the second and fourth; of the three left the next drops the first.
        let both =
            Dropped(vec![true, false, true, false, true]).then(Dropped(vec![false, true, true]));
        assert_eq!(both, Dropped(vec![false, false, true, false, true]));
        // A mask that does not fit what was kept is no knowledge.
        for then in [vec![true, true, true], vec![true]] {
            assert_eq!(
                Dropped(vec![true, false, true]).then(Dropped(then)),
                Replaced
            );
        }
        assert_eq!(
            Dropped(vec![true, false]).then(Unchanged),
            Dropped(vec![true, false])
        );
        assert_eq!(
            Unchanged.then(Rewrote { kept_prefix: 4 }),
            Rewrote { kept_prefix: 4 }
        );
        // Items before the first drop keep their index: a rewrite after it keeps at most that prefix.
        assert_eq!(
            Dropped(vec![true, true, false, true]).then(Rewrote { kept_prefix: 3 }),
            Rewrote { kept_prefix: 2 }
        );
        assert_eq!(
            Rewrote { kept_prefix: 3 }.then(Dropped(vec![true, false, true, true])),
            Rewrote { kept_prefix: 1 }
        );
        assert_eq!(
            Rewrote { kept_prefix: 3 }.then(Rewrote { kept_prefix: 5 }),
            Rewrote { kept_prefix: 3 }
        );
        assert_eq!(Replaced.then(Unchanged), Replaced);
        assert_eq!(Rewrote { kept_prefix: 0 }.then(Replaced), Replaced);
    }

    #[test]
    fn a_wrong_declaration_is_caught() {
        let before =
            LlmRequest::from_contents(vec![Item::user("a"), Item::assistant("b"), Item::user("c")]);
        let mut after = before.clone();
        after.contents.remove(1);
        assert!(Change::Dropped(vec![true, false, true])
            .verify(&before, &after)
            .is_ok());
        assert!(Change::Rewrote { kept_prefix: 1 }
            .verify(&before, &after)
            .is_ok());
        assert!(Change::Replaced.verify(&before, &after).is_ok());
        let err = Change::Unchanged.verify(&before, &after).unwrap_err();
        assert!(err.contains("item 1"), "{err}");
        assert!(Change::Dropped(vec![true, true, false])
            .verify(&before, &after)
            .is_err());
        assert!(Change::Dropped(vec![true, false])
            .verify(&before, &after)
            .is_err());
        assert!(Change::Rewrote { kept_prefix: 2 }
            .verify(&before, &after)
            .is_err());
        let mut summarized = before.clone();
        summarized.append_instructions("summary");
        let err = Change::Rewrote { kept_prefix: 0 }
            .verify(&before, &summarized)
            .unwrap_err();
        assert!(err.contains("instructions"), "{err}");
    }
}
