//! Strategy application on histories of 100, 1,000 and 10,000 items, and a whole replay of the bundled
//! dataset through every default strategy with the mock LLM, and whole episode replays of 1,000 and 10,000
//! items. `Throughput::Elements(n_items)` shows whether cost grows linearly with history length. Also the
//! writer's share (episode results, the row tables' bytes) and the reader's (the bundled dataset read).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use ctxbench::gen::synthetic_history;
use ctxbench::history::dataset::read_all;
use ctxbench::llm::mock::{MockConfig, MockLlm};
use ctxbench::llm::LlmRequest;
use ctxbench::metrics::Catalog;
use ctxbench::replay::Replayer;
use ctxbench::report::csv::{EpisodesCsv, FindingsCsv, StepsCsv};
use ctxbench::report::RowExporter;
use ctxbench::run::RunConfig;
use ctxbench::strategy::{defaults, CallPoint};
use ctxbench::Tokenizer;

fn strategies(c: &mut Criterion) {
    let tok = Tokenizer::shared_default().expect("vocabulary loads");
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let state = CallPoint::new(Arc::clone(&tok), 128_000);
    for named in defaults() {
        let mut group = c.benchmark_group(format!("strategy/{}", named.name));
        group.sample_size(10);
        for n in [100usize, 1_000, 10_000] {
            let items = synthetic_history(n);
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(
                BenchmarkId::new(named.name.as_str(), n),
                &items,
                |b, items| {
                    // The history is cloned in the untimed setup: only `apply` is measured.
                    b.iter_batched(
                        || {
                            (
                                named.config.build(),
                                LlmRequest::from_contents(items.clone()),
                            )
                        },
                        |(mut s, mut req)| {
                            s.apply(&state, &mut req, &llm).expect("apply");
                            black_box(req.contents.len())
                        },
                        BatchSize::LargeInput,
                    );
                },
            );
        }
        group.finish();
    }
}

fn whole_replay(c: &mut Criterion) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/default.jsonl");
    let episodes = read_all(&path).expect("the bundled dataset reads");
    let items: usize = episodes.iter().map(|e| e.items.len()).sum();
    let tok = Tokenizer::shared_default().expect("vocabulary loads");
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let strategies = defaults();
    let mut group = c.benchmark_group("replay/bundled_dataset");
    group.sample_size(10);
    group.throughput(Throughput::Elements(items as u64));
    group.bench_function("all_default_strategies", |b| {
        b.iter(|| {
            let r = Replayer::new(Arc::clone(&tok), &llm, 128_000);
            let steps: usize = episodes
                .iter()
                .map(|e| {
                    r.replay_all(e, &strategies)
                        .expect("replay")
                        .iter()
                        .map(|x| x.steps.len())
                        .sum::<usize>()
                })
                .sum();
            black_box(steps)
        });
    });
    group.finish();
}

/// The metrics of every episode of the bundled dataset under the default strategies (`Catalog::episode_result`:
/// step rows, loss ledgers, episode metrics), from replays made once beforehand, and the row tables' bytes of
/// them: the writer's share of a run.
fn episode_results(c: &mut Criterion) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/default.jsonl");
    let episodes = read_all(&path).expect("the bundled dataset reads");
    let tok = Tokenizer::shared_default().expect("vocabulary loads");
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let strategies = defaults();
    let r = Replayer::new(Arc::clone(&tok), &llm, 128_000);
    let replays: Vec<_> = episodes
        .iter()
        .map(|e| r.replay_all(e, &strategies).expect("replay"))
        .collect();
    let catalog = Catalog::standard();
    let context = RunConfig::default().context();
    let mut group = c.benchmark_group("metrics/episode_result");
    group.sample_size(10);
    group.throughput(Throughput::Elements(episodes.len() as u64));
    group.bench_function("bundled_dataset", |b| {
        b.iter(|| {
            let rows: usize = episodes
                .iter()
                .zip(&replays)
                .map(|(e, rs)| {
                    catalog
                        .episode_result(e, rs, &rs[0], &rs[0], &context)
                        .ledger
                        .len()
                })
                .sum();
            black_box(rows)
        });
    });
    group.finish();
    // The row tables' bytes of those results (steps.csv, episodes.csv, findings.csv): what the writer appends.
    let catalog = Arc::new(catalog);
    let results: Vec<_> = episodes
        .iter()
        .zip(&replays)
        .map(|(e, rs)| catalog.episode_result(e, rs, &rs[0], &rs[0], &context))
        .collect();
    let tables: [Box<dyn RowExporter>; 3] = [
        Box::new(StepsCsv::new(&catalog)),
        Box::new(EpisodesCsv::new(&catalog)),
        Box::new(FindingsCsv),
    ];
    let mut group = c.benchmark_group("report/row_tables");
    group.sample_size(20);
    group.throughput(Throughput::Elements(episodes.len() as u64));
    group.bench_function("bundled_dataset", |b| {
        b.iter(|| {
            let bytes: usize = results
                .iter()
                .flat_map(|r| tables.iter().map(move |t| t.rows(r).expect("rows").len()))
                .sum();
            black_box(bytes)
        });
    });
    group.finish();
}

/// Reading the bundled dataset: every line read, decoded and parsed into episodes (the run's reader thread).
fn dataset_reading(c: &mut Criterion) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/default.jsonl");
    let bytes = std::fs::metadata(&path).expect("the bundled dataset").len();
    let mut group = c.benchmark_group("dataset/read");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("bundled_dataset", |b| {
        b.iter(|| black_box(read_all(&path).expect("the bundled dataset reads").len()));
    });
    group.finish();
}

/// A whole episode replay (every call point: strategy, tokens, prefix cache, retention) at 1,000 and 10,000
/// items, per strategy: the growth from 1k to 10k is the replay's scaling in history length.
fn episode_length(c: &mut Criterion) {
    let tok = Tokenizer::shared_default().expect("vocabulary loads");
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    for named in defaults() {
        let mut group = c.benchmark_group(format!("replay/episode/{}", named.name));
        group.sample_size(10);
        for n in [1_000usize, 10_000] {
            let episode = ctxbench::Episode {
                id: format!("synthetic-{n}"),
                source: "bench".into(),
                task: String::new(),
                items: synthetic_history(n),
                findings: vec![],
                ..ctxbench::Episode::default()
            };
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::from_parameter(n), &episode, |b, ep| {
                b.iter(|| {
                    let r = Replayer::new(Arc::clone(&tok), &llm, 128_000);
                    black_box(r.replay(ep, &named).expect("replay"))
                });
            });
        }
        group.finish();
    }
}

criterion_group!(
    benches,
    strategies,
    whole_replay,
    episode_results,
    dataset_reading,
    episode_length
);
criterion_main!(benches);
