//! Traces where observability and eval tools keep them: Inspect AI logs, OpenTelemetry GenAI exports (both
//! conventions) and OpenInference spans, from fixtures the real libraries wrote (scripts/make_obs_fixtures.sh):
//! one episode per conversation, one call point per model call, every call replayed within 3% of the prompt
//! tokens it records.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;

use ctxbench::history::import::import_file;
use ctxbench::history::usage::ProviderUsage;
use ctxbench::{Episode, Item};

use crate::{ctxbench, root, text};

fn obs(name: &str) -> PathBuf {
    root().join("tests/fixtures/import/obs").join(name)
}

/// Every Markdown table in `stdout`, each a list of rows keyed by the table's headers.
fn tables(stdout: &str) -> Vec<Vec<HashMap<String, String>>> {
    let mut out: Vec<Vec<HashMap<String, String>>> = Vec::new();
    let mut header: Option<Vec<String>> = None;
    for line in stdout.lines() {
        if !line.starts_with('|') {
            header = None;
            continue;
        }
        let cells: Vec<String> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect();
        match &header {
            None => {
                header = Some(cells);
                out.push(Vec::new());
            }
            Some(_) if line.chars().all(|c| "|-: ".contains(c)) => {}
            Some(h) => out
                .last_mut()
                .unwrap()
                .push(h.iter().cloned().zip(cells).collect()),
        }
    }
    out
}

/// Imports `inputs` with `--format auto` (and `--tools`), and returns the episodes written and what
/// `ctxbench usage --per-call` prints for them.
fn import_and_usage(inputs: &[PathBuf], tools: bool) -> (Vec<Episode>, String) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.jsonl");
    let mut args: Vec<String> = vec!["import".into()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(["-o".into(), data.display().to_string()]);
    if tools {
        args.extend([
            "--tools".into(),
            root()
                .join("tests/fixtures/obs_tools.json")
                .display()
                .to_string(),
        ]);
    }
    let out = ctxbench(&args.iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let episodes = std::fs::read_to_string(&data)
        .unwrap()
        .lines()
        .map(|l| ctxbench::history::dataset::parse_episode(l).unwrap())
        .collect();
    let usage = ctxbench(&["usage", data.to_str().unwrap(), "--per-call"], None);
    assert!(usage.status.success(), "{}", text(&usage.stderr));
    (episodes, text(&usage.stdout))
}

/// Checks one fixture: the episodes' ids and call points, call points equal to recorded calls, and every
/// call's replayed prompt within 3% of the recorded one; returns the worst replay / recorded ratio.
fn check(inputs: &[PathBuf], tools: bool, expected: &[(&str, usize)]) -> (Vec<Episode>, f64) {
    let (episodes, usage) = import_and_usage(inputs, tools);
    // An id ending in `trace-` stands for any trace id (they are random).
    let ids: Vec<(String, usize)> = episodes
        .iter()
        .zip(expected)
        .map(|(e, (want, _))| {
            let id = if want.ends_with("trace-") && e.id.starts_with(want) {
                (*want).to_owned()
            } else {
                e.id.clone()
            };
            (id, e.call_points().len())
        })
        .collect();
    let want: Vec<(String, usize)> = expected
        .iter()
        .map(|(i, n)| ((*i).to_owned(), *n))
        .collect();
    assert_eq!(episodes.len(), expected.len(), "{inputs:?}");
    assert_eq!(ids, want, "{inputs:?}");
    for ep in &episodes {
        let recorded = ProviderUsage::of(ep).and_then(|u| u.recorded_calls());
        assert_eq!(recorded, Some(ep.call_points().len()), "{}", ep.id);
    }
    let found = tables(&usage);
    let summary = &found[0];
    assert_eq!(summary.len(), episodes.len(), "{usage}");
    for row in summary {
        assert_eq!(row["call points"], row["recorded calls"], "{usage}");
    }
    // The per-call tables (a `call` column); the per-format table after the summary has none.
    let ratios: Vec<f64> = found[1..]
        .iter()
        .filter(|t| t.first().is_some_and(|row| row.contains_key("call")))
        .flatten()
        .map(|c| c["replayed"].parse::<f64>().unwrap() / c["recorded"].parse::<f64>().unwrap())
        .collect();
    let calls: usize = expected.iter().map(|(_, n)| n).sum();
    assert_eq!(ratios.len(), calls, "{usage}");
    let worst = ratios
        .iter()
        .copied()
        .max_by(|a, b| (a - 1.0).abs().total_cmp(&(b - 1.0).abs()))
        .unwrap();
    assert!(
        (worst - 1.0).abs() <= 0.03,
        "{inputs:?}: worst {worst}\n{usage}"
    );
    (episodes, worst)
}

fn has_text(ep: &Episode, needle: &str) -> bool {
    ep.items.iter().any(|i| i.text().contains(needle))
}

#[test]
fn inspect_eval_and_json_logs_give_one_episode_per_sample_and_epoch() {
    let (eval, _) = check(
        &[obs("inspect.eval")],
        false,
        &[
            ("inspect.eval#build_epoch_1", 4),
            ("inspect.eval#build_epoch_2", 4),
            ("inspect.eval#port_epoch_1", 2),
            ("inspect.eval#port_epoch_2", 2),
        ],
    );
    check(
        &[obs("inspect.json")],
        false,
        &[
            ("inspect.json#build_epoch_1", 4),
            ("inspect.json#port_epoch_1", 2),
        ],
    );
    // The fixture pools its model events' inputs and moves long texts to attachments: both resolved.
    let raw = std::fs::read_to_string(obs("inspect.json")).unwrap();
    assert!(raw.contains("\"input_refs\"") && raw.contains("attachment://"));
    let build = &eval[0];
    assert!(has_text(
        build,
        "undefined reference to `zlib_inflate_init'"
    ));
    assert!(!build
        .items
        .iter()
        .any(|i| i.text().contains("attachment://")));
    assert_eq!(build.tools.len(), 2);
    assert_eq!(build.meta["inspect"]["target"], "-lz");
    assert_eq!(build.meta["inspect"]["scores"]["includes"]["value"], "C");
    assert_eq!(build.meta["inspect"]["model_events"], 4);
    assert!(build.task.starts_with("The build of our project fails"));
}

#[test]
fn a_deflated_eval_archive_imports_like_the_zstd_one() {
    // Inspect AI writes zstd members today and deflated ones before: the same members, deflated.
    let bytes = std::fs::read(obs("inspect.eval")).unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let deflated = dir.path().join("inspect.eval");
    let mut writer = zip::ZipWriter::new(std::fs::File::create(&deflated).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for i in 0..archive.len() {
        let mut member = archive.by_index(i).unwrap();
        assert_eq!(member.compression(), zip::CompressionMethod::Zstd);
        let mut content = Vec::new();
        member.read_to_end(&mut content).unwrap();
        writer.start_file(member.name(), options).unwrap();
        writer.write_all(&content).unwrap();
    }
    writer.finish().unwrap();
    let items =
        |eps: Vec<Episode>| -> Vec<Vec<Item>> { eps.into_iter().map(|e| e.items).collect() };
    assert_eq!(
        items(import_file(&deflated, None).unwrap()),
        items(import_file(&obs("inspect.eval"), None).unwrap())
    );
}

#[test]
fn otel_latest_convention_on_spans_and_on_events() {
    for (file, conv) in [
        ("otel_latest_span.jsonl", "latest-span"),
        ("otel_latest_event.jsonl", "latest-event"),
    ] {
        let (eps, _) = check(
            &[obs(file)],
            true,
            &[
                (&format!("{file}#{conv}-build"), 3),
                (&format!("{file}#{conv}-port"), 1),
            ],
        );
        assert!(eps[0].stopped && eps[1].stopped);
        // The port conversation stops after its tool ran: only the execute_tool span holds the result, and
        // only with content captured on spans.
        let last = eps[1].items.last().unwrap();
        match conv {
            "latest-span" => assert!(
                matches!(last, Item::ToolResult { .. }) && last.text().contains("port = 8443")
            ),
            _ => assert!(matches!(last, Item::ToolCall { .. })),
        }
    }
}

#[test]
fn otel_v1_30_events_in_files_of_their_own_are_read_together() {
    let dir = obs("otel_legacy");
    let files: Vec<PathBuf> = ["traces.jsonl", "logs.jsonl", "metrics.jsonl"]
        .iter()
        .map(|f| dir.join(f))
        .collect();
    let expected = [("traces.jsonl#trace-", 3), ("traces.jsonl#trace-", 1)];
    let (from_files, _) = check(&files, true, &expected);
    let (from_dir, _) = check(std::slice::from_ref(&dir), true, &expected);
    assert_eq!(
        from_files.iter().map(|e| &e.items).collect::<Vec<_>>(),
        from_dir.iter().map(|e| &e.items).collect::<Vec<_>>()
    );
    // The assistant.message events drop the text of a message with tool calls; the choice event kept it.
    assert!(has_text(
        &from_dir[0],
        "Let me look at the configuration and the build log."
    ));
    // The spans alone hold no message: a clear error, not an empty episode.
    let out = ctxbench(
        &[
            "import",
            dir.join("traces.jsonl").to_str().unwrap(),
            "-o",
            "/dev/null",
        ],
        None,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("none records its messages"), "{stderr}");
}

#[test]
fn openinference_sessions_else_traces() {
    let (eps, worst) = check(
        &[obs("openinference.jsonl")],
        false,
        &[
            ("openinference.jsonl#session-openinference-build", 3),
            ("openinference.jsonl#trace-", 1),
        ],
    );
    assert!((worst - 1.0).abs() < 1e-9, "{worst}");
    assert_eq!(eps[0].tools.len(), 2);
    // The TOOL span (`tool.id`) answers the call the agent ran before it stopped.
    assert!(eps[1].items.last().unwrap().text().contains("port = 8443"));
}

#[test]
fn a_folder_of_every_format_imports_each_conversation_once() {
    let (eps, _) = import_and_usage(&[root().join("tests/fixtures/import/obs")], true);
    let mut formats: Vec<&str> = eps
        .iter()
        .map(|e| e.meta["format"].as_str().unwrap())
        .collect();
    formats.dedup();
    assert_eq!(formats, ["inspect", "openinference", "otel"]);
    assert_eq!(eps.len(), 14);
}
