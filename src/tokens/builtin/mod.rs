//! The built-in backend: this crate's byte-pair encoder over tiktoken's vocabularies ([`vocab`], laid out at
//! build time by [`layout`]), behind its own pre-tokenizer ([`pretokenize`]), with a table of the counts of the
//! pieces met last, shared by the counting threads ([`pool`]).

pub(super) mod layout;
mod pool;
mod pretokenize;
mod vocab;

pub(in crate::tokens) use pretokenize::{PieceSink, Pretokenizer};
pub(in crate::tokens) use vocab::Vocabulary;

/// 1 to 15 bytes as one number: the bytes little-endian, then a 1 bit past the last of them, so that texts of
/// different lengths (`a` and `a\0`) differ; `None` for other lengths. Read as at most two overlapping loads.
fn pack(bytes: &[u8]) -> Option<u128> {
    let n = bytes.len();
    let value = match n {
        1..=3 => bytes
            .iter()
            .rev()
            .fold(0u128, |acc, &b| acc << 8 | u128::from(b)),
        4..=8 => {
            let lo = u32::from_le_bytes(bytes[..4].try_into().ok()?);
            let hi = u32::from_le_bytes(bytes[n - 4..].try_into().ok()?);
            u128::from(lo) | u128::from(hi) << (8 * (n - 4))
        }
        9..=15 => {
            let lo = u64::from_le_bytes(bytes[..8].try_into().ok()?);
            let hi = u64::from_le_bytes(bytes[n - 8..].try_into().ok()?);
            u128::from(lo) | u128::from(hi) << (8 * (n - 8))
        }
        _ => return None,
    };
    Some(value | 1 << (8 * n))
}

/// The token counts of the pieces a thread met last, by [`pack`]ed piece: a direct-mapped table of
/// [`PIECE_SLOTS`] entries, each the packed piece with its count in the bits above it (0 when free).
///
/// Texts repeat their words, so most pieces are found here, in a table that fits a core's cache; the encoder
/// counts the others. (Looking every piece up in a set of the vocabulary's tokens, which counts a piece that
/// is one token as 1, as tiktoken does, was slower with this table in front of the encoder: a cache miss in
/// the set's megabytes per lookup, and 9 ms at start-up to build it.)
struct PieceCounts {
    slots: Box<[u128]>,
}

/// Entries of a [`PieceCounts`] (128 KiB).
const PIECE_SLOTS: usize = 1 << 13;
/// Where a [`PieceCounts`] entry's count starts; a packed piece takes the bits below (at most 121 of them).
const COUNT_SHIFT: u32 = 122;

impl PieceCounts {
    /// The count of the piece packed as `key`, from the table, else by `count`, kept for next time.
    #[inline(always)]
    fn get_or_count(&mut self, key: u128, count: impl FnOnce() -> usize) -> usize {
        let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
        #[allow(clippy::cast_possible_truncation)] // the top bits of a 64-bit hash
        let slot = (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            >> (64 - PIECE_SLOTS.trailing_zeros())) as usize;
        let entry = self.slots[slot];
        if entry & ((1 << COUNT_SHIFT) - 1) == key {
            return (entry >> COUNT_SHIFT) as usize;
        }
        let n = count();
        // A piece of at most 15 bytes has at most 15 tokens: its count fits the 6 bits above the key.
        if let Ok(small) = u8::try_from(n) {
            if small < 64 {
                self.slots[slot] = key | u128::from(small) << COUNT_SHIFT;
            }
        }
        n
    }
}

impl Default for PieceCounts {
    fn default() -> Self {
        Self {
            slots: vec![0; PIECE_SLOTS].into_boxed_slice(),
        }
    }
}

/// The piece counts, per encoding (o200k_base, cl100k_base), shared by the counting threads ([`pool`]).
static PIECE_COUNTS: [pool::Pool<PieceCounts>; 2] = [pool::Pool::new(), pool::Pool::new()];

thread_local! {
    /// The piece counts of a thread that keeps its own ([`pool::owns_scratch`]), per encoding.
    static OWN_PIECE_COUNTS: std::cell::RefCell<[Option<PieceCounts>; 2]> =
        const { std::cell::RefCell::new([None, None]) };
}

/// Tokens of `text` by `vocab` behind `pre` (the encoding in slot `slot` of the pools), counting until past
/// `limit`: the count when it is at most `limit`, else some number above it.
pub(super) fn count_while(
    vocab: &Vocabulary,
    pre: &Pretokenizer,
    slot: usize,
    text: &str,
    limit: usize,
) -> usize {
    let count = |cache: &mut PieceCounts| {
        let mut counter = Counter {
            cache,
            vocab,
            n: 0,
            limit,
        };
        pre.pieces_while(text, &mut counter);
        counter.n
    };
    if pool::owns_scratch() {
        OWN_PIECE_COUNTS
            .with_borrow_mut(|own| count(own[slot].get_or_insert_with(PieceCounts::default)))
    } else {
        PIECE_COUNTS[slot].with(PieceCounts::default, count)
    }
}

/// Counts the pieces it takes: from the thread's table of piece counts, else by the encoder.
struct Counter<'a> {
    cache: &'a mut PieceCounts,
    vocab: &'a Vocabulary,
    /// Tokens so far.
    n: usize,
    /// Where counting stops.
    limit: usize,
}

impl PieceSink for &mut Counter<'_> {
    #[inline(always)]
    fn piece(&mut self, piece: &str) -> bool {
        let bytes = piece.as_bytes();
        self.n += match pack(bytes) {
            Some(key) => self.cache.get_or_count(key, || self.vocab.count(bytes)),
            None => self.vocab.count(bytes),
        };
        self.n <= self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piece_counts_keep_each_piece_its_own_count() {
        let mut cache = PieceCounts::default();
        let keys: Vec<u128> = (0..4 * PIECE_SLOTS as u32)
            .map(|i| pack(&i.to_le_bytes()).unwrap())
            .collect();
        let count = |key: u128| (key % 15) as usize + 1;
        for round in 0..2 {
            for &key in &keys {
                assert_eq!(
                    cache.get_or_count(key, || count(key)),
                    count(key),
                    "round {round}"
                );
            }
        }
        // The last piece is in its slot: it is not counted again.
        let last = *keys.last().unwrap();
        assert_eq!(cache.get_or_count(last, || unreachable!()), count(last));
        // A count too large for the bits above the key is returned but not kept.
        let key = pack(b"not kept").unwrap();
        assert_eq!(cache.get_or_count(key, || 64), 64);
        assert_eq!(cache.get_or_count(key, || 7), 7);
        assert_eq!(cache.get_or_count(key, || unreachable!()), 7);
    }

    /// [`pack`] is the bytes and a bit past them, however long they are.
    #[test]
    fn pack_is_the_bytes_and_a_length_bit() {
        let bytes: Vec<u8> = (1..=16).map(|b| b * 15).collect();
        assert_eq!(pack(&[]), None);
        assert_eq!(pack(&bytes), None);
        for n in 1..=15 {
            let expected = bytes[..n]
                .iter()
                .enumerate()
                .fold(1u128 << (8 * n), |acc, (i, &b)| {
                    acc | u128::from(b) << (8 * i)
                });
            assert_eq!(pack(&bytes[..n]), Some(expected), "{n} bytes");
        }
        assert_ne!(pack(b"a"), pack(b"a\0"));
    }
}
