//! The probes the unreduced context does not answer (with the mock LLM): what each asked, what it wanted and
//! what the mock answered. Probes like these are invalid: they cannot measure a reduction.
//!
//! `cargo run --release --example probe_misses -- DATASET [WINDOW]`

use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: probe_misses DATASET [WINDOW]")?;
    let window: usize = args.next().map_or(Ok(128_000), |w| w.parse())?;
    let tok = ctxbench::Tokenizer::shared_default()?;
    let llm = ctxbench::llm::mock::MockLlm::new(
        ctxbench::llm::mock::MockConfig::default(),
        Arc::clone(&tok),
    );
    let replayer = ctxbench::replay::Replayer::new(tok, &llm, window);
    let none =
        ctxbench::strategy::NamedStrategy::new("none", ctxbench::strategy::StrategyConfig::None);
    let (mut asked, mut missed) = (0, 0);
    for entry in ctxbench::history::dataset::stream(std::path::Path::new(&path))? {
        let (_, _, episode) = entry?;
        let replay = replayer.replay(&episode, &none)?;
        for record in &replay.probes {
            asked += 1;
            if record.correct {
                continue;
            }
            missed += 1;
            let probe = episode
                .probes
                .iter()
                .find(|p| p.id == record.probe)
                .ok_or("a probe record without its probe")?;
            println!(
                "{} {}: {}\n  wants {:?}\n  got   {}",
                episode.id, record.probe, probe.question, probe.answers, record.answer
            );
        }
    }
    println!("{missed} of {asked} probes missed with the full context");
    Ok(())
}
