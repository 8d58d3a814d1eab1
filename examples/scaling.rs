//! Replay cost against history length: one strategy's whole replay of seeded histories of 1,000 to 16,000
//! items, median of 7, and the cost per item. Flat per-item cost means linear growth.
//!
//! `cargo run --release --example scaling -- [STRATEGY=all]` (a default strategy's name, or all of them).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxbench::gen::synthetic_history;
use ctxbench::llm::mock::{MockConfig, MockLlm};
use ctxbench::replay::Replayer;
use ctxbench::strategy::defaults;
use ctxbench::{Episode, Tokenizer};

const SIZES: [usize; 5] = [1_000, 2_000, 4_000, 8_000, 16_000];
const REPEATS: usize = 7;

fn main() -> anyhow::Result<()> {
    let which = std::env::args().nth(1);
    let strategies: Vec<_> = defaults()
        .into_iter()
        .filter(|s| which.as_deref().is_none_or(|w| w == "all" || w == s.name))
        .collect();
    if strategies.is_empty() {
        let names: Vec<String> = defaults().into_iter().map(|s| s.name).collect();
        anyhow::bail!("no default strategy is named {which:?}: expected one of {names:?} or all");
    }
    let tok = Tokenizer::shared_default()?;
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let episodes: Vec<Episode> = SIZES
        .iter()
        .map(|&n| Episode {
            id: format!("synthetic-{n}"),
            source: "scaling".into(),
            task: String::new(),
            items: synthetic_history(n),
            findings: vec![],
            ..Episode::default()
        })
        .collect();
    println!(
        "| strategy | {} | growth 1k -> 16k |",
        SIZES.map(|n| format!("{}k items", n / 1000)).join(" | ")
    );
    println!("|---|{}---:|", "---:|".repeat(SIZES.len()));
    for named in &strategies {
        let mut cells = Vec::new();
        let mut times = Vec::new();
        for ep in &episodes {
            let mut runs: Vec<Duration> = (0..REPEATS)
                .map(|_| {
                    let replayer = Replayer::new(Arc::clone(&tok), &llm, 128_000);
                    let start = Instant::now();
                    let out = replayer.replay(ep, named);
                    let took = start.elapsed();
                    out.map(|r| {
                        std::hint::black_box(r);
                        took
                    })
                })
                .collect::<Result<_, _>>()?;
            runs.sort();
            let median = runs[REPEATS / 2].as_secs_f64();
            #[allow(clippy::cast_precision_loss)]
            let per_item = median * 1e6 / ep.items.len() as f64;
            cells.push(format!("{:.2} ms ({per_item:.2} µs/item)", median * 1e3));
            times.push(median);
        }
        println!(
            "| {} | {} | {:.1}× |",
            named.name,
            cells.join(" | "),
            times[times.len() - 1] / times[0]
        );
    }
    Ok(())
}
