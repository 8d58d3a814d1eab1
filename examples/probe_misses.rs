//! The probes the unreduced context does not answer (with the mock LLM): what each asked, what it wanted and
//! what the mock answered. Probes like these are invalid: they cannot measure a reduction.
//!
//! With strategy names after the window, also the valid probes where a strategy's probe and its retention
//! disagree: answered though the finding's evidence is not in the request (`answered, gone`), or missed though
//! it is (`missed, there`), and how many of each — the probes and retention at need should tell one story.
//!
//! `cargo run --release --example probe_misses -- DATASET [WINDOW] [STRATEGY…]` (strategies by their default
//! names: sliding_window, compaction, summarization, pipeline)

use std::sync::Arc;

use ctxbench::replay::EpisodeReplay;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: probe_misses DATASET [WINDOW] [STRATEGY…]")?;
    let window: usize = args.next().map_or(Ok(128_000), |w| w.parse())?;
    let wanted: Vec<String> = args.collect();
    let defaults = ctxbench::strategy::defaults();
    let mut strategies = Vec::new();
    for name in &wanted {
        let s = defaults
            .iter()
            .find(|s| s.name == *name)
            .ok_or_else(|| format!("no default strategy named {name}"))?;
        strategies.push(s);
    }
    let tok = ctxbench::Tokenizer::shared_default()?;
    let llm = ctxbench::llm::mock::MockLlm::new(
        ctxbench::llm::mock::MockConfig::default(),
        Arc::clone(&tok),
    );
    let replayer = ctxbench::replay::Replayer::new(tok, &llm, window);
    let none =
        ctxbench::strategy::NamedStrategy::new("none", ctxbench::strategy::StrategyConfig::None);
    let (mut asked, mut missed) = (0, 0);
    // Per strategy: valid probes, answered though gone, missed though there.
    let mut disagree = vec![(0usize, 0usize, 0usize); strategies.len()];
    for entry in ctxbench::history::dataset::stream(std::path::Path::new(&path))? {
        let (_, _, episode) = entry?;
        let baseline = replayer.replay(&episode, &none)?;
        for record in &baseline.probes {
            let probe = episode
                .probes
                .iter()
                .find(|p| p.id == record.probe)
                .ok_or("a probe record without its probe")?;
            if probe.answers.is_empty() {
                continue; // an open probe: the judge's
            }
            asked += 1;
            if record.correct {
                continue;
            }
            missed += 1;
            println!(
                "{} {}: {}\n  wants {:?}\n  got   {}",
                episode.id, record.probe, probe.question, probe.answers, record.answer
            );
        }
        for (s, strategy) in strategies.iter().enumerate() {
            let replay = replayer.replay(&episode, strategy)?;
            disagreements(&episode, &baseline, &replay, &mut disagree[s]);
        }
    }
    println!("{missed} of {asked} probes with accepted answers missed with the full context");
    for (s, (valid, gone, there)) in strategies.iter().zip(disagree) {
        println!(
            "{}: of {valid} valid probes, {gone} answered though the finding is gone, {there} missed though it is there",
            s.name
        );
    }
    Ok(())
}

/// Prints the valid probes of `replay` whose answer disagrees with its finding's presence at their call point,
/// and counts them in `(valid, answered though gone, missed though there)`.
fn disagreements(
    episode: &ctxbench::Episode,
    baseline: &EpisodeReplay,
    replay: &EpisodeReplay,
    counts: &mut (usize, usize, usize),
) {
    for record in &replay.probes {
        let Some(probe) = episode.probes.iter().find(|p| p.id == record.probe) else {
            continue;
        };
        let valid = baseline
            .probes
            .iter()
            .any(|b| b.probe == record.probe && b.step == record.step && b.correct);
        if probe.answers.is_empty() || !valid {
            continue;
        }
        counts.0 += 1;
        let finding = probe
            .finding
            .as_ref()
            .and_then(|id| episode.findings.iter().position(|f| f.id == *id));
        let step = record.step.and_then(|s| replay.steps.get(s));
        let (Some(f), Some(step)) = (finding, step) else {
            continue;
        };
        let there = step.present.contains(f);
        if there == record.correct {
            continue;
        }
        if there {
            counts.2 += 1;
        } else {
            counts.1 += 1;
        }
        println!(
            "{} {} {} ({}): {}\n  wants {:?}\n  got   {}",
            replay.strategy,
            episode.id,
            record.probe,
            if there {
                "missed, there"
            } else {
                "answered, gone"
            },
            probe.question,
            probe.answers,
            record.answer
        );
    }
}
