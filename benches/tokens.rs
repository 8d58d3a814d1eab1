//! Token counting throughput (MB/s) of both backends on the same agent-like text: the bundled dataset's
//! item texts (prose, code, JSON tool output, logs).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ctxbench::history::dataset::read_all;
use ctxbench::{Backend, Encoding, Tokenizer};

fn corpus(max_bytes: usize) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/default.jsonl");
    let episodes = read_all(&path).expect("the bundled dataset reads");
    let mut texts = Vec::new();
    let mut bytes = 0;
    for item in episodes.iter().flat_map(|e| e.items.iter()) {
        bytes += item.text().len();
        texts.push(item.text().to_owned());
        if bytes >= max_bytes {
            break;
        }
    }
    texts
}

fn counting(c: &mut Criterion) {
    let texts = corpus(2 << 20);
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut group = c.benchmark_group("tokens/count");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(10);
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        for backend in [Backend::Bpe, Backend::Tiktoken] {
            let t = Tokenizer::new(encoding, backend).expect("vocabulary loads");
            group.bench_with_input(
                BenchmarkId::new(backend.as_str(), encoding.as_str()),
                &texts,
                |b, texts| {
                    b.iter(|| {
                        texts
                            .iter()
                            .map(|s| t.count_text(black_box(s)))
                            .sum::<usize>()
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, counting);
criterion_main!(benches);
