//! The model of every call, as each importer reads it from the real traces under ../shared/traces (skipped,
//! with a message, when the folder is absent) and from the fixtures.

use std::collections::BTreeMap;

use ctxbench::history::import::import_file;

use crate::root;

/// Each shared trace's episodes, by id, with the models of their call points (the episode's, then every
/// switch as `call point: model`).
fn models_of_traces() -> Option<BTreeMap<String, String>> {
    let traces = crate::traces::imported()?;
    Some(
        traces
            .iter()
            .flat_map(|(_, eps)| eps)
            .map(|ep| {
                let mut m = ep.model.clone().unwrap_or_else(|| "-".into());
                for s in &ep.model_switches {
                    m.push_str(&format!(", {}: {}", s.call_point, s.model));
                }
                (ep.id.clone(), m)
            })
            .collect(),
    )
}

#[test]
fn every_format_of_the_shared_traces_names_the_model_it_records() {
    let Some(models) = models_of_traces() else {
        return;
    };
    let of = |prefix: &str| -> Vec<&str> {
        models
            .iter()
            .filter(|(id, _)| id.starts_with(prefix))
            .map(|(_, m)| m.as_str())
            .collect()
    };
    // Claude Code: `message.model` of every API message.
    for id in [
        "hello-world-script",
        "stop-hook-fast-path-clean",
        "stop-hook-reflection-first-stop",
        "stop-hook-reflection-second-stop",
        "stop-hook-uncommitted-changes",
    ] {
        assert_eq!(of(id), ["claude-opus-4-5-20251101"], "{id}");
    }
    // aider: the header's main model, and the model after each `/model` (session 117's three replies all came
    // after `/model gpt-4o`: the calls to Claude and OpenRouter before it failed); `--mini` is gpt-4o-mini.
    assert_eq!(of("chat-history__session0117"), ["gpt-4o"]);
    assert_eq!(of("chat-history__session0434"), ["gpt-4o-mini"; 2]);
    assert_eq!(
        of("chat-history__session0546"),
        ["claude-3-haiku-20240307"; 3]
    );
    for session in ["0288", "0295", "0343", "0498", "0919", "1046"] {
        let models = of(&format!("chat-history__session{session}"));
        assert!(!models.is_empty(), "{session}");
        assert!(
            models.iter().all(|m| *m == "claude-3-5-sonnet-20240620"),
            "{session}: {models:?}"
        );
    }
    // The website's example has no header: no model.
    assert_eq!(of("website-example"), ["-"]);
    // mini-swe-agent: each raw response's model (the configuration says deepseek/deepseek-chat).
    assert_eq!(of("deepseek_lite_dev"), ["deepseek-chat"]);
    assert_eq!(of("github_issue"), ["-"]);
    // OpenHands: each response's model.
    assert_eq!(
        of("runtime-trajs__basic.json"),
        ["claude-3-5-sonnet-20241022"]
    );
    assert_eq!(
        of("runtime-trajs__basic_interactions"),
        ["gpt-4o-2024-08-06"]
    );
    // smolagents `model_id`, SWE-agent `replay_config.agent.model.name`.
    assert_eq!(of("gpt-4o__code__simpleqa__2025-07-24__line01"), ["gpt-4o"]);
    assert_eq!(of("test-repo__6e44b9"), ["gpt-4o"]);
    assert_eq!(of("ctf_crypto_katy"), ["-"]);
    // tau-bench results do not record the model.
    assert_eq!(of("gpt-4o-airline__idx011"), ["-"]);
}

#[test]
fn fixtures_name_their_models() {
    let import = |name: &str| {
        import_file(&root().join("tests/fixtures").join(name), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let first = |name: &str| import(name).remove(0).model;
    assert_eq!(
        first("import/mini_swe_agent_reasoner.json").as_deref(),
        Some("deepseek/deepseek-reasoner")
    );
    assert_eq!(first("import/openai.json").as_deref(), Some("gpt-4o"));
    assert_eq!(
        first("import/openhands_session.json").as_deref(),
        Some("claude-3-7-sonnet-20250219")
    );
    assert_eq!(
        first("compacted/claude_code_2.1.39_auto_compact.jsonl").as_deref(),
        Some("claude-opus-4-6")
    );
    for ep in import("import/obs/inspect.eval") {
        assert_eq!(ep.model.as_deref(), Some("mockllm/model"), "{}", ep.id);
    }
    for name in [
        "import/obs/otel_latest_span.jsonl",
        "import/obs/openinference.jsonl",
    ] {
        for ep in import(name) {
            assert_eq!(ep.model.as_deref(), Some("gpt-4o-mini"), "{name} {}", ep.id);
        }
    }
    // A trace that names no model leaves the episode without one (the run's configured model applies).
    assert_eq!(first("import/claude_code.jsonl"), None);
    assert_eq!(first("import/tau_bench.json"), None);
}

/// Every model the shared traces name, priced and windowed from the table as a run takes it: the traces'
/// own models, never the configuration's gpt-4o, each with the source of its price.
#[test]
fn every_model_of_the_shared_traces_is_priced_and_windowed_as_itself() {
    use ctxbench::llm::pricing::{Defaults, PriceTable, WindowFrom};
    let Some(traces) = crate::traces::imported() else {
        return;
    };
    let defaults = Defaults {
        table: PriceTable::builtin(),
        agent_model: None,
        context_window: 128_000,
        window: None,
    };
    let mut seen: BTreeMap<String, (String, usize, f64)> = BTreeMap::new();
    for ep in traces.iter().flat_map(|(_, eps)| eps) {
        let Some(model) = ep.model.as_deref() else {
            continue;
        };
        let (prices, m) = defaults.resolve(ep);
        let price = prices
            .main
            .unwrap_or_else(|| panic!("{}: {model} is unpriced", ep.id));
        assert_eq!((m.model.as_str(), m.recorded), (model, true), "{}", ep.id);
        assert_eq!(m.window_from, WindowFrom::Table, "{}: {model}", ep.id);
        seen.insert(model.to_owned(), (m.price.unwrap(), m.window, price.input));
    }
    let of = |model: &str| {
        seen.get(model)
            .unwrap_or_else(|| panic!("{model}: {seen:#?}"))
    };
    // Claude Code: Opus 4.5 from LiteLLM, $5 input, 200,000 tokens.
    let opus = of("claude-opus-4-5-20251101");
    assert!(opus.0.starts_with("LiteLLM 1.110.2"), "{opus:?}");
    assert_eq!((opus.1, opus.2), (200_000, 5.0));
    // aider: Claude 3.5 Sonnet (June 2024), retired from LiteLLM, from genai-prices.
    let sonnet = of("claude-3-5-sonnet-20240620");
    assert!(sonnet.0.starts_with("genai-prices 0.2.5"), "{sonnet:?}");
    assert_eq!((sonnet.1, sonnet.2), (200_000, 3.0));
    // mini-swe-agent's DeepSeek run: deepseek-chat, 131,072 tokens.
    assert_eq!(of("deepseek-chat").1, 131_072);
    assert_eq!(of("gpt-4o-mini").2, 0.15);
}

/// The Claude Code sessions, imported and run without `--window`: each named as claude-opus-4-5, priced from
/// the table, in a 200,000-token window, and no report or console line names gpt-4o; `--window` overrides.
#[test]
fn claude_code_sessions_run_as_their_model_in_its_window() {
    let Some(files) = crate::shared_trace_files() else {
        return;
    };
    let sessions: Vec<String> = files
        .iter()
        .filter(|f| f.parent().is_some_and(|p| p.ends_with("claude-code")))
        .map(|f| f.display().to_string())
        .collect();
    assert_eq!(sessions.len(), 5, "{sessions:?}");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("cc.jsonl");
    let mut args = vec!["import", "-o", data.to_str().unwrap()];
    args.extend(sessions.iter().map(String::as_str));
    let out = crate::ctxbench(&args, None);
    assert!(out.status.success(), "{}", crate::text(&out.stderr));
    let run = dir.path().join("run");
    let out = crate::ctxbench_run(
        &data,
        None,
        &run,
        &["--strategies", "none,compaction"],
        None,
    );
    assert!(out.status.success(), "{}", crate::text(&out.stderr));
    let console = crate::text(&out.stdout);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let models = summary["models"].as_array().unwrap();
    assert_eq!(models.len(), 1, "{models:?}");
    assert_eq!(models[0]["model"], "claude-opus-4-5-20251101");
    assert_eq!(models[0]["window"], 200_000);
    assert_eq!(models[0]["window_from"], "table");
    assert_eq!(models[0]["episodes"].as_array().unwrap().len(), 5);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    for text in [&console, &report] {
        assert!(text.contains("claude-opus-4-5-20251101"), "{text}");
        assert!(
            text.contains("window 200,000 tokens (the model's input limit)"),
            "{text}"
        );
    }
    // No file of the run, nor the explorer's pages, names gpt-4o: not the configuration's echo either (no
    // agent model is configured for episodes naming none).
    let show = crate::ctxbench(&["show", run.to_str().unwrap()], None);
    assert!(show.status.success(), "{}", crate::text(&show.stderr));
    let mut files = vec![run.join("report.md")];
    for dir in [run.clone(), run.join("episodes")] {
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.is_file() {
                files.push(f);
            }
        }
    }
    assert!(files.iter().any(|f| f.starts_with(run.join("episodes"))));
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(!text.contains("gpt-4o"), "{} names gpt-4o", f.display());
    }
    assert!(!console.contains("gpt-4o"), "{console}");
    // Every call point in the model's window: none over it.
    let steps = std::fs::read_to_string(run.join("steps.csv")).unwrap();
    assert!(!steps.contains(",true,"), "a call point over the window");
    // --window replays every episode in its window instead, and says so.
    let small = dir.path().join("small");
    let out = crate::ctxbench_run(
        &data,
        None,
        &small,
        &["--strategies", "none", "--window", "8000"],
        None,
    );
    assert!(out.status.success(), "{}", crate::text(&out.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(small.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["models"][0]["window"], 8000);
    assert_eq!(summary["models"][0]["window_from"], "option");
}

/// The strategies' own calls (summaries) are the model the config names for them, else each episode's own:
/// llm_calls.jsonl labels the mock's calls with it, the example summary names it and the report's note says
/// which. The bundled dataset's first two episodes, the first said to be claude-opus-4-5 (the other names
/// its own, gpt-4o).
#[test]
fn summaries_are_labelled_and_priced_as_the_episodes_model_unless_the_config_names_one() {
    let dir = tempfile::tempdir().unwrap();
    let (data, lines) = two_bundled(dir.path(), |lines| {
        lines[0]["model"] = "claude-opus-4-5-20251101".into();
    });
    let ids: Vec<String> = lines
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    let strategy_calls = |run: &std::path::Path| -> Vec<(String, String)> {
        std::fs::read_to_string(run.join("llm_calls.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|c| c["purpose"] == "strategy")
            .map(|c| {
                (
                    c["episode"].as_str().unwrap().to_owned(),
                    c["model"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    // An 8,000-token window makes summarization act on both episodes.
    let args = [
        "--strategies",
        "none,summarization",
        "--calls",
        "all",
        "--window",
        "8000",
    ];
    let run = dir.path().join("own");
    let out = crate::ctxbench_run(&data, None, &run, &args, None);
    assert!(out.status.success(), "{}", crate::text(&out.stderr));
    let calls = strategy_calls(&run);
    assert!(
        ids.iter().all(|id| calls.iter().any(|(e, _)| e == id)),
        "summarization made no call in an episode: {calls:?}"
    );
    for (episode, model) in &calls {
        let want = if *episode == ids[0] {
            "claude-opus-4-5-20251101"
        } else {
            "gpt-4o"
        };
        assert_eq!(model, want, "{episode}");
    }
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains(
            "The strategies' own calls (summaries) are priced as each episode's own model, which the mock LLM \
             stands in for"
        ),
        "{report}"
    );
    assert!(!report.contains("gpt-4o-mini"), "{report}");
    // A config that names the strategies' model: every call is it, and the report says so.
    let cfg = dir.path().join("mini.toml");
    std::fs::write(&cfg, "[pricing]\nstrategy_model = \"gpt-4o-mini\"\n").unwrap();
    let run = dir.path().join("mini");
    let out = crate::ctxbench_run(&data, Some(&cfg), &run, &args, None);
    assert!(out.status.success(), "{}", crate::text(&out.stderr));
    let calls = strategy_calls(&run);
    assert!(
        !calls.is_empty() && calls.iter().all(|(_, m)| m == "gpt-4o-mini"),
        "{calls:?}"
    );
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains(
            "The strategies' own calls (summaries) are priced as gpt-4o-mini, which the mock LLM stands in for."
        ) && report.contains("(the mock LLM, priced as gpt-4o-mini)"),
        "{report}"
    );
}

/// An episode whose trace names no model is priced as the config's `[pricing] agent_model`, and without one is
/// unpriced, with the reading saying how to give it one — never priced as another model; the bundled episodes
/// name gpt-4o themselves.
#[test]
fn an_episode_naming_no_model_is_unpriced_unless_the_config_names_one() {
    let dir = tempfile::tempdir().unwrap();
    let (data, lines) = two_bundled(dir.path(), |lines| {
        assert_eq!(
            lines[0]["model"], "gpt-4o",
            "the bundled episodes name their model"
        );
        lines[1].as_object_mut().unwrap().remove("model");
    });
    assert!(lines[1].get("model").is_none());
    let flat = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let run = dir.path().join("bare");
    let out = crate::ctxbench_run(&data, None, &run, &["--strategies", "none"], None);
    assert!(out.status.success(), "{}", crate::text(&out.stderr));
    let console = flat(&crate::text(&out.stdout));
    assert!(
        console.contains("1 episode whose trace names no model is unpriced, never priced as another: give each its model in the dataset"),
        "{console}"
    );
    assert!(
        console.contains("no model named (unpriced) for the others"),
        "{console}"
    );
    let cost = |run: &std::path::Path| -> Vec<String> {
        let episodes = std::fs::read_to_string(run.join("episodes.csv")).unwrap();
        let mut rows = csv::Reader::from_reader(episodes.as_bytes());
        let at = rows
            .headers()
            .unwrap()
            .iter()
            .position(|h| h == "cost_usd")
            .unwrap();
        rows.records().map(|r| r.unwrap()[at].to_owned()).collect()
    };
    let bare = cost(&run);
    assert!(!bare[0].is_empty() && bare[1].is_empty(), "{bare:?}");
    // Named in the config, it is priced as that model.
    let config = dir.path().join("agent.toml");
    std::fs::write(
        &config,
        std::fs::read_to_string(crate::root().join("configs/default.toml"))
            .unwrap()
            .replace("# agent_model = \"gpt-4o\"", "agent_model = \"gpt-4o\""),
    )
    .unwrap();
    let named = dir.path().join("named");
    let out = crate::ctxbench_run(
        &data,
        Some(&config),
        &named,
        &["--strategies", "none"],
        None,
    );
    assert!(out.status.success(), "{}", crate::text(&out.stderr));
    let console = flat(&crate::text(&out.stdout));
    assert!(
        console.contains("agent model gpt-4o for the others"),
        "{console}"
    );
    let priced = cost(&named);
    assert!(priced.iter().all(|c| !c.is_empty()), "{priced:?}");
    // A priced model the config names for the strategies is not listed as one to price: only the episode is.
    let config = dir.path().join("strategy.toml");
    std::fs::write(
        &config,
        std::fs::read_to_string(crate::root().join("configs/default.toml"))
            .unwrap()
            .replace(
                "# strategy_model = \"gpt-4o-mini\"",
                "strategy_model = \"gpt-4o-mini\"",
            ),
    )
    .unwrap();
    let out = crate::ctxbench_run(
        &data,
        Some(&config),
        &dir.path().join("strategy"),
        &["--strategies", "none"],
        None,
    );
    assert!(out.status.success(), "{}", crate::text(&out.stderr));
    let console = flat(&crate::text(&out.stdout));
    assert!(
        console.contains("1 episode whose trace names no model is unpriced")
            && !console.contains("[pricing.models.\"gpt-4o-mini\"]"),
        "{console}"
    );
}

/// Where one episode a strategy acted on is unpriced, its cost saved there over all of them is unknown, and
/// over the priced ones it is exactly that of the priced episode run alone: the advice judges every strategy
/// by the latter.
#[test]
fn the_cost_saved_where_it_acted_is_over_the_priced_episodes_in_a_mixed_run() {
    let dir = tempfile::tempdir().unwrap();
    let (mixed, _) = two_bundled(dir.path(), |lines| {
        lines[1].as_object_mut().unwrap().remove("model");
    });
    let alone = dir.path().join("alone.jsonl");
    let first = std::fs::read_to_string(&mixed).unwrap();
    std::fs::write(&alone, first.lines().next().unwrap().to_owned() + "\n").unwrap();
    let figures = |data: &std::path::Path, name: &str| -> serde_json::Value {
        let run = dir.path().join(name);
        let out = crate::ctxbench_run(data, None, &run, &["--strategies", "none,compaction"], None);
        assert!(out.status.success(), "{}", crate::text(&out.stderr));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap())
                .unwrap();
        summary["strategies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["strategy"] == "compaction")
            .unwrap()
            .clone()
    };
    let (mixed, alone) = (figures(&mixed, "mixed"), figures(&alone, "alone"));
    assert_eq!(mixed["episodes_acted"], 2, "{mixed}");
    assert_eq!(mixed["episodes_acted_priced"], 1, "{mixed}");
    assert!(mixed["cost_savings_acted"].is_null(), "{mixed}");
    assert!(
        alone["cost_savings_acted"].as_f64().unwrap() > 0.0,
        "{alone}"
    );
    assert_eq!(
        mixed["cost_savings_acted_priced"],
        alone["cost_savings_acted"]
    );
    assert_eq!(
        alone["cost_savings_acted_priced"],
        alone["cost_savings_acted"]
    );
}

/// The bundled dataset's first two episodes, changed by `edit`, written to `DIR/two.jsonl`: its path and them.
fn two_bundled(
    dir: &std::path::Path,
    edit: impl FnOnce(&mut [serde_json::Value]),
) -> (std::path::PathBuf, Vec<serde_json::Value>) {
    let bundled = std::fs::read_to_string(crate::root().join("datasets/default.jsonl")).unwrap();
    let mut lines: Vec<serde_json::Value> = bundled
        .lines()
        .take(2)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    edit(&mut lines);
    let data = dir.join("two.jsonl");
    let text: Vec<String> = lines.iter().map(ToString::to_string).collect();
    std::fs::write(&data, text.join("\n") + "\n").unwrap();
    (data, lines)
}
