//! `ctxbench strategies`: the built-in strategies and the peer presets as a list within 100 columns, each with
//! a line on what it is; `-v` adds each one's source, behaviour and configuration, wrapped the same way.

use std::io::Write;

use anyhow::Result;

use crate::strategy::StrategyConfig;

/// The width the list wraps at.
const WIDTH: usize = 100;

/// What a built-in strategy of the default comparison does, in a line.
fn about_builtin(name: &str, config: &StrategyConfig) -> &'static str {
    match (name, config) {
        (_, StrategyConfig::None) => "the baseline: every request as the agent sent it",
        ("sliding_window", _) => {
            "keeps the system prompt, the task and the newest items within an eighth of the window"
        }
        ("compaction", _) => "replaces tool outputs older than the last 3 with reference stubs",
        ("summarization", _) => {
            "over half the window, a model's summary replaces the middle of the history"
        }
        ("pipeline", _) => {
            "the book's pipeline: over half the window, compaction, then summarization if still over"
        }
        _ => "a strategy of the default comparison",
    }
}

/// `text` wrapped at [`WIDTH`] columns, its first line after `first` and the others indented by `indent`
/// spaces.
fn hanging(first: &str, text: &str, indent: usize) -> String {
    let rest = " ".repeat(indent);
    let options = textwrap::Options::new(WIDTH)
        .initial_indent(first)
        .subsequent_indent(&rest)
        .break_words(true);
    textwrap::fill(text, options)
}

/// A configuration as JSON with a space after each `,` and `:` outside strings, so that it wraps between
/// fields.
fn spaced_json(config: &StrategyConfig) -> Result<String> {
    let json = serde_json::to_string(config)?;
    let mut out = String::with_capacity(json.len() + json.len() / 8);
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        out.push(c);
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c == ',' || c == ':' {
            out.push(' ');
        }
    }
    Ok(out)
}

/// Writes the list: names and a line each, or with `verbose` every detail.
///
/// # Errors
/// When stdout cannot be written.
pub(super) fn list(stdout: &mut impl Write, verbose: bool) -> Result<()> {
    let defaults = crate::strategy::defaults();
    let presets = crate::strategy::presets::presets();
    let name_width = defaults
        .iter()
        .map(|s| s.name.chars().count())
        .chain(presets.iter().map(|p| p.name.chars().count()))
        .max()
        .unwrap_or(16);
    let indent = name_width + 4;
    let head = |name: &str| format!("  {name:<name_width$}  ");
    writeln!(stdout, "Built-in strategies (the default comparison):")?;
    for s in &defaults {
        writeln!(
            stdout,
            "{}",
            hanging(&head(&s.name), about_builtin(&s.name, &s.config), indent)
        )?;
        if verbose {
            let config = format!("config: {}", spaced_json(&s.config)?);
            writeln!(stdout, "{}", hanging(&" ".repeat(indent), &config, indent))?;
        }
    }
    writeln!(
        stdout,
        "\n{}",
        hanging(
            "",
            "Peer presets, configured as other agents' context managers (`--strategies NAME`, or \
             `--strategies presets` for all):",
            0
        )
    )?;
    for p in &presets {
        writeln!(stdout, "{}", hanging(&head(p.name), p.source, indent))?;
        let checked = crate::strategy::presets::checked::checked(p.name);
        let pad = " ".repeat(indent);
        if let Some(c) = checked {
            let line = format!(
                "checked: {} on {}, call point by call point (scripts/conformance, docs/presets.md)",
                c.release, c.date
            );
            writeln!(stdout, "{}", hanging(&pad, &line, indent))?;
        } else if let Some(why) = crate::strategy::presets::checked::unchecked(p.name) {
            writeln!(
                stdout,
                "{}",
                hanging(&pad, &format!("not checked: {why}"), indent)
            )?;
        }
        if verbose {
            let count = crate::strategy::presets::checked::count(p.name);
            writeln!(
                stdout,
                "{}",
                hanging(&pad, &format!("count: {}", count.describe()), indent)
            )?;
            writeln!(
                stdout,
                "{}",
                hanging(&pad, &format!("does: {}", p.note), indent)
            )?;
            let config = format!("config: {}", spaced_json(&p.config)?);
            writeln!(stdout, "{}", hanging(&pad, &config, indent))?;
        }
    }
    if !verbose {
        writeln!(
            stdout,
            "\n`ctxbench strategies -v` adds the count each triggers on, what it does and its configuration."
        )?;
    }
    Ok(())
}

/// `ctxbench sends`: the requests the named strategies send on a dataset, as JSON lines on stdout.
///
/// # Errors
/// An unknown strategy, a dataset that cannot be read, or stdout that cannot be written.
pub(super) fn sends(stdout: &mut impl Write, args: &super::args::SendsArgs) -> Result<()> {
    use anyhow::Context;
    let mut strategies = Vec::new();
    for name in &args.strategies {
        let found = crate::strategy::defaults()
            .into_iter()
            .find(|s| s.name == *name)
            .or_else(|| crate::strategy::presets::find(name))
            .with_context(|| {
                format!("unknown strategy '{name}' (`ctxbench strategies` lists them)")
            })?;
        strategies.push(found);
    }
    let tokenizer = crate::tokens::Tokenizer::shared_default()?;
    crate::run::sends::sends(&args.dataset, &strategies, args.window, tokenizer, stdout)
        .with_context(|| format!("failed to replay '{}'", args.dataset.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_fits_100_columns_with_and_without_details() {
        for verbose in [false, true] {
            let mut out = Vec::new();
            list(&mut out, verbose).unwrap();
            let text = String::from_utf8(out).unwrap();
            for line in text.lines() {
                assert!(line.chars().count() <= WIDTH, "{line}");
            }
            for p in crate::strategy::presets::presets() {
                assert!(text.contains(&format!("  {} ", p.name)), "{}", p.name);
            }
            assert_eq!(text.contains("config: {\"type\": \"none\"}"), verbose);
        }
    }

    #[test]
    fn every_default_strategy_says_what_it_does() {
        for s in crate::strategy::defaults() {
            assert_ne!(
                about_builtin(&s.name, &s.config),
                "a strategy of the default comparison",
                "{}",
                s.name
            );
        }
        assert_eq!(
            spaced_json(&StrategyConfig::None).unwrap(),
            "{\"type\": \"none\"}"
        );
    }
}
