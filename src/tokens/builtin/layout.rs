//! The layout of an embedded vocabulary, shared by `build.rs`, which writes one per encoding, and
//! [`super::vocab`], which reads them: a token's rank by its bytes in an open-addressing hash table, and a
//! rank's bytes.
//!
//! All numbers are little-endian `u32`s: the token count `n`, the table's size as a power of two `bits`, then
//! `n + 1` offsets (token `r`'s bytes are `bytes[offsets[r]..offsets[r + 1]]`), then `1 << bits` slots (a rank
//! plus one, 0 when free; a token sits in the first free slot from its hash's top `bits` bits on), then the
//! tokens' bytes one after the other.

use xxhash_rust::xxh3::xxh3_64;

/// A vocabulary laid out as above, read in place.
#[derive(Clone, Copy)]
pub struct Table<'a> {
    bits: u32,
    offsets: &'a [u8],
    slots: &'a [u8],
    bytes: &'a [u8],
}

fn u32_at(bytes: &[u8], index: usize) -> u32 {
    let at = index * 4;
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// The slot a token's search starts at.
fn home(token: &[u8], bits: u32) -> usize {
    // The top bits of a 64-bit hash: at most 32 of them.
    usize::try_from(xxh3_64(token) >> (64 - bits)).unwrap_or(0)
}

impl<'a> Table<'a> {
    /// Reads the table `data` holds; `None` when it is too short for what its header says.
    #[must_use]
    pub fn new(data: &'a [u8]) -> Option<Self> {
        let n = usize::try_from(u32_at(data.get(..8)?, 0)).ok()?;
        let bits = u32_at(data, 1);
        if !(1..=32).contains(&bits) {
            return None;
        }
        let (offsets, rest) = data[8..].split_at_checked((n + 1) * 4)?;
        let (slots, bytes) = rest.split_at_checked((1usize << bits) * 4)?;
        let table = Self {
            bits,
            offsets,
            slots,
            bytes,
        };
        (usize::try_from(u32_at(offsets, n)).ok()? == bytes.len()).then_some(table)
    }

    /// The number of tokens.
    #[allow(dead_code)] // build.rs and the tests check it
    #[must_use]
    pub fn len(&self) -> usize {
        self.offsets.len() / 4 - 1
    }

    /// The bytes of the token of rank `rank` (`rank < self.len()`).
    #[must_use]
    pub fn token(&self, rank: u32) -> &'a [u8] {
        let r = rank as usize;
        let (start, end) = (u32_at(self.offsets, r), u32_at(self.offsets, r + 1));
        &self.bytes[start as usize..end as usize]
    }

    /// The rank of the token whose bytes are `token`, if there is one.
    #[must_use]
    pub fn rank(&self, token: &[u8]) -> Option<u32> {
        let mask = (1usize << self.bits) - 1;
        let mut slot = home(token, self.bits);
        loop {
            let entry = u32_at(self.slots, slot);
            if entry == 0 {
                return None;
            }
            if self.token(entry - 1) == token {
                return Some(entry - 1);
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// Lays out `tokens`, token `r` being the one of rank `r`, with a table at most half full.
#[allow(dead_code)] // build.rs lays tables out; the crate reads them
#[must_use]
pub fn build(tokens: &[Vec<u8>]) -> Vec<u8> {
    let n = u32::try_from(tokens.len()).expect("fewer than 2^32 tokens");
    let mut bits = 1;
    while (1usize << bits) < tokens.len() * 2 {
        bits += 1;
    }
    let mask = (1usize << bits) - 1;
    let mut slots = vec![0u32; 1 << bits];
    for (rank, token) in (1..).zip(tokens) {
        let mut slot = home(token, bits);
        while slots[slot] != 0 {
            slot = (slot + 1) & mask;
        }
        slots[slot] = rank;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&bits.to_le_bytes());
    let mut offset = 0u32;
    out.extend_from_slice(&offset.to_le_bytes());
    for token in tokens {
        offset += u32::try_from(token.len()).expect("tokens fit in 4 GiB");
        out.extend_from_slice(&offset.to_le_bytes());
    }
    for slot in slots {
        out.extend_from_slice(&slot.to_le_bytes());
    }
    for token in tokens {
        out.extend_from_slice(token);
    }
    out
}
