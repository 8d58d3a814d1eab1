//! Strands' own estimate of tokens (`strands/models/model.py` `_estimate_tokens_with_heuristic`, 1.62.0:
//! characters / 4 of a text, characters / 2 of JSON) and its truncation preview (`methods/truncate.py`).

use crate::history::Item;

/// Strands' share of a preview kept from the head (`methods/truncate.py`, `head_tail`).
const HEAD_SHARE: f64 = 0.6;

/// Strands' estimate of a text: its characters / 4, rounded up.
pub(super) fn quarter(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Strands' estimate of an item as a content block.
pub(super) fn item_estimate(item: &Item) -> usize {
    match item {
        Item::ToolCall {
            name, arguments, ..
        } => quarter(name) + python_json_len(arguments).div_ceil(2),
        Item::Unrecorded { .. } => 0,
        other => quarter(other.text()),
    }
}

/// Strands' estimate of the items `keep` selects.
pub(super) fn estimate(items: &[Item], keep: impl Fn(&Item) -> bool) -> usize {
    items.iter().filter(|i| keep(i)).map(item_estimate).sum()
}

/// The characters of `json.dumps(input)` for a call's arguments as Strands holds them: parsed when they are
/// JSON, the text itself (a JSON string) when not; Python's separators (`, ` and `: `) and ASCII escapes.
pub(super) fn python_json_len(arguments: &str) -> usize {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value) => json_len(&value),
        Err(_) => string_len(arguments),
    }
}

pub(super) fn json_len(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match value {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => string_len(s),
        Value::Array(a) => {
            2 + a.iter().map(json_len).sum::<usize>() + 2 * a.len().saturating_sub(1)
        }
        Value::Object(o) => {
            2 + o
                .iter()
                .map(|(k, v)| string_len(k) + 2 + json_len(v))
                .sum::<usize>()
                + 2 * o.len().saturating_sub(1)
        }
    }
}

/// `json.dumps` of a string, with `ensure_ascii`: its quotes and escapes.
pub(super) fn string_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c if (c as u32) < 0x7f || c == '\u{7f}' => 1,
            c if (c as u32) > 0xffff => 12,
            _ => 6,
        })
        .sum::<usize>()
}

/// `methods/truncate.py`'s `_build_preview` of one block of `text`: `None` where it keeps the text whole.
pub(super) fn preview(text: &str, preview_tokens: usize) -> Option<String> {
    let total = text.chars().count();
    let preview_chars = preview_tokens * 4;
    if total <= preview_chars {
        return None;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let head_chars = (preview_chars as f64 * HEAD_SHARE) as usize;
    let tail_chars = preview_chars - head_chars;
    let head: String = text.chars().take(head_chars).collect();
    let tail: String = text.chars().skip(total - tail_chars).collect();
    let elided = total - head_chars - tail_chars;
    let marker = format!("[... {} chars elided ...]", thousands(elided));
    let body = [head.as_str(), marker.as_str(), tail.as_str()]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    let result = format!(
        "[Truncated: 1 block, ~{} tokens]\n\n{body}",
        thousands(total.div_ceil(4))
    );
    (result.chars().count() < total).then_some(result)
}

/// `n` with thousands separators, as Python's `{n:,}` writes it.
pub(super) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lengths_are_pythons() {
        // json.dumps({"a": [1, 2.5, "é", None, True]}) == '{"a": [1, 2.5, "\\u00e9", null, true]}'
        assert_eq!(python_json_len(r#"{"a":[1,2.5,"é",null,true]}"#), 37);
        assert_eq!(python_json_len("ls -la"), 8);
        assert_eq!(python_json_len(r#"{"cmd":"a\nb"}"#), 15);
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn a_large_result_is_cut_to_head_and_tail() {
        let text = "0123456789".repeat(700); // 7,000 characters: 1,750 tokens by Strands' estimate
        let p = preview(&text, 750).unwrap();
        assert!(
            p.starts_with("[Truncated: 1 block, ~1,750 tokens]\n\n0123"),
            "{p}"
        );
        assert!(p.contains("\n\n[... 4,000 chars elided ...]\n\n"), "{p}");
        // len(_build_preview("0123456789" * 700, 1, {"preview_tokens": 750})) in strands-agents 1.62.0
        assert_eq!(p.chars().count(), 3_069);
        assert_eq!(preview(&"x".repeat(3_000), 750), None);
        assert_eq!(quarter("abcde"), 2);
    }
}
