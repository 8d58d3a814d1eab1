//! [`Unit`]: what a strategy counts when it keeps "the last N" of a history.

use serde::{Deserialize, Serialize};

use super::{Item, Role};

/// What a strategy counts when it keeps "the last N" of a history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Every item (an OpenHands "event", a Letta "message").
    #[default]
    Items,
    /// Every tool result (an "observation", a "tool use").
    ToolResults,
    /// Every assistant turn: an assistant message or tool calls, with the results that follow.
    AgentTurns,
    /// Every user message with all that follows it (an Agents SDK "turn", an ADK "invocation").
    UserTurns,
    /// Every chat message as the OpenAI and Inspect AI APIs count them: an assistant turn (its text, reasoning
    /// and tool calls) is one, each tool result, observation and user message one.
    Messages,
}

impl Unit {
    /// Where each unit of `items` starts. System messages and summaries never start a unit; items before
    /// the first start belong to no unit.
    #[must_use]
    pub fn starts(self, items: &[Item]) -> Vec<usize> {
        (0..items.len())
            .filter(|&i| self.starts_at(items, i))
            .collect()
    }

    /// Where the `k`-th unit from the end starts (`k` = 1 is the last unit), scanning back only that far.
    #[must_use]
    pub fn start_of_last(self, items: &[Item], k: usize) -> Option<usize> {
        if k == 0 {
            return None;
        }
        (0..items.len())
            .rev()
            .filter(|&i| self.starts_at(items, i))
            .nth(k - 1)
    }

    /// Whether a unit starts at `items[i]`.
    fn starts_at(self, items: &[Item], i: usize) -> bool {
        let counted = |item: &Item| !item.is_role(Role::System) && !item.is_summary();
        let item = &items[i];
        counted(item)
            && match self {
                Unit::Items => true,
                Unit::ToolResults => item.is_tool_output(),
                Unit::AgentTurns => {
                    item.is_assistant_turn()
                        && (i == 0 || !items[i - 1].is_assistant_turn() || !counted(&items[i - 1]))
                }
                Unit::UserTurns => item.is_role(Role::User),
                Unit::Messages => {
                    !item.is_assistant_turn()
                        || i == 0
                        || !items[i - 1].is_assistant_turn()
                        || !counted(&items[i - 1])
                }
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{ItemKind, SUMMARY_PREFIX};

    #[test]
    fn units_start_where_expected() {
        let items = vec![
            Item::system("sys"),
            Item::user("task"),
            Item::assistant("plan"),
            Item::tool_call("c1", "ls", "{}"),
            Item::tool_result("c1", "ls", "a b"),
            Item::tool_call("c2", "cat", "{}"),
            Item::tool_result("c2", "cat", "text"),
            Item::user(format!("{SUMMARY_PREFIX}earlier work")),
            Item::user("next task"),
            Item::assistant("done"),
        ];
        assert_eq!(Unit::Items.starts(&items), vec![1, 2, 3, 4, 5, 6, 8, 9]);
        assert_eq!(Unit::ToolResults.starts(&items), vec![4, 6]);
        assert_eq!(Unit::AgentTurns.starts(&items), vec![2, 5, 9]);
        assert_eq!(Unit::UserTurns.starts(&items), vec![1, 8]);
        assert_eq!(Unit::Messages.starts(&items), vec![1, 2, 4, 5, 6, 8, 9]);
        assert_eq!(Unit::AgentTurns.start_of_last(&items, 2), Some(5));
        assert_eq!(Unit::AgentTurns.start_of_last(&items, 4), None);
        assert_eq!(Unit::ToolResults.start_of_last(&items, 0), None);
        assert_eq!(items[7].kind(), ItemKind::Summary);
    }
}
