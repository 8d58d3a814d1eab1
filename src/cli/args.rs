//! The command line: every subcommand and its arguments (clap).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Replay recorded AI-agent histories through context-reduction strategies and measure savings, cost and
/// retention of key findings.
#[derive(Debug, Parser)]
#[command(name = "ctxbench", version, about, max_term_width = 100)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// A subcommand.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay a dataset through strategies (the mock LLM, or a real one from the config's `[llm]`) and write
    /// a report.
    Run(RunArgs),
    /// Run a grid of strategy settings and recommend the cheapest one that keeps enough findings.
    Sweep(SweepArgs),
    /// Re-create report.md, report.html and the charts of a run directory from its saved records.
    Report {
        /// The run directory (holding summary.json and steps.csv).
        run_dir: PathBuf,
        /// Print every column of the comparison, not only the five that fit 100 columns.
        #[arg(long)]
        wide: bool,
    },
    /// Write the episode explorer's page of episodes of a run (RUN_DIR/episodes/ID.html, self-contained): what
    /// each strategy sent at every call point beside the baseline, where findings were lost, the probes'
    /// answers. The report then links each page.
    Show(ShowArgs),
    /// Check dataset files and report every problem with file, line, episode and field.
    Validate {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Write a starting configuration to edit: the default comparison (`ctxbench.toml`), or a sweep grid.
    Init(InitArgs),
    /// Generate the bundled default dataset (seeded, byte-identical on every machine).
    Gen {
        /// Seed.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Output file.
        #[arg(long, short, default_value = "datasets/default.jsonl")]
        out: PathBuf,
    },
    /// List the built-in strategies and the peer presets (`-v`: each one's source, behaviour and
    /// configuration).
    Strategies {
        /// Also print each strategy's source, what it does and its configuration.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Print, as JSON lines, the request each strategy sends at every call point of a dataset, every LLM call
    /// answered with one fixed stand-in text: for comparing a preset with its framework's own code
    /// (scripts/conformance/).
    Sends(SendsArgs),
    /// Combine the shard runs of one dataset and config (`run --shard I/N`) into the run directory one `run`
    /// would have written.
    Merge(MergeArgs),
    /// Compare the baseline replay of imported traces with the usage the traces record (provider prompt tokens
    /// per episode and per call).
    Usage(UsageArgs),
    /// Convert agent traces (OpenAI, Anthropic, SWE-agent, mini-swe-agent, OpenHands, Claude Code, tau-bench,
    /// aider, smolagents, Inspect AI logs, OpenTelemetry GenAI and OpenInference OTLP/JSON exports) into a
    /// ctxbench dataset, adding automatic findings where there are none.
    Import(ImportArgs),
}

/// How tokens are counted: an OpenAI encoding, or the agent model's own Hugging Face tokenizer and chat
/// template.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TokenizerArgs {
    /// The OpenAI encoding (`o200k_base` for gpt-4o and later, `cl100k_base` for gpt-4 and gpt-3.5);
    /// default: the config's, else o200k_base.
    #[arg(long)]
    pub encoding: Option<crate::tokens::Encoding>,
    /// The agent model's own Hugging Face tokenizer.json: it counts instead of the encoding (DeepSeek's:
    /// scripts/fetch_tokenizer.sh deepseek).
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// The model's chat template (a Jinja file, or its tokenizer_config.json), with --tokenizer; the verified
    /// ones are in configs/templates/ (deepseek-v3.2.jinja).
    #[arg(long, value_name = "FILE")]
    pub chat_template: Option<PathBuf>,
}

impl TokenizerArgs {
    /// What these arguments set over a configuration's tokenizer.
    #[must_use]
    pub fn overrides(&self) -> crate::run::TokenizerOverride {
        crate::run::TokenizerOverride {
            encoding: self.encoding,
            file: self.tokenizer.clone(),
            chat_template: self.chat_template.clone(),
        }
    }
}

/// Arguments of `ctxbench sends`.
#[derive(Debug, clap::Args)]
pub struct SendsArgs {
    /// Dataset file (JSON lines of episodes).
    #[arg(long, default_value = "datasets/default.jsonl")]
    pub dataset: PathBuf,
    /// Strategies, by name (comma-separated): built-in ones and presets.
    #[arg(long, value_delimiter = ',', required = true)]
    pub strategies: Vec<String>,
    /// The context window, in tokens.
    #[arg(long, default_value_t = 128_000)]
    pub window: usize,
}

/// Arguments of `ctxbench show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The run directory (holding summary.json, steps.csv, findings.csv).
    pub run_dir: PathBuf,
    /// An episode to show (repeat for more); default: the episodes the report names (those of the findings
    /// lost most often, and the largest).
    #[arg(long = "episode", value_name = "ID")]
    pub episodes: Vec<String>,
    /// Strategies to show beside the baseline, by name (comma-separated); default: every strategy of the run.
    #[arg(long, value_delimiter = ',')]
    pub strategies: Vec<String>,
    /// The dataset the run read, when it is no longer at the path summary.json records (its SHA-256 must
    /// match).
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    /// With a real LLM: call the endpoint (through the response cache) instead of answering every call from
    /// the run's llm_calls.jsonl.
    #[arg(long)]
    pub call_llm: bool,
    /// With --call-llm: send no call that could take the spend past this many USD.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// The model's tokenizer.json the run counted with, when it moved since (the run's own otherwise).
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// Its chat template, when it moved since the run.
    #[arg(long, value_name = "FILE")]
    pub chat_template: Option<PathBuf>,
}

/// Arguments of `ctxbench run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Dataset file (JSON lines of episodes) or directory of .jsonl files; an agent's own trace is converted
    /// with `ctxbench import` first. Where no file is at datasets/default.jsonl, that path is the bundled
    /// dataset, generated in memory (what `ctxbench gen` writes).
    #[arg(long, default_value = "datasets/default.jsonl")]
    pub dataset: PathBuf,
    /// TOML config (strategies, window, tokenizer, pricing, mock model): `ctxbench init` writes one to edit;
    /// configs/*.toml are bundled, read from the binary where no such file is.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Strategies to compare, by name (comma-separated or repeated): the config's, the built-in ones, the peer
    /// presets (`ctxbench strategies` lists them), `presets` for every preset, `all` for every built-in
    /// strategy and preset; default: all in the config.
    #[arg(long, value_delimiter = ',')]
    pub strategies: Vec<String>,
    /// Output directory; default reports/<name>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run name; default: the config file's stem, or "default".
    #[arg(long)]
    pub name: Option<String>,
    /// Override the context window, in tokens (budgets given as a share of the window follow it).
    #[arg(long)]
    pub window: Option<usize>,
    /// The retention at need (0 to 1) the recommended strategy must keep; default 0.9 or the config's
    /// `min_retention`.
    #[arg(long, value_name = "SHARE")]
    pub min_retention: Option<f64>,
    /// The fewest needs a strategy must have met on the episodes it acted on for its retention there to be
    /// evidence; with fewer it is "not enough evidence", never recommended. Default 10.
    #[arg(long, value_name = "N")]
    pub min_needs: Option<u64>,
    /// The fewest episodes a strategy must have acted on, with a need met from its first act on, for its
    /// retention there to be evidence (fewer: "too few episodes", never recommended); no interval is given
    /// over fewer episodes. Default 5.
    #[arg(long, value_name = "N")]
    pub min_episodes: Option<u64>,
    /// Where no found finding is needed on any episode (retention measured nothing), recommend the cheapest
    /// strategy on savings alone instead of recommending nothing.
    #[arg(long)]
    pub recommend_without_retention: bool,
    /// Send (`keep`, the default) or leave out (`ignore`) the blocks of context the traces did not record
    /// (added by `import` where a trace records each call's prompt tokens but leaves part of it out).
    #[arg(long, value_enum)]
    pub unrecorded: Option<crate::run::UnrecordedMode>,
    /// How to count tokens (overrides the config's `[tokenizer]`).
    #[command(flatten)]
    pub tokens: TokenizerArgs,
    /// Also print every column of the comparison, and each strategy's compute time and its LLM calls'
    /// latency (p50, p95; in timings.csv too).
    #[arg(long, short)]
    pub verbose: bool,
    /// Print every column of the comparison, not only the five that fit 100 columns.
    #[arg(long)]
    pub wide: bool,
    /// Also write the explorer pages of the N most informative episodes (where the strategies lost the most
    /// needs, the largest first among equals) into OUT/episodes/, linked from the report.
    #[arg(long, value_name = "N")]
    pub explore: Option<usize>,
    /// With a real LLM (`[llm]` in the config): ignore the response cache and call the endpoint again.
    #[arg(long)]
    pub no_cache: bool,
    /// Continue the interrupted run in the output directory (same config and dataset), skipping the episodes
    /// it finished.
    #[arg(long)]
    pub resume: bool,
    /// With a real LLM: go on past an episode whose LLM call failed after its retries; it is left out of every
    /// figure, named in the report, and the run exits 1.
    #[arg(long)]
    pub keep_going: bool,
    /// With a real LLM: print the requests, tokens and USD the run would cost, per strategy and for probes,
    /// without calling the endpoint or writing anything.
    #[arg(long)]
    pub dry_run: bool,
    /// With a real LLM: send no call that could take the run's spend past this many USD (the run stops there,
    /// resumable).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Replay one shard of the dataset: `I/N` (the episodes at positions k with k mod N = I), `slurm` (from a
    /// Slurm array task's environment) or `k8s/N` (from a Kubernetes indexed job's JOB_COMPLETION_INDEX);
    /// `ctxbench merge` combines the N shard runs.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Which LLM calls llm_calls.jsonl holds: `all` (with what the model said), `failed` or `none`. By default
    /// all with a real LLM or judge (`ctxbench show` and `--explore` of such a run replay from them), failed
    /// with the mock alone (its answers are the same on every replay).
    #[arg(long, value_enum, value_name = "WHICH")]
    pub calls: Option<crate::run::CallLog>,
}

impl RunArgs {
    /// What these arguments set over the configuration.
    #[must_use]
    pub fn overrides(&self) -> crate::run::Overrides {
        crate::run::Overrides {
            strategies: self.strategies.clone(),
            window: self.window,
            min_retention: self.min_retention,
            min_needs: self.min_needs,
            min_episodes: self.min_episodes,
            recommend_without_retention: self.recommend_without_retention,
            unrecorded: self.unrecorded,
            tokenizer: self.tokens.overrides(),
            no_cache: self.no_cache,
        }
    }
}

/// Arguments of `ctxbench sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// Dataset file (JSON lines of episodes) or directory of .jsonl files; by default the bundled dataset
    /// (generated in memory where no file is at its path).
    #[arg(long, default_value = "datasets/default.jsonl")]
    pub dataset: PathBuf,
    /// Run config (window, tokenizer, pricing); its strategies are replaced by the grid.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Sweep grid (TOML); default: the built-in configs/sweep.toml.
    #[arg(long)]
    pub grid: Option<PathBuf>,
    /// The lowest acceptable retention at need, overriding the grid file's.
    #[arg(long)]
    pub min_retention: Option<f64>,
    /// Override the context window, in tokens (budgets given as a share of the window follow it).
    #[arg(long)]
    pub window: Option<usize>,
    /// The fewest needs met where a setting acted that count as evidence (default 10).
    #[arg(long, value_name = "N")]
    pub min_needs: Option<u64>,
    /// The fewest episodes a setting acted on, with a need met there, that count as evidence (default 5).
    #[arg(long, value_name = "N")]
    pub min_episodes: Option<u64>,
    /// Output directory; default reports/<name>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run name.
    #[arg(long, default_value = "sweep")]
    pub name: String,
}

/// What `ctxbench init` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InitKind {
    /// The default comparison (configs/default.toml): window, tokenizer, prices, the mock, strategies.
    Run,
    /// The built-in sweep grid (configs/sweep.toml), for `ctxbench sweep --grid`.
    Sweep,
    /// A grid over peer presets' thresholds (configs/sweep_presets.toml).
    SweepPresets,
}

/// Arguments of `ctxbench init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// What to write.
    #[arg(value_enum, default_value = "run")]
    pub kind: InitKind,
    /// The file to write; default ctxbench.toml, sweep.toml or sweep_presets.toml.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Replace the file if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `ctxbench merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The N shard run directories, in any order.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
    /// Run name.
    #[arg(long, default_value = "merged")]
    pub name: String,
    /// The dataset the shards replayed, when it is no longer at the path their summaries name (the merge reads
    /// it once, to check each shard's lines and to hash it for the merged summary, which names this path).
    #[arg(long, value_name = "PATH")]
    pub dataset: Option<PathBuf>,
    /// Print every column of the comparison, not only the five that fit 100 columns.
    #[arg(long)]
    pub wide: bool,
}

/// Arguments of `ctxbench usage`.
#[derive(Debug, clap::Args)]
pub struct UsageArgs {
    /// Dataset file or directory of .jsonl files (imported traces).
    pub dataset: PathBuf,
    /// How to count tokens.
    #[command(flatten)]
    pub tokens: TokenizerArgs,
    /// Send (`keep`, the default) or leave out (`ignore`) the blocks of context the traces did not record.
    #[arg(long, value_enum, default_value = "keep")]
    pub unrecorded: crate::run::UnrecordedMode,
    /// Also print each call.
    #[arg(long)]
    pub per_call: bool,
}

/// Arguments of `ctxbench import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The trace format.
    #[arg(long, short, default_value = "auto",
          value_parser = clap::builder::PossibleValuesParser::new(crate::history::import::format_names()))]
    pub format: String,
    /// Trace files or folders (the OTLP files of one export, spans and logs, are read together).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output dataset (JSONL).
    #[arg(long, short)]
    pub out: PathBuf,
    /// Tool definitions (JSON array, as the provider APIs take them) the agent ran with, for traces that do
    /// not record theirs: Claude Code, SWE-agent and mini-swe-agent function-calling runs, OpenTelemetry from
    /// opentelemetry-instrumentation-openai-v2, and OpenAI or Anthropic message files without `tools`. Every
    /// request then counts them. Episodes whose trace records tools keep their own (OpenHands' system event,
    /// smolagents' tool-calling agent, Inspect AI, OpenInference); tau-bench's shipped airline and retail
    /// schemas give way to these. aider, smolagents' code agent and text-mode runs send no tool schemas.
    #[arg(long)]
    pub tools: Option<PathBuf>,
    /// How to count tokens (the blocks of unrecorded context are sized with it).
    #[command(flatten)]
    pub tokens: TokenizerArgs,
    /// Where a trace records each call's prompt tokens but leaves part of the prompt out (Claude Code,
    /// aider, OpenHands without its system event): `keep` (default) adds a block of unrecorded context
    /// before each call point, the recorded size less the replay's; `ignore` adds none.
    #[arg(long, value_enum, default_value = "keep")]
    pub unrecorded: crate::run::UnrecordedMode,
}
