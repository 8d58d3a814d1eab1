//! `ctxbench show`: the episode explorer's pages of a finished run ([`crate::report::explorer`]).
//!
//! A page is made by replaying the episode again, from the dataset and configuration the run recorded in
//! `summary.json` (the dataset's SHA-256 must match), with a [`Capture`] watching every request. The mock
//! answers as it did in the run. A run with a real model is answered from its own record of every call
//! (`llm_calls.jsonl`), call by call, so nothing is sent; `call_llm` sends the requests through the run's
//! client instead (its response cache first, as `run` does). Pages go to `RUN_DIR/episodes/ID.html`, and the
//! run's report.md and report.html are rewritten to link them. A page of some of the run's strategies only
//! (`--strategies`) goes beside, to `ID+NAME….html`: it never replaces the page with every strategy.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::session::{Models, Session};
use super::RunConfig;
use crate::error::{Error, Result};
use crate::history::Episode;
use crate::llm::{Llm, LlmRequest, LlmResponse, Usage};
use crate::replay::calls::{CallRecord, Purpose};
use crate::report::explorer::{self, Capture, Replayed, RunInfo};
use crate::report::RunReport;
use crate::strategy::{NamedStrategy, StrategyConfig};

/// What to show.
#[derive(Debug, Clone, Default)]
pub struct ShowOptions {
    /// The episodes; none: the ones the report names (the findings lost most, the largest episode).
    pub episodes: Vec<String>,
    /// The strategies, by name (the baseline is always shown); none: every strategy of the run.
    pub strategies: Vec<String>,
    /// The dataset, when it moved since the run (its SHA-256 must still match).
    pub dataset: Option<PathBuf>,
    /// With a real model: send the requests the run's record cannot answer (through the response cache).
    pub call_llm: bool,
    /// The model tokenizer's `tokenizer.json` and chat template, when they moved since the run (the run's
    /// own are used otherwise).
    pub tokenizer: crate::run::TokenizerOverride,
    /// With `call_llm`: send no call that could take the spend past this many USD.
    pub max_cost: Option<f64>,
}

/// One page written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The episode.
    pub episode: String,
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: usize,
    /// For a page of some of the run's strategies: those strategies, and the page with every strategy when
    /// there is one (it is left as it was).
    pub narrow: Option<(Vec<String>, Option<PathBuf>)>,
}

/// The `n` most informative episodes of the run in `dir`: those where the strategies lost the most needs
/// (summed over strategies, from findings.csv), the largest first among equals (the baseline's input tokens,
/// from episodes.csv), then dataset order.
///
/// # Errors
/// A table that cannot be read.
pub fn most_informative(dir: &Path, n: usize) -> Result<Vec<String>> {
    let read = |name: &str| -> Result<csv::Reader<std::fs::File>> {
        let path = dir.join(name);
        csv::Reader::from_path(&path).map_err(|e| Error::Parse {
            path,
            line: 1,
            message: e.to_string(),
        })
    };
    // (episode, lost needs, baseline input tokens), in dataset order.
    let mut episodes: Vec<(String, u64, u64)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut table = read("episodes.csv")?;
    let headers = table
        .headers()
        .map_err(csv_error(dir, "episodes.csv"))?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h == name);
    let (ep, base) = (col("episode").unwrap_or(0), col("baseline_input_tokens"));
    for row in table.records() {
        let row = row.map_err(csv_error(dir, "episodes.csv"))?;
        let id = row.get(ep).unwrap_or_default().to_owned();
        let tokens = base
            .and_then(|b| row.get(b))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if !at.contains_key(&id) {
            at.insert(id.clone(), episodes.len());
            episodes.push((id, 0, tokens));
        }
    }
    let mut table = read("findings.csv")?;
    let headers = table
        .headers()
        .map_err(csv_error(dir, "findings.csv"))?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h == name);
    let (ep, kept) = (col("episode").unwrap_or(0), col("retained"));
    for row in table.records() {
        let row = row.map_err(csv_error(dir, "findings.csv"))?;
        let lost = kept.and_then(|k| row.get(k)) == Some("false");
        if let Some(&i) = row.get(ep).and_then(|id| at.get(id)) {
            episodes[i].1 += u64::from(lost);
        }
    }
    let mut order: Vec<usize> = (0..episodes.len()).collect();
    order.sort_by_key(|&i| {
        (
            std::cmp::Reverse(episodes[i].1),
            std::cmp::Reverse(episodes[i].2),
            i,
        )
    });
    Ok(order
        .into_iter()
        .take(n)
        .map(|i| episodes[i].0.clone())
        .collect())
}

fn csv_error<'a>(dir: &'a Path, name: &'a str) -> impl Fn(csv::Error) -> Error + 'a {
    move |e| Error::csv(dir.join(name), &e)
}

/// The configuration a run recorded, as a [`RunConfig`] again.
fn recorded_config(dir: &Path, run: &RunReport) -> Result<RunConfig> {
    let mut config = run.config.clone();
    if let Some(map) = config.as_object_mut() {
        // What a run adds to its configuration besides the config file's fields.
        map.remove("judge_digest");
        map.remove("shard");
    }
    serde_json::from_value(config).map_err(|e| {
        Error::Config(format!(
            "the configuration in '{}' cannot be read back: {e}",
            dir.join("summary.json").display()
        ))
    })
}

/// Writes the explorer page of each episode asked for (or named by the report) under `dir/episodes/`, and
/// rewrites the run's report.md and report.html to link them.
///
/// # Errors
/// A run directory without its records, a dataset that changed since the run or is not found, an episode not
/// in it, a replay that does not retrace the run's recorded calls, or a file that cannot be written.
pub fn show(dir: &Path, options: &ShowOptions) -> Result<Vec<Page>> {
    let run = crate::report::rebuild::load(dir)?;
    let mut config = recorded_config(dir, &run)?;
    let dataset = dataset_of(dir, &run, options)?;
    let all: Vec<String> = config.strategies.iter().map(|s| s.name.clone()).collect();
    let strategies = shown_strategies(&mut config, &options.strategies)?;
    let wanted = if options.episodes.is_empty() {
        explorer::named_episodes(&run)
    } else {
        options.episodes.clone()
    };
    if wanted.is_empty() {
        return Err(Error::Config(format!(
            "the report of '{}' names no episode: give one with --episode",
            dir.display()
        )));
    }
    let episodes = find_episodes(&dataset, &wanted)?;
    config.tokenizer = options
        .tokenizer
        .apply(std::mem::take(&mut config.tokenizer));
    let answers = Answers::new(dir, &config, options)?;
    let out = dir.join("episodes");
    std::fs::create_dir_all(&out).map_err(|e| Error::io("create", &out, e))?;
    // Every strategy of the run shown (the baseline is always): the page of the episode; else one beside it.
    let every = all
        .iter()
        .all(|name| strategies.iter().any(|s| s.name == *name));
    let info = RunInfo {
        name: &run.run,
        every,
        defaults: answers.session().defaults(),
    };
    let pages = episodes
        .iter()
        .map(|episode| write_page(&out, &info, episode, &strategies, &answers))
        .collect::<Result<Vec<Page>>>()?;
    crate::report::rebuild::relink(dir)?;
    Ok(pages)
}

/// The dataset the run read (or the one given for it, when it moved), refused when it is missing or changed.
fn dataset_of(dir: &Path, run: &RunReport, options: &ShowOptions) -> Result<PathBuf> {
    let dataset = options
        .dataset
        .clone()
        .unwrap_or_else(|| PathBuf::from(&run.dataset.path));
    if !dataset.exists() && !crate::bundled::is_generated_dataset(&dataset) {
        return Err(Error::Config(format!(
            "the run in '{}' read the dataset '{}', which is not there from this directory: run `ctxbench show` \
             from where the run was started, or give the dataset with --dataset",
            dir.display(),
            dataset.display()
        )));
    }
    // A shard hashed its own lines only, not the whole dataset: they are what its pages replay.
    let shard = run.config.get("shard").and_then(|s| {
        let get = |k: &str| usize::try_from(s.get(k)?.as_u64()?).ok();
        Some((get("index")?, get("count")?))
    });
    let (what, now, then) = match (&run.dataset.lines_xxh3, shard) {
        (Some(then), Some(every)) => (
            "its lines' xxh3",
            crate::history::dataset::shard_digest(&dataset, every)?,
            then.as_str(),
        ),
        _ => (
            "SHA-256",
            super::dataset_sha256(&dataset)?,
            run.dataset.sha256.as_str(),
        ),
    };
    if now != then {
        return Err(Error::Config(format!(
            "'{}' changed since the run in '{}' read it ({what} {} now, {} then): the pages would show another \
             replay than the report's; give the dataset the run read with --dataset, or run again",
            dataset.display(),
            dir.display(),
            now.get(..16).unwrap_or(&now),
            then.get(..16).unwrap_or(then)
        )));
    }
    Ok(dataset)
}

/// The run's baseline (whatever is asked for) and then the strategies asked for (all the run's when none are),
/// `config` keeping only those.
fn shown_strategies(config: &mut RunConfig, names: &[String]) -> Result<Vec<NamedStrategy>> {
    let baseline = config
        .strategies
        .iter()
        .find(|s| s.config == StrategyConfig::None)
        .cloned()
        .unwrap_or_else(|| NamedStrategy::new("(baseline)", StrategyConfig::None));
    if !names.is_empty() {
        config.select(names)?;
    }
    let mut strategies = vec![baseline];
    strategies.extend(
        config
            .strategies
            .iter()
            .filter(|s| s.config != StrategyConfig::None)
            .cloned(),
    );
    Ok(strategies)
}

/// One episode's page: every strategy replayed through `answers`, written where `info` says (the episode's
/// page, or one beside it naming the strategies shown).
fn write_page(
    out: &Path,
    info: &RunInfo<'_>,
    episode: &Episode,
    strategies: &[NamedStrategy],
    answers: &Answers,
) -> Result<Page> {
    let tokenizer = Arc::clone(answers.session().tokenizer());
    let capture = Capture::new(episode, Arc::clone(&tokenizer));
    let replays = strategies
        .iter()
        .map(|s| answers.replay(episode, s, &capture))
        .collect::<Result<Vec<_>>>()?;
    let (texts, timelines) = capture.finish();
    let empty = explorer::Timeline::default();
    let shown: Vec<Replayed<'_>> = strategies
        .iter()
        .zip(&replays)
        .map(|(s, r)| Replayed {
            strategy: s,
            replay: r,
            timeline: timelines.get(&s.name).unwrap_or(&empty),
        })
        .collect();
    let html = explorer::page(info, episode, &tokenizer, &shown, &texts)?;
    let full = out.join(explorer::page_file(&episode.id));
    let (path, narrow) = if info.every {
        (full, None)
    } else {
        let names: Vec<&str> = strategies[1..].iter().map(|s| s.name.as_str()).collect();
        let path = out.join(explorer::narrow_page_file(&episode.id, &names));
        let names = names.iter().map(|s| (*s).to_owned()).collect();
        (path, Some((names, full.is_file().then_some(full))))
    };
    crate::files::write_atomic(&path, html.as_bytes())?;
    Ok(Page {
        episode: episode.id.clone(),
        path,
        bytes: html.len(),
        narrow,
    })
}

/// The episodes of `dataset` with the ids `wanted`, in that order.
fn find_episodes(dataset: &Path, wanted: &[String]) -> Result<Vec<Episode>> {
    let mut left: HashSet<&str> = wanted.iter().map(String::as_str).collect();
    let mut found: HashMap<String, Episode> = HashMap::new();
    for episode in crate::history::dataset::stream_every(dataset, None)? {
        let (_, _, episode, _) = episode?;
        if left.remove(episode.id.as_str()) {
            found.insert(episode.id.clone(), episode);
            if left.is_empty() {
                break;
            }
        }
    }
    if !left.is_empty() {
        let mut missing: Vec<&str> = left.into_iter().collect();
        missing.sort_unstable();
        return Err(Error::Config(format!(
            "no episode {} in '{}'",
            missing
                .iter()
                .map(|m| format!("'{m}'"))
                .collect::<Vec<_>>()
                .join(", "),
            dataset.display()
        )));
    }
    Ok(wanted.iter().filter_map(|id| found.remove(id)).collect())
}

/// Who answers the replays' LLM calls: the session's models (the mock, or with `--call-llm` the run's clients,
/// bounded by `--max-cost`), or the run's record of its calls.
enum Answers {
    Live(Session),
    Recorded {
        session: Session,
        calls: HashMap<(String, String), Vec<CallRecord>>,
        judge: bool,
        model: String,
    },
}

impl Answers {
    fn new(dir: &Path, config: &RunConfig, options: &ShowOptions) -> Result<Self> {
        // The mock needs no record; a real model is called only when asked to, within the budget given.
        if options.call_llm || (config.llm.is_none() && config.judge.is_none()) {
            let models = if options.call_llm {
                Models::Real {
                    max_cost: options.max_cost,
                }
            } else {
                Models::MockOnly
            };
            return Ok(Answers::Live(Session::open(config, models)?));
        }
        Ok(Answers::Recorded {
            session: Session::open(config, Models::MockOnly)?,
            calls: read_calls(&dir.join("llm_calls.jsonl"))?,
            judge: config.judge.is_some(),
            model: config
                .llm
                .as_ref()
                .map_or_else(|| crate::llm::mock::UNNAMED.to_owned(), |l| l.model.clone()),
        })
    }

    /// The session the replays count with.
    fn session(&self) -> &Session {
        match self {
            Answers::Live(s) | Answers::Recorded { session: s, .. } => s,
        }
    }

    /// Replays `episode` under `strategy`, every request shown to `capture`.
    fn replay(
        &self,
        episode: &Episode,
        strategy: &NamedStrategy,
        capture: &Capture<'_>,
    ) -> Result<crate::replay::EpisodeReplay> {
        let (session, calls, judge, model) = match self {
            Answers::Live(session) => {
                return session
                    .replayer()
                    .observed(capture)
                    .replay(episode, strategy)
            }
            Answers::Recorded {
                session,
                calls,
                judge,
                model,
            } => (session, calls, *judge, model),
        };
        let recorded = calls
            .get(&(episode.id.clone(), strategy.name.clone()))
            .cloned()
            .unwrap_or_default();
        let (judged, asked): (Vec<CallRecord>, Vec<CallRecord>) = recorded
            .iter()
            .cloned()
            .partition(|c| c.purpose == Purpose::Judge);
        let llm = Recorded::new(model, asked, &episode.id, &strategy.name);
        let grader = judge.then(|| Recorded::new(model, judged, &episode.id, &strategy.name));
        let grader: &dyn Llm = match &grader {
            Some(g) => g,
            None => session.stand_in(),
        };
        let replay = session
            .replayer_with(&llm, grader)
            .observed(capture)
            .replay(episode, strategy)?;
        // The replay must have asked what the run asked, in the same order.
        let made: Vec<(Option<usize>, Purpose)> =
            replay.calls.iter().map(|c| (c.step, c.purpose)).collect();
        let then: Vec<(Option<usize>, Purpose)> =
            recorded.iter().map(|c| (c.step, c.purpose)).collect();
        if made != then {
            return Err(Error::Llm(format!(
                "episode '{}', strategy '{}': the replay made {} calls where the run recorded {} in \
                 llm_calls.jsonl: the page would not show what the run measured (`--call-llm` asks the model \
                 again)",
                episode.id,
                strategy.name,
                made.len(),
                then.len()
            )));
        }
        Ok(replay)
    }
}

/// The calls of `llm_calls.jsonl`, by (episode, strategy), in order.
fn read_calls(path: &Path) -> Result<HashMap<(String, String), Vec<CallRecord>>> {
    use std::io::BufRead as _;
    #[derive(serde::Deserialize)]
    struct Line {
        episode: String,
        strategy: String,
        #[serde(flatten)]
        call: CallRecord,
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    let mut out: HashMap<(String, String), Vec<CallRecord>> = HashMap::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| Error::io("read", path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let l: Line = serde_json::from_str(&line).map_err(|e| Error::Parse {
            path: path.to_owned(),
            line: n + 1,
            message: e.to_string(),
        })?;
        out.entry((l.episode, l.strategy)).or_default().push(l.call);
    }
    Ok(out)
}

/// An LLM that gives, call by call, the answers a run recorded (`llm_calls.jsonl`): what the model said then,
/// sent nowhere.
struct Recorded {
    model: String,
    calls: Mutex<VecDeque<CallRecord>>,
    whose: String,
}

impl Recorded {
    fn new(model: &str, calls: Vec<CallRecord>, episode: &str, strategy: &str) -> Self {
        Self {
            model: model.to_owned(),
            calls: Mutex::new(calls.into()),
            whose: format!("episode '{episode}', strategy '{strategy}'"),
        }
    }
}

impl Llm for Recorded {
    fn model(&self) -> &str {
        &self.model
    }

    fn generate(&self, _request: &LlmRequest) -> Result<LlmResponse> {
        let next = self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front();
        let Some(call) = next else {
            return Err(Error::Llm(format!(
                "{}: the replay asks more than the run recorded in llm_calls.jsonl (`--call-llm` asks the model)",
                self.whose
            )));
        };
        if let Some(error) = call.error {
            return Err(Error::Llm(error));
        }
        Ok(LlmResponse {
            text: call.text,
            usage: Usage {
                input_tokens: call.input_tokens,
                output_tokens: call.output_tokens,
            },
            latency_ms: call.latency_ms,
            meta: crate::llm::CallMeta {
                request_hash: call.request_hash,
                cached: true,
                ..crate::llm::CallMeta::default()
            },
        })
    }
}
