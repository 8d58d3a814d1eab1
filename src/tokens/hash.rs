//! Content hashes: the key of every per-item cache (token counts, evidence, the mock's word tables).

use xxhash_rust::xxh3::{xxh3_128_with_seed, xxh3_64};

use crate::history::{Item, SentBack};

/// A 128-bit hash of an item's content, the key of every per-item cache.
///
/// Field lengths are hashed before the bytes so that two different items can never feed the same byte stream.
#[must_use]
pub fn item_hash(item: &Item) -> u128 {
    // The short fields seed a one-shot hash of the long one (one pass over the content, no streaming state).
    let (seed, body) = match item {
        Item::Message { role, content } => {
            (fields_hash(&[b"m", role.as_str().as_bytes()]), content)
        }
        Item::ToolCall {
            id,
            name,
            arguments,
        } => (
            fields_hash(&[b"c", id.as_bytes(), name.as_bytes()]),
            arguments,
        ),
        Item::ToolResult {
            call_id,
            name,
            content,
            is_error,
        } => (
            fields_hash(&[
                if *is_error { b"e" } else { b"r" },
                call_id.as_bytes(),
                name.as_bytes(),
            ]),
            content,
        ),
        Item::Observation { name, content } => (fields_hash(&[b"o", name.as_bytes()]), content),
        Item::Reasoning { content, sent_back } => {
            (fields_hash(&[sent_back_tag(*sent_back)]), content)
        }
        Item::Unrecorded {
            tokens,
            cached_tokens,
            note,
        } => (
            fields_hash(&[
                b"u",
                &tokens.to_le_bytes(),
                &cached_tokens.map_or(u64::MAX, |c| c as u64).to_le_bytes(),
            ]),
            note,
        ),
    };
    xxh3_128_with_seed(body.as_bytes(), seed)
}

/// The tag of reasoning's [`SentBack`] in its hash (`t` and `s` as the flag it was).
fn sent_back_tag(s: SentBack) -> &'static [u8] {
    match s {
        SentBack::Never => b"t",
        SentBack::Turn => b"n",
        SentBack::Always => b"s",
    }
}

/// The hash of `fields`, each laid out after its length (`u64`, little-endian), on the stack when they fit in
/// 256 bytes, as an item's tag, ids and name nearly always do: hashing an item then allocates nothing.
fn fields_hash(fields: &[&[u8]]) -> u64 {
    let len: usize = fields.iter().map(|f| 8 + f.len()).sum();
    let mut stack = [0u8; 256];
    let mut heap = Vec::new();
    let buf: &mut [u8] = if len <= stack.len() {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap
    };
    let mut at = 0;
    for f in fields {
        buf[at..at + 8].copy_from_slice(&(f.len() as u64).to_le_bytes());
        buf[at + 8..at + 8 + f.len()].copy_from_slice(f);
        at += 8 + f.len();
    }
    xxh3_64(buf)
}

/// A 128-bit hash of an instruction, distinct from every item hash.
#[must_use]
pub fn instruction_hash(text: &str) -> u128 {
    xxh3_128_with_seed(text.as_bytes(), xxh3_64(b"instruction"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An item's hash as it was first defined: its short fields, each after its length, concatenated, seed the
    /// hash of the long one. Counts and answers cached under the old keys stay valid.
    fn defined_item_hash(item: &Item) -> u128 {
        let field = |head: &mut Vec<u8>, bytes: &[u8]| {
            head.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            head.extend_from_slice(bytes);
        };
        let mut head = Vec::new();
        let body = match item {
            Item::Message { role, content } => {
                field(&mut head, b"m");
                field(&mut head, role.as_str().as_bytes());
                content
            }
            Item::ToolCall {
                id,
                name,
                arguments,
            } => {
                field(&mut head, b"c");
                field(&mut head, id.as_bytes());
                field(&mut head, name.as_bytes());
                arguments
            }
            Item::ToolResult {
                call_id,
                name,
                content,
                is_error,
            } => {
                field(&mut head, if *is_error { b"e" } else { b"r" });
                field(&mut head, call_id.as_bytes());
                field(&mut head, name.as_bytes());
                content
            }
            Item::Observation { name, content } => {
                field(&mut head, b"o");
                field(&mut head, name.as_bytes());
                content
            }
            Item::Reasoning { content, sent_back } => {
                field(&mut head, sent_back_tag(*sent_back));
                content
            }
            Item::Unrecorded {
                tokens,
                cached_tokens,
                note,
            } => {
                field(&mut head, b"u");
                field(&mut head, &tokens.to_le_bytes());
                field(
                    &mut head,
                    &cached_tokens.map_or(u64::MAX, |c| c as u64).to_le_bytes(),
                );
                note
            }
        };
        xxh3_128_with_seed(body.as_bytes(), xxh3_64(&head))
    }

    #[test]
    fn item_hashes_keep_their_definition_with_short_and_long_fields() {
        // A tool item with n = 154 fills the 256-byte stack buffer exactly; 155 and 300 take the heap.
        for n in [0, 1, 100, 154, 155, 300] {
            let id = "i".repeat(n);
            let name = "n".repeat(n / 2);
            let mut error = Item::tool_result(id.as_str(), name.as_str(), "out");
            if let Item::ToolResult { is_error, .. } = &mut error {
                *is_error = true;
            }
            for item in [
                Item::user("x".repeat(n)),
                Item::message(crate::history::Role::Assistant, "ok"),
                Item::tool_call(id.as_str(), name.as_str(), "{}"),
                Item::tool_result(id.as_str(), name.as_str(), "out"),
                error,
                Item::observation(name.as_str(), "out"),
                Item::Reasoning {
                    content: "think".into(),
                    sent_back: [SentBack::Never, SentBack::Turn, SentBack::Always][n % 3],
                },
            ] {
                assert_eq!(item_hash(&item), defined_item_hash(&item), "{item:?}");
            }
        }
        // Each kind and each field moves the hash.
        let call = item_hash(&Item::tool_call("a", "b", "c"));
        assert_ne!(call, item_hash(&Item::tool_result("a", "b", "c")));
        assert_ne!(call, item_hash(&Item::tool_call("ab", "", "c")));
        assert_ne!(
            item_hash(&Item::observation("", "c")),
            item_hash(&Item::user("c"))
        );
    }
}
