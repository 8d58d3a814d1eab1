//! Tool calls and results stay together: what every strategy that drops items uses to keep a request an API
//! accepts (a result without its call, or a call whose results all went, is rejected).

use rustc_hash::{FxBuildHasher, FxHashSet};

use crate::history::Item;

/// Keeps the items whose flag is set, and keeps tool calls and results paired: a kept result whose call is
/// not kept goes, and so does a kept call whose results all go. Returns the flags it kept by (one per item
/// handed in; the number dropped is the number unset).
pub fn retain_paired(items: &mut Vec<Item>, keep: &[bool]) -> Vec<bool> {
    let keep = paired(items, keep);
    let mut flags = keep.iter();
    items.retain(|_| flags.next().copied().unwrap_or(true));
    keep
}

/// The flags [`retain_paired`] keeps by.
#[must_use]
pub fn paired(items: &[Item], keep: &[bool]) -> Vec<bool> {
    // Sized once: a sliding window pairs every item of its window at every call point.
    let tools = items.iter().filter(|i| i.call_id().is_some()).count();
    let mut kept_calls: FxHashSet<&str> = FxHashSet::with_capacity_and_hasher(tools, FxBuildHasher);
    let mut answered: FxHashSet<&str> = FxHashSet::with_capacity_and_hasher(tools, FxBuildHasher);
    let mut unanswered: FxHashSet<&str> = FxHashSet::default();
    for (item, &k) in items.iter().zip(keep) {
        match item {
            Item::ToolCall { id, .. } if k => {
                kept_calls.insert(id);
            }
            Item::ToolResult { call_id, .. } if k => {
                answered.insert(call_id);
            }
            Item::ToolResult { call_id, .. } => {
                unanswered.insert(call_id);
            }
            _ => {}
        }
    }
    items
        .iter()
        .zip(keep)
        .map(|(item, &k)| {
            k && match item {
                Item::ToolResult { call_id, .. } => kept_calls.contains(&**call_id),
                Item::ToolCall { id, .. } => {
                    answered.contains(&**id) || !unanswered.contains(&**id)
                }
                _ => true,
            }
        })
        .collect()
}
