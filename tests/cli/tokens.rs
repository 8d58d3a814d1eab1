//! Differential test: the bpe backend (ctxbench's own encoder) and tiktoken-rs count every text identically.

use std::path::Path;

use ctxbench::history::dataset::read_all;
use ctxbench::{Backend, Encoding, Tokenizer};

fn check(texts: &[String], what: &str) {
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let bpe = Tokenizer::new(encoding, Backend::Bpe).unwrap();
        let tik = Tokenizer::new(encoding, Backend::Tiktoken).unwrap();
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(
                bpe.count_text(t),
                tik.count_text(t),
                "{what} text {i} ({encoding:?}): {:?}",
                t.chars().take(80).collect::<String>()
            );
        }
    }
}

#[test]
fn backends_agree_on_edge_cases() {
    let texts: Vec<String> = [
        "",
        " ",
        "hello world",
        "🦀🦀🦀 emoji 👩‍👩‍👧‍👦 family",
        "中文分词测试，日本語のテキスト、한국어 텍스트",
        &" ".repeat(1000),
        &"\n".repeat(300),
        &"1234567890".repeat(200),
        "<|endoftext|> and <|im_start|>system<|im_end|> in content",
        "x\u{0301}\u{0302} combining marks, \u{200b}zero width",
        "\t\tindented\r\n\r\nwindows lines",
        &"a".repeat(10_000),
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    check(&texts, "edge case");
}

#[test]
fn backends_agree_on_every_item_of_the_bundled_dataset() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/default.jsonl");
    let texts: Vec<String> = read_all(&path)
        .unwrap()
        .iter()
        .flat_map(|e| e.items.iter().map(|i| i.searchable_text()))
        .collect();
    assert!(texts.len() > 6000);
    check(&texts, "bundled dataset");
}

/// Every file under ../shared/traces/, whole and line by line, whatever its format.
#[test]
fn backends_agree_on_the_shared_traces() {
    let Some(files) = crate::shared_trace_files() else {
        return;
    };
    let mut texts = Vec::new();
    for p in files {
        let t = std::fs::read_to_string(&p).unwrap();
        // Whole files, and each line, so both long and short inputs are compared.
        texts.extend(t.lines().map(str::to_owned));
        texts.push(t);
    }
    assert!(texts.len() > 100);
    check(&texts, "shared traces");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Random text, token ids and all: any Unicode, agent-like ASCII, and long single pieces (a run of one
    /// letter, spaces or an accented word), which the encoder merges by heap rather than by scanning.
    #[test]
    fn backends_agree_on_random_text(text in proptest::prop_oneof![
        "\\PC{0,200}",
        "[a-zA-Z0-9 _.,:;'/(){}\\[\\]\"\\n\\t-]{0,400}",
        "[a-z]{120,400}",
        "( {100,300}|\\n{100,200}|(é|e|ë){100,200})[a-z ]{0,20}",
    ]) {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let bpe = Tokenizer::new(encoding, Backend::Bpe).unwrap();
            let tik = Tokenizer::new(encoding, Backend::Tiktoken).unwrap();
            let ids = bpe.encode(&text);
            proptest::prop_assert_eq!(&ids, &tik.encode(&text), "{:?}", encoding);
            proptest::prop_assert_eq!(bpe.count_text(&text), ids.len());
        }
    }
}
