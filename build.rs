//! Writes each encoding's vocabulary as a hash table the binary embeds (`src/tokens/vocab.rs` reads it): a
//! counting process then starts with its vocabulary already laid out, instead of decoding one (bpe-openai's
//! encoder took 35 ms and 90 MB to decode at every start).
//!
//! The tokens are tiktoken-rs's own (the reference backend's `.tiktoken` files): every rank that decodes and is
//! not a special token.

use std::path::Path;

#[path = "src/tokens/builtin/layout.rs"]
mod layout;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/tokens/builtin/layout.rs");
    // The binary as a position-dependent executable on Linux (glibc): a position-independent one has its
    // 38,000 relative relocations applied at every start, which reads .rela.dyn (0.9 MB) and writes a private
    // copy of every page of .data.rel.ro (0.7 MB) before `main`. Linked at a fixed address, neither happens:
    // 333 → 146 page faults for `ctxbench --version`, and 1.5-2 MB less peak memory on the bundled run (the code
    // is compiled position-independent all the same; only the link differs). Tests, benches and examples keep
    // the default.
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") == "linux" && target("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    for (name, load) in [
        ("o200k_base", tiktoken_rs::o200k_base as fn() -> _),
        ("cl100k_base", tiktoken_rs::cl100k_base),
    ] {
        let bpe = load().unwrap_or_else(|e| panic!("tiktoken-rs cannot load {name}: {e}"));
        let special: Vec<u32> = bpe
            .special_tokens()
            .iter()
            .flat_map(|s| bpe.encode_with_special_tokens(s))
            .collect();
        let last = special.iter().copied().max().unwrap_or(0);
        // Ranks run from 0 without gaps up to the special tokens, which follow them.
        let tokens: Vec<Vec<u8>> = (0..last)
            .map_while(|rank| {
                (!special.contains(&rank))
                    .then(|| bpe.decode_bytes(&[rank]).ok())
                    .flatten()
            })
            .collect();
        assert!(
            tokens.len() > 100_000,
            "{name}: only {} tokens decoded",
            tokens.len()
        );
        let table = layout::build(&tokens);
        // Every token is found at its own rank: no two share their bytes, and the table reads back.
        let read = layout::Table::new(&table).expect("the table just laid out reads back");
        assert_eq!(read.len(), tokens.len(), "{name}");
        for (rank, token) in (0..).zip(&tokens) {
            assert_eq!(
                read.rank(token),
                Some(rank),
                "{name}: token {rank} {token:?}"
            );
        }
        let path = Path::new(&out).join(format!("{name}.vocab"));
        std::fs::write(&path, table)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
}
