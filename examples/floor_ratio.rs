//! The floor ratio: the wall time of a full comparison (`ctxbench run` with the default config: every default
//! strategy, probes, reports and charts) divided by the time to tokenize the dataset's text once, the floor no
//! replay can beat. Both use every core (rayon), in one process, on the same dataset.
//!
//! `cargo run --release --example floor_ratio -- [DATASET] [REPEATS]` (scripts/floor_ratio.sh runs it).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ctxbench::history::dataset::read_all;
use ctxbench::runner::{run, RunConfig};
use ctxbench::Tokenizer;
use rayon::prelude::*;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dataset = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "datasets/default.jsonl".into()),
    );
    let repeats: usize = args.next().map_or(Ok(5), |n| n.parse())?;
    let config = RunConfig::default();
    let episodes = read_all(&dataset)?;
    let texts: Vec<String> = episodes
        .iter()
        .flat_map(|e| e.items.iter().map(|i| i.searchable_text()))
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum();

    // Floor and full comparison alternate, so that both see the same machine: on a shared box the speed of
    // the cores drifts over seconds.
    let out = tempfile::tempdir()?;
    let (mut floor, mut full) = (Vec::new(), Vec::new());
    let mut tokens = 0;
    for _ in 0..repeats {
        // A fresh tokenizer each time: no count is cached.
        let tok = Tokenizer::new(config.tokenizer.encoding, config.tokenizer.backend)?;
        let start = Instant::now();
        tokens = texts.par_iter().map(|t| tok.count_text(t)).sum::<usize>();
        floor.push(start.elapsed());
        let start = Instant::now();
        run(&config, &dataset, out.path(), "floor", &(), false)?;
        full.push(start.elapsed());
    }
    let (floor, full) = (median(floor), median(full));
    println!(
        "dataset {}: {} episodes, {} items, {:.1} MB, {tokens} tokens; {} threads, median of {repeats}",
        dataset.display(),
        episodes.len(),
        texts.len(),
        bytes as f64 / 1e6,
        rayon::current_num_threads()
    );
    println!(
        "tokenize once: {:.1} ms ({:.1} MB/s)",
        floor.as_secs_f64() * 1e3,
        bytes as f64 / 1e6 / floor.as_secs_f64()
    );
    println!(
        "full comparison ({} strategies): {:.1} ms",
        config.strategies.len(),
        full.as_secs_f64() * 1e3
    );
    println!(
        "ratio: {:.2} (target <= 2.0)",
        full.as_secs_f64() / floor.as_secs_f64()
    );
    Ok(())
}
