//! The episode explorer: one self-contained page per episode (`RUN_DIR/episodes/ID.html`) that shows, for each
//! strategy beside the baseline, what it sent at every call point — the tokens by item type, where it masked,
//! truncated, dropped or summarized, the items of each request (placeholders, struck-out drops, the summaries a
//! model wrote), where each finding was introduced, needed, kept or lost, and the probes' answers.
//!
//! The page is data and a script: [`page`] turns an episode, its replays and what a [`Capture`] saw of their
//! requests into one JSON document, which `assets/explorer/explorer.js` draws. Every distinct text is stored
//! once and referred to by index; a strategy's requests are stored as changes (an item's state changes at a
//! call point, a summary lives from one call point to another), so the page grows with the episode, not with
//! call points × items × strategies. Nothing is fetched: the page opens from the disk, offline.

pub mod capture;
mod trigger;

use serde_json::{json, Value};

pub use capture::{Capture, State, Texts, Timeline};
use trigger::trigger;

use crate::error::{Error, Result};
use crate::history::{Episode, Item, ItemKind};
use crate::replay::EpisodeReplay;
use crate::strategy::{NamedStrategy, StrategyConfig};
use crate::tokens::Tokenizer;

const TEMPLATE: &str = include_str!("../../../assets/explorer/page.html");
const SCRIPT: &str = include_str!("../../../assets/explorer/explorer.js");
const STYLE: &str = include_str!("../../../assets/explorer/explorer.css");

/// One strategy's replay of the episode, as the page shows it.
pub struct Replayed<'a> {
    /// The strategy.
    pub strategy: &'a NamedStrategy,
    /// Its replay.
    pub replay: &'a EpisodeReplay,
    /// What it sent, as a [`Capture`] saw it.
    pub timeline: &'a Timeline,
}

/// What the page says about the run.
pub struct RunInfo<'a> {
    /// The run's name.
    pub name: &'a str,
    /// Whether the page shows every strategy of the run (else it is a narrower page, written beside).
    pub every: bool,
    /// How the run took each episode's model, price and window.
    pub defaults: &'a crate::llm::pricing::Defaults,
}

/// The explorer page of `episode`: the baseline's replay first in `replays`, then the strategies', with the
/// `texts` their timelines refer to.
///
/// # Errors
/// When the page data cannot be serialized.
pub fn page(
    run: &RunInfo<'_>,
    episode: &Episode,
    tokenizer: &Tokenizer,
    replays: &[Replayed<'_>],
    texts: &Texts,
) -> Result<String> {
    let data = data(run, episode, tokenizer, replays, texts);
    let json = serde_json::to_string(&data).map_err(|e| Error::Serialize {
        what: "episode page",
        message: e.to_string(),
    })?;
    // Inside a <script> element, `<` is written as an escape so that no text of the episode ends it.
    let json = json.replace('<', "\\u003c");
    let title = format!("{} · {} · ctxbench", episode.id, run.name);
    let title = html_escape::encode_text(&title);
    // What the run's reports list the page as (read back by `read_page_file`).
    let meta = json!({
        "episode": episode.id,
        "strategies": replays.iter().map(|r| r.strategy.name.as_str()).collect::<Vec<_>>(),
        "every": run.every,
    })
    .to_string();
    let meta = html_escape::encode_double_quoted_attribute(&meta);
    Ok(fill(
        TEMPLATE,
        &[
            ("title", &title),
            ("meta", &meta),
            ("style", STYLE),
            ("script", SCRIPT),
            ("data", &json),
        ],
    ))
}

/// `template` with each `{{name}}` replaced by its value, in one pass (a value is never searched again).
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let name = &rest[start + 2..start + len];
        out.push_str(&rest[..start]);
        match values.iter().find(|v| v.0 == name) {
            Some((_, value)) => out.push_str(value),
            None => out.push_str(&rest[start..start + len + 2]),
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// The file name of `episode`'s page under `RUN_DIR/episodes/`: the id, or, when it holds characters other
/// than letters, digits, `.`, `-` and `_`, the id with those written as `_` and a short hash of the id.
#[must_use]
pub fn page_file(episode: &str) -> String {
    let safe: String = episode
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe == episode && !episode.starts_with('.') {
        format!("{episode}.html")
    } else {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(episode.as_bytes());
        format!(
            "{}-{:02x}{:02x}{:02x}{:02x}.html",
            safe.trim_start_matches('.'),
            digest[0],
            digest[1],
            digest[2],
            digest[3]
        )
    }
}

/// The file name of the page of `episode` that shows only `strategies` beside the baseline (a narrower page,
/// written beside the one with every strategy): [`page_file`]'s stem, then `+` and each strategy's name (`+`
/// is never in a page file's name otherwise, so it replaces no other page).
#[must_use]
pub fn narrow_page_file(episode: &str, strategies: &[&str]) -> String {
    let full = page_file(episode);
    let stem = full.trim_end_matches(".html");
    let names: Vec<String> = strategies
        .iter()
        .map(|s| {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .collect();
    format!("{stem}+{}.html", names.join("+"))
}

/// A page in a run directory's `episodes/`, as the run's reports list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageFile {
    /// The file's name under `episodes/`.
    pub file: String,
    /// The episode.
    pub episode: String,
    /// The strategies it shows, the baseline first.
    pub strategies: Vec<String>,
    /// Whether it shows every strategy of the run.
    pub every: bool,
}

/// What a page file says of itself (its `ctxbench-page` meta element, in the first kilobytes), or `None` for a
/// file that is not a page this version wrote.
#[must_use]
pub fn read_page_file(file: &str, head: &str) -> Option<PageFile> {
    let marker = "<meta name=\"ctxbench-page\" content=\"";
    let start = head.find(marker)? + marker.len();
    let end = start + head[start..].find('"')?;
    let json = html_escape::decode_html_entities(&head[start..end]);
    let v: Value = serde_json::from_str(&json).ok()?;
    Some(PageFile {
        file: file.to_owned(),
        episode: v["episode"].as_str()?.to_owned(),
        strategies: v["strategies"]
            .as_array()?
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
        every: v["every"].as_bool()?,
    })
}

/// The link to `episode`'s page from the run directory, opening at `strategy`'s request where `finding` left it
/// (either may be empty).
#[must_use]
pub fn page_link(episode: &str, strategy: &str, finding: &str) -> String {
    let mut link = format!("episodes/{}", page_file(episode));
    let enc = |s: &str| {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect::<String>()
    };
    if !strategy.is_empty() {
        link.push_str(&format!("#s={}", enc(strategy)));
        if !finding.is_empty() {
            link.push_str(&format!("&f={}", enc(finding)));
        }
    }
    link
}

/// The episodes the report of `run` names, in the order it names them: those of the findings lost most often,
/// the episode of its charts (the largest), and those of the summaries it quotes.
#[must_use]
pub fn named_episodes(run: &super::RunReport) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in run
        .most_lost
        .iter()
        .map(|l| &l.episode)
        .chain(std::iter::once(&run.charts.episode))
        .chain(run.examples.iter().map(|e| &e.episode))
    {
        if !id.is_empty() && !out.contains(id) {
            out.push(id.clone());
        }
    }
    out
}

/// What the reports say of an episode they name: its id, with the link to its page (opening at `strategy`'s
/// request where `finding` left it) when the page is in the run directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeRef {
    /// The episode.
    pub episode: String,
    /// The link, when its page exists.
    pub link: Option<String>,
}

impl EpisodeRef {
    /// `episode` of `run`, linked at `strategy` and `finding` when its page exists.
    #[must_use]
    pub fn new(run: &super::RunReport, episode: &str, strategy: &str, finding: &str) -> Self {
        Self {
            episode: episode.to_owned(),
            link: has_page(run, episode).then(|| page_link(episode, strategy, finding)),
        }
    }
}

/// One sentence per strategy that lost a need: the episode where it lost most, and what (from the report's
/// findings lost most often), keyed by strategy.
#[must_use]
pub fn worst(run: &super::RunReport) -> Vec<(String, EpisodeRef, String)> {
    let mut out: Vec<(String, EpisodeRef, String)> = Vec::new();
    for l in &run.most_lost {
        if out.iter().any(|(s, _, _)| *s == l.strategy) {
            continue;
        }
        out.push((
            l.strategy.clone(),
            EpisodeRef::new(run, &l.episode, &l.strategy, &l.finding),
            format!(
                "{}: {} of {} needs lost, {}",
                l.finding, l.lost, l.needs, l.lost_by
            ),
        ));
    }
    out
}

/// Whether `episode` has its page with every strategy in the run directory.
#[must_use]
pub fn has_page(run: &super::RunReport, episode: &str) -> bool {
    run.pages.iter().any(|p| p.every && p.episode == episode)
}

/// Whether some episode the report names has no page yet.
#[must_use]
pub fn pages_missing(run: &super::RunReport) -> bool {
    named_episodes(run).iter().any(|id| !has_page(run, id))
}

/// The sentence that says how to write the pages the report would link.
pub const SHOW_HINT: &str = "`ctxbench show` on this run directory writes the page of each episode named \
here (what every strategy sent, call point by call point, and where each finding was lost), and this report \
then links them; `ctxbench run --explore N` writes them as part of a run.";

fn label(item: &Item) -> String {
    match item {
        Item::Message { role, .. } if item.is_summary() => format!("{} (summary)", role.as_str()),
        Item::Message { role, .. } => role.as_str().to_owned(),
        Item::ToolCall { name, id, .. } => format!("call {name} #{id}"),
        Item::ToolResult {
            name,
            call_id,
            is_error,
            ..
        } => format!(
            "result {name} #{call_id}{}",
            if *is_error { " (error)" } else { "" }
        ),
        Item::Observation { name, .. } if name.is_empty() => "observation".to_owned(),
        Item::Observation { name, .. } => format!("observation {name}"),
        Item::Reasoning { .. } => "reasoning".to_owned(),
        Item::Unrecorded { tokens, .. } => format!("unrecorded context ({tokens} tokens)"),
    }
}

fn kind_index(kind: ItemKind) -> usize {
    ItemKind::ALL.iter().position(|&k| k == kind).unwrap_or(0)
}

fn state_index(state: State) -> usize {
    State::ALL.iter().position(|&s| s == state).unwrap_or(0)
}

fn opt(v: Option<usize>) -> Value {
    v.map_or(Value::from(-1), Value::from)
}

/// Where each finding's evidence occurs in `text`, as `[finding, start, end]` in UTF-16 code units (what a
/// script indexes strings by), compared case-insensitively.
fn marks(text: &str, finder: &Option<(aho_corasick::AhoCorasick, Vec<usize>)>) -> Vec<[usize; 3]> {
    let Some((ac, finding_of)) = finder else {
        return Vec::new();
    };
    let mut found: Vec<(usize, usize, usize)> = ac
        .find_overlapping_iter(text)
        .map(|m| (m.start(), m.end(), finding_of[m.pattern().as_usize()]))
        .collect();
    if found.is_empty() {
        return found.into_iter().map(|(s, e, f)| [f, s, e]).collect();
    }
    found.sort_unstable();
    found.dedup();
    // Byte offsets to UTF-16 offsets, in one pass over the text.
    let mut bounds: Vec<usize> = found.iter().flat_map(|&(s, e, _)| [s, e]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut units = std::collections::HashMap::with_capacity(bounds.len());
    let (mut byte, mut unit) = (0, 0);
    let mut chars = text.char_indices().peekable();
    for b in bounds {
        while byte < b {
            match chars.next() {
                Some((_, c)) => {
                    byte += c.len_utf8();
                    unit += c.len_utf16();
                }
                None => break,
            }
        }
        units.insert(b, unit);
    }
    found
        .into_iter()
        .map(|(s, e, f)| [f, units[&s], units[&e]])
        .collect()
}

fn data(
    run: &RunInfo<'_>,
    episode: &Episode,
    tokenizer: &Tokenizer,
    replays: &[Replayed<'_>],
    texts: &Texts,
) -> Value {
    // Counted as the replay counted: at the k the episode's record was fitted with, where it was.
    let tokenizer = &*tokenizer.at(crate::replay::unrecorded::k_of(episode, tokenizer));
    let items: Vec<Value> = episode
        .items
        .iter()
        .map(|item| {
            json!([
                kind_index(item.kind()),
                label(item),
                texts.get(item.text()),
                tokenizer.count_item(item),
                u8::from(item.is_sent()),
            ])
        })
        .collect();
    let (_, model) = run.defaults.resolve(episode);
    let strategies: Vec<Value> = replays
        .iter()
        .map(|r| strategy(r, episode, model.window))
        .collect();
    let tools = (!episode.tools.is_empty()).then(|| {
        json!({
            "n": episode.tools.len(),
            "tokens": tokenizer.count_tools(&episode.tools),
            "text": crate::tokens::tools::render(&episode.tools),
        })
    });
    json!({
        "run": run.name,
        "model": model.model,
        "price": model.price.as_deref().unwrap_or("unpriced"),
        "episode": episode.id,
        "source": episode.source,
        "task": episode.task,
        "window": model.window,
        "window_from": match model.window_from {
            crate::llm::pricing::WindowFrom::Option => "--window",
            crate::llm::pricing::WindowFrom::Table => "the model's input limit",
            crate::llm::pricing::WindowFrom::Config => "the configuration's",
        },
        "kinds": ItemKind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        "colors": ItemKind::ALL.iter().map(|&k| super::charts::kind_hex(k)).collect::<Vec<_>>(),
        "reference": super::charts::reference_hex(),
        "states": State::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "texts": texts.all.iter().map(|t| &**t).collect::<Vec<&str>>(),
        "marks": evidence_marks(episode, texts),
        "items": items,
        "points": episode.call_points(),
        "findings": findings_json(episode),
        "probes": probes_json(episode),
        "tools": tools,
        "unrecorded": unrecorded_json(episode, replays),
        "strategies": strategies,
    })
}

/// Where each finding's evidence occurs in the page's texts: `[text, finding, start, end]`.
fn evidence_marks(episode: &Episode, texts: &Texts) -> Vec<Value> {
    let mut patterns = Vec::new();
    let mut finding_of = Vec::new();
    for (f, finding) in episode.findings.iter().enumerate() {
        for e in finding.evidence.iter().filter(|e| !e.trim().is_empty()) {
            patterns.push(e.as_str());
            finding_of.push(f);
        }
    }
    let finder = aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(&patterns)
        .ok()
        .filter(|_| !patterns.is_empty())
        .map(|ac| (ac, finding_of));
    texts
        .all
        .iter()
        .enumerate()
        .flat_map(|(t, text)| {
            marks(text, &finder)
                .into_iter()
                .map(move |[f, s, e]| json!([t, f, s, e]))
        })
        .collect()
}

/// The episode's findings as the page reads them.
fn findings_json(episode: &Episode) -> Vec<Value> {
    episode
        .findings
        .iter()
        .map(|f| {
            json!({
                "id": f.id, "kind": f.kind.as_str(), "text": f.text, "evidence": f.evidence,
                "at": f.introduced_at, "task": f.from_task, "needs": f.needed_at,
            })
        })
        .collect()
}

/// The episode's probes as the page reads them, each with its finding's position.
fn probes_json(episode: &Episode) -> Vec<Value> {
    episode
        .probes
        .iter()
        .map(|p| {
            json!({
                "id": p.id, "q": p.question, "answers": p.answers, "reference": p.reference,
                "finding": p.finding.as_ref().and_then(|id| episode.findings.iter().position(|f| f.id == *id)),
                "kind": p.kind.as_str(),
            })
        })
        .collect()
}

/// How much of the input is context the trace did not record (blocks import added), and what; and the fit of
/// it ([`crate::replay::fit`]: its worst residual per call is the fidelity figure), read from the replay the
/// record is compared with (`as_recorded` where the agent compacted its own context, else the baseline:
/// [`crate::metrics::fidelity::compares_as_recorded`]).
fn unrecorded_json(episode: &Episode, replays: &[Replayed<'_>]) -> Option<Value> {
    let recorded = crate::metrics::fidelity::compares_as_recorded(episode);
    let r = replays
        .iter()
        .find(|r| recorded && matches!(r.strategy.config, StrategyConfig::AsRecorded(_)))
        .or_else(|| replays.iter().find(|r| r.strategy.config.is_baseline()))?;
    let sent: usize = r.replay.steps.iter().map(|s| s.tokens_sent).sum();
    let blocks: usize = r
        .replay
        .steps
        .iter()
        .map(|s| s.tokens_by_kind.get(ItemKind::Unrecorded))
        .sum();
    let fitted = crate::replay::fit::of_episode(episode, &r.replay.steps);
    // Named as the importer names it only where the fit finds one constant block.
    let what = crate::history::usage::ProviderUsage::of(episode)
        .and_then(|u| u.leaves_out)
        .map(|w| {
            crate::replay::fit::what_is_left_out(&w, fitted.as_ref().is_none_or(|f| f.constant()))
        });
    let fit = fitted.map(|f| {
        json!({
            "k": f.k,
            "k_fitted": f.k_fitted,
            "k_held_from": f.k_held_from,
            "worst": f.worst().map(|(_, w)| w),
            "flagged": f.flagged(),
            "constant": f.constant(),
            "by_construction": f.by_construction,
            "counted_at": f.counted_at,
        })
    });
    Some(json!({"tokens": blocks, "input": sent, "what": what, "fit": fit}))
}

fn strategy(r: &Replayed<'_>, episode: &Episode, window: usize) -> Value {
    let mut changed: Vec<(&usize, &Vec<capture::Transition>)> = r.timeline.items.iter().collect();
    changed.sort_by_key(|(i, _)| **i);
    let items: Vec<Value> = changed
        .into_iter()
        .map(|(i, ts)| {
            json!([
                i,
                ts.iter()
                    .map(|t| json!([t.step, state_index(t.state), opt(t.text), t.tokens]))
                    .collect::<Vec<_>>()
            ])
        })
        .collect();
    let written = |w: &[capture::Written]| -> Vec<Value> {
        w.iter()
            .map(|w| {
                json!([
                    w.from,
                    w.to,
                    opt(w.after),
                    w.text,
                    kind_index(w.kind),
                    w.tokens
                ])
            })
            .collect()
    };
    let trigger =
        trigger(&r.strategy.config, window).map(|(t, label)| json!({"tokens": t, "label": label}));
    // Where the framework the strategy reproduces fails the episode (it raises there).
    let failed = r.replay.steps.iter().find_map(|s| {
        s.failure
            .as_ref()
            .map(|e| json!({"step": s.step, "error": e}))
    });
    json!({
        "name": r.strategy.name,
        "config": serde_json::to_string(&r.strategy.config).unwrap_or_default(),
        "baseline": r.strategy.config == StrategyConfig::None,
        "trigger": trigger,
        "failed": failed,
        "steps": steps_json(r, episode),
        "items": items,
        "written": written(&r.timeline.written),
        "instructions": written(&r.timeline.instructions),
        "ledger": ledger_json(r, episode),
        "probes": answers_json(r, episode),
    })
}

/// A strategy's call points: tokens sent, before and cached, by kind, what it changed, and the findings
/// present.
fn steps_json(r: &Replayed<'_>, episode: &Episode) -> Vec<Value> {
    r.replay
        .steps
        .iter()
        .map(|s| {
            json!([
                s.tokens_sent,
                s.tokens_before,
                s.cached_tokens,
                s.tokens_by_kind.iter().map(|(_, n)| n).collect::<Vec<_>>(),
                s.compacted_items.saturating_sub(s.truncated_items),
                s.truncated_items,
                s.dropped_items,
                s.summarized_items,
                s.llm_calls.len(),
                u8::from(s.changed),
                (0..episode.findings.len())
                    .filter(|&f| s.present.contains(f))
                    .collect::<Vec<_>>(),
                s.floor_tokens,
            ])
        })
        .collect()
}

/// A strategy's needs: each finding at each need, kept or where and by what it was lost.
fn ledger_json(r: &Replayed<'_>, episode: &Episode) -> Vec<Value> {
    crate::metrics::needs::ledger(episode, &r.replay.steps)
        .into_iter()
        .map(|n| {
            json!([
                n.finding,
                opt(n.needed_at),
                n.step,
                u8::from(n.retained),
                opt(n.lost_at_step),
                n.lost_by.unwrap_or_default()
            ])
        })
        .collect()
}

/// A strategy's probe answers, graded.
fn answers_json(r: &Replayed<'_>, episode: &Episode) -> Vec<Value> {
    r.replay
        .probes
        .iter()
        .map(|p| {
            json!([
                episode.probes.iter().position(|q| q.id == p.probe),
                opt(p.step),
                u8::from(p.correct),
                p.answer,
                u8::from(p.judged),
                p.grades
                    .as_ref()
                    .map(|g| json!({"overall": g.overall, "dimensions": g.dimensions})),
            ])
        })
        .collect()
}
