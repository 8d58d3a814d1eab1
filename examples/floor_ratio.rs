//! The floor ratio: the wall time of a full comparison (`ctxbench run` with the given config, the default one when none is given: every
//! strategy, probes, reports and charts) divided by the time to tokenize the dataset's text once, the floor no
//! replay can beat. Both use every core (rayon), in one process, on the same dataset.
//!
//! It also times, the same way, what lies between the two, so that the ratio can be read: counting every item
//! as the replay must (as sent: tool calls as JSON, roles, message overhead), the baseline replay alone
//! (no strategy, no probe, nothing written) and the replay of every strategy with its probes, nothing written.
//!
//! The ratio printed is the median of each round's ratio (its full comparison over its own floor, measured
//! seconds apart), which a shared machine's drift from round to round moves less than a ratio of medians; the
//! harness's own work (the full comparison less the floor) is printed in milliseconds too, as it does not
//! depend on the tokenizer's speed.
//!
//! `cargo run --release --example floor_ratio -- [DATASET] [REPEATS] [CONFIG]` (scripts/floor_ratio.sh runs
//! it). CONFIG is a run config (TOML), the default config when absent: its tokenizer and strategies are used.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use std::sync::Arc;

use ctxbench::history::dataset::read_all;
use ctxbench::llm::mock::MockLlm;
use ctxbench::replay::Replayer;
use ctxbench::run::{run, RunConfig};
use ctxbench::strategy::{NamedStrategy, StrategyConfig};
use ctxbench::{Episode, Tokenizer};
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
    anyhow::ensure!(repeats > 0, "REPEATS must be at least 1");
    let config = match args.next() {
        Some(path) => RunConfig::from_file(path.as_ref())?,
        None => RunConfig::default(),
    };
    let episodes = read_all(&dataset)?;
    let texts: Vec<String> = episodes
        .iter()
        .flat_map(|e| e.items.iter().map(|i| i.searchable_text()))
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum();

    let unprobed: Vec<Episode> = episodes
        .iter()
        .map(|e| Episode {
            probes: Vec::new(),
            ..e.clone()
        })
        .collect();
    let baseline = [NamedStrategy::new("none", StrategyConfig::None)];
    // Replays `episodes` under `strategies` in memory on a fresh pool (so that no per-thread cache is warm),
    // with a fresh tokenizer and mock.
    let replay = |episodes: &[Episode], strategies: &[NamedStrategy]| -> anyhow::Result<Duration> {
        let pool = rayon::ThreadPoolBuilder::new().build()?;
        let tok = Arc::new(Tokenizer::new(
            config.tokenizer.encoding,
            config.tokenizer.backend,
        )?);
        let llm = MockLlm::new(config.mock.clone(), Arc::clone(&tok));
        let replayer = Replayer::new(tok, &llm, config.context_window);
        let start = Instant::now();
        pool.install(|| {
            episodes
                .par_iter()
                .try_for_each(|e| replayer.replay_all(e, strategies).map(drop))
        })?;
        Ok(start.elapsed())
    };

    // Every measure alternates with the others, so that all see the same machine: on a shared box the speed
    // of the cores drifts over seconds.
    let out = tempfile::tempdir()?;
    let (mut floor, mut full) = (Vec::new(), Vec::new());
    let (mut as_sent, mut baseline_only, mut in_memory) = (Vec::new(), Vec::new(), Vec::new());
    let mut tokens = 0;
    for _ in 0..repeats {
        // A fresh tokenizer each time, no count cached, and a fresh pool, as the replays and `run` have: the
        // pre-tokenizer's per-thread search caches start cold, as they do in a run.
        let tok = Tokenizer::new(config.tokenizer.encoding, config.tokenizer.backend)?;
        let pool = rayon::ThreadPoolBuilder::new().build()?;
        let start = Instant::now();
        tokens = pool.install(|| texts.par_iter().map(|t| tok.count_text(t)).sum::<usize>());
        floor.push(start.elapsed());
        let tok = Tokenizer::new(config.tokenizer.encoding, config.tokenizer.backend)?;
        let pool = rayon::ThreadPoolBuilder::new().build()?;
        let start = Instant::now();
        let sent: usize = pool.install(|| {
            episodes
                .par_iter()
                .map(|e| e.items.iter().map(|i| tok.count_item(i)).sum::<usize>())
                .sum()
        });
        as_sent.push(start.elapsed());
        std::hint::black_box(sent);
        baseline_only.push(replay(&unprobed, &baseline)?);
        in_memory.push(replay(&episodes, &config.strategies)?);
        let start = Instant::now();
        run(
            &config,
            &dataset,
            out.path(),
            "floor",
            &(),
            &ctxbench::run::RunOptions::default(),
        )?;
        full.push(start.elapsed());
    }
    let ratios: Vec<f64> = {
        let mut r: Vec<f64> = floor
            .iter()
            .zip(&full)
            .map(|(f, t)| t.as_secs_f64() / f.as_secs_f64())
            .collect();
        r.sort_by(f64::total_cmp);
        r
    };
    let own: Vec<Duration> = floor
        .iter()
        .zip(&full)
        .map(|(&f, &t)| t.saturating_sub(f))
        .collect();
    let (floor, full, own) = (median(floor), median(full), median(own));
    println!(
        "dataset {}: {} episodes, {} items, {:.1} MB, {tokens} tokens; tokenizer {} ({}); {} threads, median of {repeats}",
        dataset.display(),
        episodes.len(),
        texts.len(),
        bytes as f64 / 1e6,
        config.tokenizer.encoding.as_str(),
        config.tokenizer.backend.as_str(),
        rayon::current_num_threads()
    );
    println!(
        "tokenize once: {:.1} ms ({:.1} MB/s)",
        floor.as_secs_f64() * 1e3,
        bytes as f64 / 1e6 / floor.as_secs_f64()
    );
    let floors = |d: Duration| d.as_secs_f64() / floor.as_secs_f64();
    for (what, d) in [
        ("count every item as sent, once", median(as_sent)),
        (
            "replay the baseline alone (no probe, nothing written)",
            median(baseline_only),
        ),
        (
            "replay every strategy with probes, nothing written",
            median(in_memory),
        ),
    ] {
        println!(
            "{what}: {:.1} ms ({:.2} floors)",
            d.as_secs_f64() * 1e3,
            floors(d)
        );
    }
    println!(
        "full comparison ({} strategies): {:.1} ms",
        config.strategies.len(),
        full.as_secs_f64() * 1e3
    );
    println!(
        "the harness's own work (full comparison less the floor): {:.1} ms",
        own.as_secs_f64() * 1e3
    );
    println!(
        "ratio: {:.2} (rounds {:.2}-{:.2}; ratio of the medians {:.2})",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1],
        full.as_secs_f64() / floor.as_secs_f64()
    );
    Ok(())
}
