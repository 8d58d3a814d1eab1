//! Inspect AI eval logs (UK AISI's framework): `.eval` archives (a zip of `header.json`, `samples/*.json`, …,
//! its members zstd-compressed by current versions and deflated by older ones) and `.json` logs
//! (`--log-format json`: the header and every sample in one document).
//!
//! One episode per sample and epoch (`SAMPLE_epoch_N`). The conversation is the sample's `messages`; each
//! model call is a `model` event, whose input is either listed (`input`) or, in logs that de-duplicate
//! messages, ranges into the sample's pool `events_data.messages` (`input_refs: [[start, end), …]`). Strings
//! `attachment://HASH` anywhere in the sample are resolved through its `attachments`. A model event is the
//! call of the assistant message it produced (the same message id, or the message just after its input): that
//! call point's usage is its `output.usage` (`input_tokens` excludes the cache's, which are added back). A
//! model event whose output is not in the conversation (a model-graded scorer, a sub-agent) is counted in
//! `meta.inspect.other_model_calls`, not as a call point. Tool definitions come from the model events, the
//! task input, target and scores go into `meta.inspect`.

use std::io::Read as _;
use std::path::Path;

use serde_json::{Map, Value};

use super::calls::{self, Msg, ToolCall};
use super::compacted;
use super::{arguments_of, bad, episode, parse_json, sure, text_of, Importer, Sniff};
use crate::error::Result;
use crate::history::recorded::Compaction;
use crate::history::usage::{CallUsage, ProviderUsage};
use crate::history::Episode;

/// The zip archive's first bytes.
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Replaces every `attachment://KEY` string in `v` with its attachment.
fn resolve(v: &mut Value, attachments: &Map<String, Value>, missing: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            if let Some(key) = s.strip_prefix("attachment://") {
                match attachments.get(key).and_then(Value::as_str) {
                    Some(text) => *s = text.to_owned(),
                    None => missing.push(key.to_owned()),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| resolve(x, attachments, missing)),
        Value::Object(o) => o
            .iter_mut()
            .filter(|(k, _)| *k != "attachments")
            .for_each(|(_, x)| resolve(x, attachments, missing)),
        _ => {}
    }
}

/// An Inspect chat message (`ChatMessageSystem`, `…User`, `…Assistant`, `…Tool`).
fn message(v: &Value) -> Msg {
    let role = v.get("role").and_then(Value::as_str).unwrap_or("user");
    let (mut texts, mut reasoning) = (Vec::new(), Vec::new());
    match v.get("content") {
        Some(Value::Array(parts)) => {
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("reasoning") if p.get("redacted") != Some(&Value::Bool(true)) => {
                        reasoning.push(p.get("reasoning").map_or_else(String::new, text_of));
                    }
                    // Images, audio, video, documents and data are not text the replay can count.
                    Some("text") | None => texts.push(text_of(p)),
                    _ => {}
                }
            }
        }
        Some(content) => texts.push(text_of(content)),
        None => {}
    }
    let mut text = texts.join("\n");
    if role == "tool" && text.is_empty() {
        if let Some(error) = v.pointer("/error/message").and_then(Value::as_str) {
            text = error.to_owned();
        }
    }
    Msg {
        role: role.to_owned(),
        text,
        calls: v
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| ToolCall {
                id: c.get("id").and_then(Value::as_str).map(str::to_owned),
                name: c
                    .get("function")
                    .and_then(Value::as_str)
                    .unwrap_or("tool")
                    .to_owned(),
                arguments: c.get("arguments").map_or_else(|| "{}".into(), arguments_of),
            })
            .collect(),
        call_id: v
            .get("tool_call_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        name: v.get("function").and_then(Value::as_str).map(str::to_owned),
        reasoning: reasoning.join("\n"),
    }
}

/// A model event's input: listed, or ranges `[start, end)` into the pool.
fn event_input<'a>(event: &'a Value, pool: &'a [Value]) -> Vec<&'a Value> {
    match event.get("input").and_then(Value::as_array) {
        Some(input) if !input.is_empty() => input.iter().collect(),
        _ => event
            .get("input_refs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| Some((r.get(0)?.as_u64()?, r.get(1)?.as_u64()?)))
            .flat_map(|(start, end)| {
                let (start, end) = (
                    to_index(start).min(pool.len()),
                    to_index(end).min(pool.len()),
                );
                pool[start..end.max(start)].iter()
            })
            .collect(),
    }
}

fn to_index(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Inspect's `ModelUsage`: its `input_tokens` excludes the cache's tokens, which the prompt includes.
fn call_usage(u: &Value) -> CallUsage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let (read, write) = (n("input_tokens_cache_read"), n("input_tokens_cache_write"));
    CallUsage {
        input_tokens: n("input_tokens").unwrap_or(0) + read.unwrap_or(0) + write.unwrap_or(0),
        output_tokens: n("output_tokens").unwrap_or(0),
        cache_read_tokens: read,
        cache_write_tokens: write,
        ..CallUsage::default()
    }
}

/// Inspect's `ToolInfo` as the chat API takes it.
fn tool(info: &Value) -> Value {
    let mut f = Map::new();
    for key in ["name", "description", "parameters"] {
        if let Some(v) = info.get(key) {
            f.insert(key.into(), v.clone());
        }
    }
    serde_json::json!({"type": "function", "function": f})
}

/// Whether an Inspect message is a summary a compaction strategy wrote (`metadata.summary`).
fn is_summary(m: &Value) -> bool {
    m.pointer("/metadata/summary").is_some()
}

fn id_of(v: &Value) -> Option<&str> {
    v.get("id").and_then(Value::as_str)
}

/// The episode of one sample; `at` names it in errors, `header` is the log's header (`eval`, …).
fn sample_episode(mut sample: Value, header: &Value, origin: &Path, at: &str) -> Result<Episode> {
    resolve_attachments(&mut sample, origin, at)?;
    let Some(all) = sample.get("messages").and_then(Value::as_array) else {
        return Err(bad(
            origin,
            1,
            format!("at `{at}.messages`: expected a list of messages"),
        ));
    };
    // The summaries a compaction strategy wrote are what the agent sent after compacting, not its history.
    let raw: Vec<&Value> = all.iter().filter(|m| !is_summary(m)).collect();
    let raw = &raw[..];
    let messages: Vec<Msg> = raw.iter().map(|m| message(m)).collect();
    let pool = sample
        .pointer("/events_data/messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let all_events: Vec<&Value> = sample
        .get("events")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let events = all_events
        .iter()
        .filter(|e| e.get("event").and_then(Value::as_str) == Some("model"))
        .count();
    let Calls {
        usage,
        models,
        inputs,
        compacted,
        strategy,
        other,
        tools,
    } = match_events(raw, &messages, &all_events, pool, origin, at)?;
    let id = sample.get("id").map_or_else(String::new, |v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let epoch = sample.get("epoch").and_then(Value::as_u64).unwrap_or(1);
    let mut ep = episode(
        origin,
        Some(format!("{id}_epoch_{epoch}")),
        "inspect",
        calls::items(&messages),
    );
    ep.stopped = true;
    ep.tools = tools;
    if let Some(task) = sample.get("input").map(task_of).filter(|t| !t.is_empty()) {
        ep.task = task.chars().take(200).collect();
    }
    let meta = inspect_meta(&sample, header, events, other);
    ep.meta.insert("inspect".into(), Value::Object(meta));
    // Call points are the assistant messages that make a turn (a message with neither text nor calls makes
    // none); per-call usage only when every one has its model event.
    let is_turn =
        |m: &Msg| m.role == "assistant" && !(m.text.trim().is_empty() && m.calls.is_empty());
    let turns: Vec<Option<CallUsage>> = messages
        .iter()
        .zip(usage)
        .filter(|(m, _)| is_turn(m))
        .map(|(_, u)| u)
        .collect();
    let turn_models: Vec<Option<String>> = messages
        .iter()
        .zip(models)
        .filter(|(m, _)| is_turn(m))
        .map(|(_, m)| m)
        .collect();
    ep.set_models(
        header.pointer("/eval/model").and_then(Value::as_str),
        &turn_models,
    );
    match turns.into_iter().collect::<Option<Vec<_>>>() {
        Some(calls) if !calls.is_empty() => {
            ProviderUsage::from_calls("events[model].output.usage", calls).store(&mut ep);
        }
        _ => totals(&sample, events).store(&mut ep),
    }
    store_compactions(&mut ep, &messages, &inputs, compacted, &strategy);
    Ok(ep)
}

/// What a sample's events say of its messages (by position in the conversation): the usage of each assistant
/// message's call, what that call was sent, the compactions just before it; the compaction strategy's name, the
/// model calls that are no call point, the tools the agent had.
struct Calls {
    usage: Vec<Option<CallUsage>>,
    /// The model each assistant message's call names (the response's, else the event's).
    models: Vec<Option<String>>,
    inputs: Vec<Option<Vec<Msg>>>,
    compacted: Vec<Vec<Compaction>>,
    strategy: String,
    other: usize,
    tools: Vec<Value>,
}

/// Replaces each `attachment://` string of `sample` by the attachment's text.
fn resolve_attachments(sample: &mut Value, origin: &Path, at: &str) -> Result<()> {
    let attachments = sample
        .get("attachments")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut missing = Vec::new();
    resolve(sample, &attachments, &mut missing);
    match missing.first() {
        Some(key) => Err(bad(
            origin,
            1,
            format!("at `{at}`: `attachment://{key}` has no entry in the sample's `attachments`"),
        )),
        None => Ok(()),
    }
}

/// The text of a sample's input: a string, or the texts of its messages.
fn task_of(input: &Value) -> String {
    match input {
        Value::Array(list) => list
            .iter()
            .map(|m| message(m).text)
            .collect::<Vec<_>>()
            .join("\n"),
        other => text_of(other),
    }
}

/// Matches each model event to the assistant message it produced ([`Calls`]).
fn match_events(
    raw: &[&Value],
    messages: &[Msg],
    all_events: &[&Value],
    pool: &[Value],
    origin: &Path,
    at: &str,
) -> Result<Calls> {
    let mut usage: Vec<Option<CallUsage>> = vec![None; raw.len()];
    let mut models: Vec<Option<String>> = vec![None; raw.len()];
    let mut inputs: Vec<Option<Vec<Msg>>> = vec![None; raw.len()];
    let mut compacted: Vec<Vec<Compaction>> = vec![Vec::new(); raw.len()];
    let mut pending: Vec<Compaction> = Vec::new();
    let mut strategy = String::new();
    // The last model call since the agent's own that is not a call point (a summarizer's, a scorer's).
    let mut summarizer: Option<CallUsage> = None;
    let (mut other, mut tools) = (0, Vec::new());
    let mut model_events = 0;
    for event in all_events {
        if event.get("event").and_then(Value::as_str) == Some("compaction") {
            if let Some(name) = event.pointer("/metadata/strategy").and_then(Value::as_str) {
                name.clone_into(&mut strategy);
            }
            pending.push(compaction(event, summarizer.take()));
            continue;
        }
        if event.get("event").and_then(Value::as_str) != Some("model") {
            continue;
        }
        let k = model_events;
        model_events += 1;
        let input = event_input(event, pool);
        if input.len() > raw.len() && pool.is_empty() && event.get("input_refs").is_some() {
            return Err(bad(
                origin,
                1,
                format!("at `{at}.events`: model event {k} refers to `events_data.messages`, which is missing"),
            ));
        }
        let output = event.pointer("/output/choices/0/message");
        let by_id = output
            .and_then(id_of)
            .and_then(|id| raw.iter().position(|m| id_of(m) == Some(id)));
        let by_input = (input.len() < raw.len()
            && input.iter().zip(raw).all(|(a, &b)| {
                message(a).same(&message(b)) || id_of(a).is_some_and(|id| id_of(b) == Some(id))
            }))
        .then_some(input.len());
        match by_id
            .or(by_input)
            .filter(|&p| messages[p].role == "assistant")
        {
            Some(p) => {
                usage[p] = Some(
                    event
                        .pointer("/output/usage")
                        .map_or_else(CallUsage::default, call_usage),
                );
                inputs[p] = Some(input.iter().map(|m| message(m)).collect());
                models[p] = event
                    .pointer("/output/model")
                    .or_else(|| event.get("model"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                compacted[p].append(&mut pending);
                summarizer = None;
                if let Some(t) = event.get("tools").and_then(Value::as_array) {
                    tools = t.iter().map(tool).collect();
                }
            }
            None => {
                other += 1;
                summarizer = event.pointer("/output/usage").map(call_usage);
            }
        }
    }
    Ok(Calls {
        usage,
        models,
        inputs,
        compacted,
        strategy,
        other,
        tools,
    })
}

/// A `compaction` event, with the summarizer's call that made it (a model event of its own just before; none for
/// trim or edit).
fn compaction(event: &Value, summarizer: Option<CallUsage>) -> Compaction {
    let n = |k: &str| event.get(k).and_then(Value::as_u64);
    Compaction {
        call_point: 0,
        kind: event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("compaction")
            .to_owned(),
        tokens_before: n("tokens_before"),
        tokens_after: n("tokens_after"),
        llm_input_tokens: summarizer.map(|u| u.input_tokens),
        llm_output_tokens: summarizer.map(|u| u.output_tokens),
        unseen_summary: false,
    }
}

/// What the importer keeps of the log under `meta.inspect`.
fn inspect_meta(
    sample: &Value,
    header: &Value,
    model_events: usize,
    other: usize,
) -> Map<String, Value> {
    let mut meta = Map::new();
    for (key, value) in [
        ("task", header.pointer("/eval/task")),
        ("model", header.pointer("/eval/model")),
        ("sample_id", sample.get("id")),
        ("epoch", sample.get("epoch")),
        ("input", sample.get("input")),
        ("target", sample.get("target")),
        ("scores", sample.get("scores")),
        ("model_usage", sample.get("model_usage")),
    ] {
        if let Some(v) = value.filter(|v| !v.is_null()) {
            meta.insert(key.into(), v.clone());
        }
    }
    meta.insert("model_events".into(), Value::from(model_events));
    if other > 0 {
        meta.insert("other_model_calls".into(), Value::from(other));
    }
    meta
}

/// Stores what each call was sent where a compaction strategy made it differ from the history
/// ([`compacted::store`]).
fn store_compactions(
    ep: &mut Episode,
    messages: &[Msg],
    inputs: &[Option<Vec<Msg>>],
    mut compacted: Vec<Vec<Compaction>>,
    strategy: &str,
) {
    // What each call was sent, where a compaction strategy made it differ from the history.
    let mut sent = Vec::new();
    let mut compactions = Vec::new();
    for (p, m) in messages.iter().enumerate() {
        if m.role == "assistant" && !(m.text.trim().is_empty() && m.calls.is_empty()) {
            for mut c in std::mem::take(&mut compacted[p]) {
                c.call_point = sent.len();
                compactions.push(c);
            }
            sent.push(inputs[p].as_ref().map(|input| calls::items(input)));
        }
    }
    if !compactions.is_empty() {
        let by = format!(
            "inspect {}",
            if strategy.is_empty() {
                "compaction"
            } else {
                strategy
            }
        );
        compacted::store(&by, compactions, ep, &sent);
    }
}

/// The sample's `model_usage` totals, over every model.
fn totals(sample: &Value, model_events: usize) -> ProviderUsage {
    let models: Vec<CallUsage> = sample
        .get("model_usage")
        .and_then(Value::as_object)
        .map(|m| m.values().map(call_usage).collect())
        .unwrap_or_default();
    ProviderUsage {
        source: "model_usage".into(),
        api_calls: (model_events > 0).then_some(model_events as u64),
        input_tokens: (!models.is_empty()).then(|| models.iter().map(|u| u.input_tokens).sum()),
        output_tokens: (!models.is_empty()).then(|| models.iter().map(|u| u.output_tokens).sum()),
        ..ProviderUsage::default()
    }
}

/// A `.json` log: the header's fields and `samples` in one document.
fn import_json(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let log = parse_json(text, origin)?;
    let samples = match log.get("samples") {
        Some(Value::Array(s)) => s.clone(),
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(bad(origin, 1, "at `samples`: expected a list of samples")),
    };
    if samples.is_empty() {
        return Err(bad(
            origin,
            1,
            "the log holds no samples (written with --no-log-samples, or the eval did not run any)",
        ));
    }
    samples
        .into_iter()
        .enumerate()
        .map(|(i, s)| sample_episode(s, &log, origin, &format!("samples[{i}]")))
        .collect()
}

/// A `.eval` archive: `header.json` (or, for an eval still running, `_journal/start.json`) and one member
/// per sample and epoch under `samples/`.
fn import_eval(bytes: &[u8], origin: &Path) -> Result<Vec<Episode>> {
    let broken = |e: zip::result::ZipError| {
        bad(
            origin,
            1,
            format!("not a readable .eval archive ({e}); a truncated copy? Inspect writes the archive's index last"),
        )
    };
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(broken)?;
    let header = match archive_member(&mut archive, "header.json", origin)? {
        Some(h) => h,
        None => archive_member(&mut archive, "_journal/start.json", origin)?.ok_or_else(|| {
            bad(
                origin,
                1,
                "a zip archive without `header.json`: not an Inspect AI .eval log",
            )
        })?,
    };
    let mut names: Vec<String> = archive
        .file_names()
        .filter(|n| n.starts_with("samples/") && n.ends_with(".json"))
        .map(str::to_owned)
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(bad(
            origin,
            1,
            "the log holds no samples (written with --no-log-samples, or the eval did not run any)",
        ));
    }
    let mut out = Vec::new();
    for name in names {
        let sample = archive_member(&mut archive, &name, origin)?
            .expect("a member listed in the archive is in it");
        out.push(sample_episode(sample, &header, origin, &name)?);
    }
    Ok(out)
}

/// The JSON of the archive's member `name`, `None` when it has none.
fn archive_member(
    archive: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>,
    name: &str,
    origin: &Path,
) -> Result<Option<Value>> {
    let mut text = String::new();
    match archive.by_name(name) {
        Ok(mut file) => file.read_to_string(&mut text).map_err(|e| {
            bad(
                origin,
                1,
                format!("in member `{name}`: cannot read it ({e})"),
            )
        })?,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(bad(origin, 1, format!("in member `{name}`: {e}"))),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        bad(
            origin,
            e.line().max(1),
            format!(
                "in member `{name}`: {}",
                if e.is_eof() {
                    format!("truncated JSON ({e})")
                } else {
                    e.to_string()
                }
            ),
        )
    })
}

/// Whether `bytes` are a zip archive with an Inspect header.
fn is_eval(bytes: &[u8]) -> bool {
    bytes.starts_with(ZIP_MAGIC)
        && zip::ZipArchive::new(std::io::Cursor::new(bytes)).is_ok_and(|a| {
            a.file_names()
                .any(|n| n == "header.json" || n == "_journal/start.json")
        })
}

/// The inspect format.
pub struct Inspect;

impl Importer for Inspect {
    fn name(&self) -> &'static str {
        "inspect"
    }

    fn about(&self) -> &'static str {
        "Inspect AI eval log, .eval archive or .json (one episode per sample and epoch)"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        if let Some(o) = s.object() {
            return (o.contains_key("version")
                && o.get("eval").is_some_and(|e| e.get("task").is_some()))
            .then_some(sure::CERTAIN);
        }
        // A log that does not parse (truncated): Inspect writes `version`, `status`, then `eval` with its
        // `eval_id` first, so that its error is the JSON's, not "unknown format".
        let head: String = s.text.chars().take(400).collect();
        (s.document.is_none()
            && head.starts_with('{')
            && ["\"version\"", "\"eval\"", "\"eval_id\""]
                .iter()
                .all(|k| head.contains(k)))
        .then_some(sure::LIKELY)
    }

    fn sniff_binary(&self, bytes: &[u8]) -> Option<u8> {
        if is_eval(bytes) {
            Some(sure::CERTAIN)
        } else {
            // A zip that does not open (truncated): still the only zip format, so its error is the archive's.
            bytes.starts_with(ZIP_MAGIC).then_some(sure::LIKELY)
        }
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import_json(text, origin)
    }

    fn import_bytes(&self, bytes: &[u8], origin: &Path) -> Result<Vec<Episode>> {
        if bytes.starts_with(ZIP_MAGIC) {
            import_eval(bytes, origin)
        } else {
            import_json(super::utf8(bytes, origin)?, origin)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::history::Item;

    /// A sample by hand: pooled inputs in two ranges, an attachment, messages without ids, a scorer's call.
    #[test]
    fn pooled_inputs_attachments_and_a_scorer_call() {
        let (system, user) = (
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "attachment://a1"}),
        );
        let asks = json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "function": "read", "arguments": {"path": "a.txt"}}]});
        let result =
            json!({"role": "tool", "tool_call_id": "c1", "function": "read", "content": "alpha"});
        let done = json!({"role": "assistant", "content": "It says alpha."});
        let tools = json!([{"name": "read", "description": "Read a file.", "parameters": {"type": "object"}}]);
        let log = json!({
            "version": 2, "eval": {"task": "t", "model": "openai/gpt-4o"},
            "samples": [{
                "id": 7, "epoch": 2, "input": "Read a.txt", "target": "alpha",
                "messages": [system, user, asks, result, done],
                "attachments": {"a1": "Read a.txt, please."},
                "events_data": {"messages": [system, user, asks, result], "calls": []},
                "events": [
                    {"event": "model", "input": [], "input_refs": [[0, 2]], "tools": tools,
                     "output": {"choices": [{"message": asks}],
                                "usage": {"input_tokens": 10, "input_tokens_cache_read": 5, "output_tokens": 3}}},
                    {"event": "model", "input_refs": [[0, 1], [1, 4]], "tools": tools,
                     "output": {"choices": [{"message": done}], "usage": {"input_tokens": 30, "output_tokens": 4}}},
                    {"event": "model", "input": [{"role": "user", "content": "Grade: It says alpha."}],
                     "output": {"choices": [{"message": {"role": "assistant", "content": "C"}}],
                                "usage": {"input_tokens": 9, "output_tokens": 1}}}
                ]
            }]
        });
        let eps = import_json(&log.to_string(), Path::new("log.json")).unwrap();
        let ep = &eps[0];
        assert_eq!(ep.id, "log.json#7_epoch_2");
        assert_eq!(ep.items[1].text(), "Read a.txt, please.");
        assert!(
            matches!(&ep.items[2], Item::ToolCall { arguments, .. } if &**arguments == r#"{"path":"a.txt"}"#)
        );
        assert_eq!(ep.call_points(), vec![2, 4]);
        assert!(ep.stopped);
        assert_eq!(ep.tools[0]["function"]["name"], "read");
        let usage = ProviderUsage::of(ep).unwrap();
        assert_eq!(
            usage
                .calls
                .iter()
                .map(|c| c.input_tokens)
                .collect::<Vec<_>>(),
            [15, 30]
        );
        assert_eq!(usage.calls[0].cache_read_tokens, Some(5));
        assert_eq!(ep.meta["inspect"]["other_model_calls"], 1);
        assert_eq!(ep.meta["inspect"]["target"], "alpha");
        assert_eq!(ep.task, "Read a.txt");
    }
}
