//! The `bpe` backend's encoder: an encoding's vocabulary, laid out at build time and embedded in the binary
//! (`build.rs`, [`super::layout`]), and byte-pair merging of one piece of pre-tokenized text.
//!
//! Merging is tiktoken's: the piece is one token when the vocabulary has it whole; otherwise it starts as its
//! bytes, and the adjacent pair whose concatenation has the lowest rank, the leftmost of equals, merges until no
//! pair is a token. Pieces of up to [`SCAN_MAX`] bytes scan their pairs for the lowest at every merge, as
//! tiktoken does (no set-up, quadratic); longer ones keep their pairs in a heap, so that a long run of one
//! character costs `n log n`. The tests compare the counts with tiktoken-rs's on every item of the bundled
//! dataset, the shared traces and edge cases.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::OnceLock;

use super::layout::Table;
use crate::tokens::Encoding;

/// An encoding's vocabulary.
pub(in crate::tokens) struct Vocabulary {
    table: Table<'static>,
}

/// Pieces up to this many bytes merge by scanning; longer ones by heap.
const SCAN_MAX: usize = 128;

impl Vocabulary {
    /// The vocabulary of `encoding`, read in place from the binary once per process.
    pub(in crate::tokens) fn get(encoding: Encoding) -> &'static Vocabulary {
        static TABLES: [OnceLock<Vocabulary>; 2] = [OnceLock::new(), OnceLock::new()];
        TABLES[encoding.slot()].get_or_init(|| {
            let data: &'static [u8] = match encoding {
                Encoding::O200kBase => {
                    include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.vocab"))
                }
                Encoding::Cl100kBase => {
                    include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.vocab"))
                }
            };
            Vocabulary {
                // build.rs checked the table it wrote: a failure here is a bug, not bad input.
                table: Table::new(data).expect("the embedded vocabulary reads back"),
            }
        })
    }

    /// Tokens in `piece`.
    pub(in crate::tokens) fn count(&self, piece: &[u8]) -> usize {
        let mut n = 0;
        self.merge(piece, |_| n += 1);
        n
    }

    /// Appends the ranks of `piece`'s tokens to `out`.
    pub(in crate::tokens) fn encode(&self, piece: &[u8], out: &mut Vec<u32>) {
        self.merge(piece, |part| {
            // Every part is a token: a single byte is one, and a merge makes only tokens.
            out.extend(self.table.rank(&piece[part]));
        });
    }

    /// Calls `token` with the range of each of `piece`'s tokens, in order.
    fn merge(&self, piece: &[u8], mut token: impl FnMut(Range<usize>)) {
        match piece.len() {
            0 => {}
            1 => token(0..1),
            n if self.table.rank(piece).is_some() => token(0..n),
            n if n <= SCAN_MAX => self.merge_scanning(piece, token),
            _ => self.merge_by_heap(piece, token),
        }
    }

    /// The rank of `piece[range]`, `u32::MAX` when it is not a token.
    fn rank_of(&self, piece: &[u8], range: Range<usize>) -> u32 {
        self.table.rank(&piece[range]).unwrap_or(u32::MAX)
    }

    /// [`Vocabulary::merge`] for a piece of at most [`SCAN_MAX`] bytes.
    fn merge_scanning(&self, piece: &[u8], mut token: impl FnMut(Range<usize>)) {
        let n = piece.len();
        // The parts' starts, then the end; `ranks[i]` is the rank of parts `i` and `i + 1` merged.
        let mut starts = [0usize; SCAN_MAX + 1];
        let mut ranks = [u32::MAX; SCAN_MAX];
        for (i, start) in starts.iter_mut().enumerate().take(n + 1) {
            *start = i;
        }
        for (i, rank) in ranks.iter_mut().enumerate().take(n - 1) {
            *rank = self.rank_of(piece, i..i + 2);
        }
        let mut parts = n;
        loop {
            let (mut lowest, mut at) = (u32::MAX, 0);
            for (i, &rank) in ranks[..parts - 1].iter().enumerate() {
                if rank < lowest {
                    (lowest, at) = (rank, i);
                }
            }
            if lowest == u32::MAX {
                break;
            }
            // Part `at + 1` joins part `at`.
            starts.copy_within(at + 2..=parts, at + 1);
            ranks.copy_within(at + 2..parts, at + 1);
            parts -= 1;
            if at + 1 < parts {
                ranks[at] = self.rank_of(piece, starts[at]..starts[at + 2]);
            }
            if at > 0 {
                ranks[at - 1] = self.rank_of(piece, starts[at - 1]..starts[at + 1]);
            }
        }
        for i in 0..parts {
            token(starts[i]..starts[i + 1]);
        }
    }

    /// [`Vocabulary::merge`] for a long piece: parts are a linked list, candidate pairs a heap of (rank, start
    /// of the left part, end of the right part); a pair whose parts have changed since it was pushed is
    /// skipped (parts only grow, so a pair is current when its left part still starts there and the part
    /// after the next still starts at its end).
    fn merge_by_heap(&self, piece: &[u8], mut token: impl FnMut(Range<usize>)) {
        let n = piece.len();
        // `next[i]` is where the part starting at byte `i` ends (the next part's start); `prev[i]` the start of
        // the part before. Only the entries of parts' starts are current.
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap = BinaryHeap::new();
        let push = |heap: &mut BinaryHeap<_>, start: usize, end: usize| {
            let rank = self.rank_of(piece, start..end);
            if rank != u32::MAX {
                heap.push(Reverse((rank, start, end)));
            }
        };
        for i in 0..n - 1 {
            push(&mut heap, i, i + 2);
        }
        while let Some(Reverse((_, start, end))) = heap.pop() {
            let right = next[start];
            if !alive[start] || right >= n || next[right] != end {
                continue;
            }
            alive[right] = false;
            next[start] = end;
            if end < n {
                prev[end] = start;
                push(&mut heap, start, next[end]);
            }
            if start > 0 {
                push(&mut heap, prev[start], end);
            }
        }
        let mut start = 0;
        while start < n {
            token(start..next[start]);
            start = next[start];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tiktoken's `_byte_pair_merge`, as written there (a vector of parts and their pair ranks, the lowest
    /// found by a scan): the reference both merges are checked against, token by token.
    fn reference(v: &Vocabulary, piece: &[u8]) -> Vec<Range<usize>> {
        if piece.len() == 1 || v.table.rank(piece).is_some() {
            return std::iter::once(0..piece.len()).collect();
        }
        let rank = |r: Range<usize>| v.rank_of(piece, r);
        let mut parts: Vec<(usize, u32)> =
            (0..piece.len() - 1).map(|i| (i, rank(i..i + 2))).collect();
        parts.push((piece.len() - 1, u32::MAX));
        parts.push((piece.len(), u32::MAX));
        loop {
            let (min, i) = parts[..parts.len() - 1].iter().enumerate().fold(
                (u32::MAX, 0),
                |m, (i, &(_, r))| if r < m.0 { (r, i) } else { m },
            );
            if min == u32::MAX {
                return parts.windows(2).map(|w| w[0].0..w[1].0).collect();
            }
            let pair_rank = |parts: &[(usize, u32)], i: usize| {
                if i + 3 < parts.len() {
                    rank(parts[i].0..parts[i + 3].0)
                } else {
                    u32::MAX
                }
            };
            if i > 0 {
                parts[i - 1].1 = pair_rank(&parts, i - 1);
            }
            parts[i].1 = pair_rank(&parts, i);
            parts.remove(i + 1);
        }
    }

    #[test]
    fn both_merges_are_tiktokens_on_pieces_of_any_length() {
        let pieces: Vec<Vec<u8>> = vec![
            b" ".repeat(300),
            b"ab".repeat(200),
            b"aaaa".repeat(97),
            "indivisibilities".repeat(20).into_bytes(),
            "東京🎉naïve".repeat(30).into_bytes(),
            (0..=255u8).cycle().take(700).collect(),
            b"0123456789".repeat(40),
        ];
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let v = Vocabulary::get(encoding);
            for piece in &pieces {
                for len in [2, 3, 17, SCAN_MAX, SCAN_MAX + 1, piece.len()] {
                    let p = &piece[..len.min(piece.len())];
                    let expected = reference(v, p);
                    if p.len() <= SCAN_MAX {
                        let mut scanned = Vec::new();
                        v.merge_scanning(p, |t| scanned.push(t));
                        assert_eq!(scanned, expected, "{encoding:?} scan {p:?}");
                    }
                    let mut heaped = Vec::new();
                    v.merge_by_heap(p, |t| heaped.push(t));
                    assert_eq!(heaped, expected, "{encoding:?} heap {p:?}");
                }
            }
        }
    }

    /// The vocabularies are tiktoken's ordinary tokens, special tokens left out.
    #[test]
    fn vocabularies_hold_every_ordinary_token() {
        assert_eq!(Vocabulary::get(Encoding::O200kBase).table.len(), 199_998);
        assert_eq!(Vocabulary::get(Encoding::Cl100kBase).table.len(), 100_256);
        let v = Vocabulary::get(Encoding::Cl100kBase);
        assert_eq!(v.table.rank(b"hello"), Some(15339));
        assert_eq!(v.table.token(15339), b"hello");
        assert_eq!(v.table.rank(b"<|endoftext|>"), None);
    }

    /// The tokens of a piece concatenate to it, and each is in the vocabulary.
    #[test]
    fn tokens_cover_the_piece() {
        let v = Vocabulary::get(Encoding::O200kBase);
        let piece = "x".repeat(SCAN_MAX * 3);
        let mut ids = Vec::new();
        v.encode(piece.as_bytes(), &mut ids);
        let joined: Vec<u8> = ids
            .iter()
            .flat_map(|&r| v.table.token(r).to_vec())
            .collect();
        assert_eq!(joined, piece.as_bytes());
        assert_eq!(ids.len(), v.count(piece.as_bytes()));
    }
}
