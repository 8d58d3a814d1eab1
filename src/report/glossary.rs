//! What every column of the report means, in the words of its definition (DESIGN's metric definitions; the
//! README's Metrics section says the same).

/// Each term of the report's tables and its definition, in the order the comparison shows them.
pub const GLOSSARY: &[(&str, &str)] = &[
    (
        "call point",
        "a moment the agent called its model: just before each recorded assistant turn, and at the end when \
         items follow the last turn. Every figure is over call points.",
    ),
    (
        "savings",
        "1 − input tokens / the baseline's input tokens, summed over every call point of every episode.",
    ),
    (
        "input tokens",
        "tokens of every request as sent (instructions, items, tool schemas, reply priming), summed over call points.",
    ),
    ("peak", "the largest request at any call point, in tokens."),
    (
        "steps over window",
        "call points whose request is larger than the context window (the agent's call would fail there).",
    ),
    (
        "LLM calls",
        "calls the strategy itself made (summaries), not the agent's and not the probes'.",
    ),
    (
        "cost",
        "USD of the agent's calls, the prefix shared with the previous request priced as cached input (and \
         writes to the cache at the cache-write price where the provider charges one), plus the strategy's \
         own calls. Cost (no cache) prices every input token at the full price.",
    ),
    (
        "cost saved",
        "1 − cost / the baseline's cost. Lower than savings when a strategy breaks the cached prefix.",
    ),
    (
        "retention at need",
        "of the findings the agent found (in a tool output, an observation or an earlier turn), the share of \
         (finding, need) pairs whose finding is in the request at the call point where the agent needs it; the \
         headline. A finding is in a request when its evidence occurs there on token boundaries, or, in a text \
         a model wrote, when its identifying tokens and enough of its content words do; a placeholder a \
         strategy wrote never counts. Pooled over pairs: an episode with no found finding adds nothing. \
         findings.csv lists every pair and, where lost, what lost it.",
    ),
    (
        "first need",
        "of the findings the agent found, the share in the request at the first call point where the agent \
         needs each: the hardest moment, before it could have restated it.",
    ),
    (
        "task-given",
        "a finding whose evidence is in the task or the first user message; its retention at need is reported \
         apart, not in the headline (a strategy that keeps the first user message cannot lose it).",
    ),
    (
        "final retention",
        "the share of the episode's findings in the request at its last call point.",
    ),
    (
        "mean retention",
        "the share of the findings introduced so far that are in the request, averaged over call points.",
    ),
    (
        "probe retention",
        "of the probes the unreduced request answers right, the share this strategy's request answers right too.",
    ),
    (
        "probe accuracy",
        "the share of all probes with accepted answers answered right; it measures the answering model as much \
         as the reduction.",
    ),
    (
        "acted on",
        "the episodes where the strategy changed a request at least once; the figures \"there\" are over them \
         alone.",
    ),
    (
        "what to pick",
        "the cheapest strategy that qualifies where it acted: its retention at need over the episodes it acted \
         on reaches the target (--min-retention) on at least --min-needs needs met there (fewer: not enough \
         evidence). A strategy that acted nowhere, or whose budget is below the floor on some episode, never \
         qualifies; where no found finding is needed anywhere, retention measured nothing and nothing is \
         recommended unless asked (--recommend-without-retention). The baseline is the strategy of type none.",
    ),
    (
        "floor, budget",
        "the floor is what no strategy may reduce in a request (reply priming, tool schemas, unrecorded \
         context, system messages, the task); a budget is the size a strategy brings a request down to (a \
         window's budget, a pipeline's trigger). Below the floor, a budget cannot work.",
    ),
    (
        "unrecorded context",
        "what the agent sent that the trace left out (a system prompt, tool schemas, a repo map, files in the \
         chat), sized call by call from the trace's recorded prompt tokens by import and sent by every strategy \
         in front of the request; savings and cost are over the whole request.",
    ),
    (
        "replay / recorded",
        "the baseline's input against the prompt tokens the traces record, per format; outside 0.97–1.03 the \
         report names the cause (context left out, the tokenizer, calls without usage).",
    ),
    (
        "95% interval",
        "the 2.5th to 97.5th percentile of the figure over paired Poisson-bootstrap replicates of the episodes.",
    ),
    (
        "judge score",
        "the judge's overall grade, 0–5, of the answers to open probes (those with a reference answer).",
    ),
    (
        "Pareto frontier (★)",
        "the strategies no other beats on both savings and retention at need.",
    ),
];

/// The glossary as a Markdown list.
#[must_use]
pub fn markdown() -> String {
    GLOSSARY
        .iter()
        .map(|(term, definition)| format!("- **{term}**: {definition}\n"))
        .collect()
}

/// The columns of `steps.csv` and `episodes.csv` after each row's identity, as the metrics' catalog declares
/// them (name, unit, meaning): the files' data dictionary, written once, where each metric declares its slots.
#[must_use]
pub fn file_columns() -> Vec<(&'static str, Vec<crate::metrics::Column>)> {
    let catalog = crate::metrics::Catalog::standard();
    vec![
        ("steps.csv", catalog.step_columns().to_vec()),
        ("episodes.csv", catalog.episode_columns().cloned().collect()),
    ]
}

/// [`file_columns`] as Markdown tables, one per file.
#[must_use]
pub fn file_columns_markdown() -> String {
    let mut out = String::new();
    for (file, columns) in file_columns() {
        out.push_str(&format!(
            "`{file}`, after its identity columns:\n\n| column | unit | meaning |\n|---|---|---|\n"
        ));
        for c in columns {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                c.name,
                c.unit.as_str(),
                c.doc.replace('|', "\\|")
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_of_the_files_has_a_unit_and_a_meaning() {
        let files = file_columns();
        assert_eq!(files.len(), 2);
        for (file, columns) in &files {
            assert!(columns.len() > 10, "{file}: {}", columns.len());
            for c in columns {
                assert!(
                    c.doc.trim().len() > 10,
                    "{file} `{}` has no meaning",
                    c.name
                );
            }
        }
        let md = file_columns_markdown();
        assert!(md.contains("| `savings` | share (0–1) |"), "{md}");
        assert!(md.contains("| `tokens_sent` | tokens |"), "{md}");
    }
}
