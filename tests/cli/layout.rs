//! The shape of the code itself: no source file grows past what one reader takes in.

use std::path::PathBuf;

/// The most lines a Rust source file may have.
const MAX_LINES: usize = 700;

/// Every `.rs` file under `dir`.
fn rust_files(dir: PathBuf, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_source_file_is_over_700_lines() {
    let mut files = vec![super::root().join("build.rs")];
    for dir in ["src", "tests", "benches", "examples"] {
        let dir = super::root().join(dir);
        if dir.is_dir() {
            rust_files(dir, &mut files);
        }
    }
    assert!(files.len() > 50, "the walk found the sources");
    let long: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(p).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", p.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these by job (at most {MAX_LINES} lines each): {long:?}"
    );
}

/// What a name in backticks of docs/architecture.md must be: a path of the repository (or a file of one of its
/// source folders), or a type, function, variant or constant defined in `src/`. What the run writes (its file
/// names), slash commands and the team's DESIGN.md are not code.
#[test]
fn every_path_and_type_architecture_md_names_exists() {
    let root = super::root();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut sources = Vec::new();
    rust_files(root.join("src"), &mut sources);
    rust_files(root.join("fuzz/fuzz_targets"), &mut sources);
    let code: String = sources
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    // Every file and folder name under the repository's code folders.
    let mut names: std::collections::HashSet<String> = [
        "build.rs",
        "Cargo.toml",
        "clippy.toml",
        "pyproject.toml",
        "assets/",
        "assets",
        "src",
        "tests",
        "scripts",
        "docs",
        "configs",
        "datasets",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let mut stack: Vec<PathBuf> = [
        "src", "tests", "assets", "scripts", "configs", "datasets", "benches", "fuzz", "python",
        "docs",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(&root).unwrap().display().to_string();
            if rel.contains("/target") {
                continue;
            }
            names.insert(rel.clone());
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                names.insert(format!("{name}/"));
                stack.push(p);
            } else {
                names.insert(name);
            }
        }
    }
    let written = [
        "summary.json",
        "report.html",
        "episodes/ID.html",
        "ID+NAME.html",
        "charts/",
        "charts/*",
        "tokenizer.json",
        "/clear",
        "/reset",
        "DESIGN.md",
        "OUT",
    ];
    let defined = |name: &str| {
        let word = |prefix: &str| {
            code.contains(&format!("{prefix}{name} "))
                || code.contains(&format!("{prefix}{name}<"))
                || code.contains(&format!("{prefix}{name}("))
                || code.contains(&format!("{prefix}{name}:"))
                || code.contains(&format!("{prefix}{name};"))
        };
        ["struct ", "enum ", "trait ", "type ", "fn ", "const ", "static ", "mod ", "pub "]
            .iter()
            .any(|p| word(p))
            // An enum variant, or a constant a macro declares.
            || code.contains(&format!("    {name}(")) 
            || code.contains(&format!("    {name} {{"))
            || code.contains(&format!("    {name},"))
            || code.contains(&format!("    {name} = "))
    };
    let mut missing = Vec::new();
    let mut checked = 0;
    for tick in doc.split('`').skip(1).step_by(2) {
        // A placeholder (`import_NAME.rs`) stands for every file of its kind.
        if tick.contains(' ')
            || tick.contains('\n')
            || written.contains(&tick)
            || tick.contains("NAME")
        {
            continue;
        }
        let is_path = tick.contains('/')
            || [".rs", ".sh", ".js", ".toml"]
                .iter()
                .any(|e| tick.ends_with(e));
        if is_path {
            checked += 1;
            // `llm/mock/{terms,index}.rs` names two files.
            let expanded: Vec<String> = match (tick.find('{'), tick.find('}')) {
                (Some(a), Some(b)) => tick[a + 1..b]
                    .split(',')
                    .map(|part| format!("{}{part}{}", &tick[..a], &tick[b + 1..]))
                    .collect(),
                _ => vec![tick.to_owned()],
            };
            for path in expanded {
                let found = names.contains(&path)
                    || names.contains(path.trim_end_matches('/'))
                    || names.contains(&format!("src/{}", path.trim_end_matches('/')))
                    || names
                        .iter()
                        .any(|n| n.ends_with(&format!("/{}", path.trim_end_matches('/'))));
                if !found {
                    missing.push(path);
                }
            }
        } else if tick
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_lowercase())
            && tick.contains("::")
            || tick.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && tick
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        {
            checked += 1;
            // A call's arguments are not names: `Applied::new(change)` names `Applied` and `new`.
            let callee = tick.split('(').next().unwrap_or(tick);
            let parts: Vec<&str> = callee.split("::").collect();
            for (k, part) in parts.iter().enumerate() {
                // Module paths (`history::usage::`) lead to the name; the last part and types are checked.
                let module =
                    part.chars().all(|c| c.is_ascii_lowercase() || c == '_') && k + 1 < parts.len();
                if part.is_empty() || module {
                    continue;
                }
                if !defined(part) {
                    missing.push(format!("{tick} ({part})"));
                }
            }
        }
    }
    assert!(checked > 150, "{checked} names checked");
    assert!(
        missing.is_empty(),
        "docs/architecture.md names what does not exist: {missing:?}"
    );
}

/// The Python package has one version, Cargo.toml's: pyproject.toml leaves it to maturin (`dynamic`), which reads
/// Cargo.toml, and the module reads it from the installed distribution; the wheel carries the binary (`bin`
/// bindings). scripts/wheel.sh checks the built wheel's name, `--version` and `ctxbench.__version__` agree.
#[test]
fn the_python_package_takes_cargo_tomls_version() {
    let root = super::root();
    let text = std::fs::read_to_string(root.join("pyproject.toml")).unwrap();
    let py: toml::Table = text.parse().unwrap();
    assert_eq!(
        py["build-system"]["build-backend"].as_str(),
        Some("maturin")
    );
    assert_eq!(py["tool"]["maturin"]["bindings"].as_str(), Some("bin"));
    let project = py["project"].as_table().unwrap();
    assert_eq!(project["name"].as_str(), Some(env!("CARGO_PKG_NAME")));
    assert!(
        !project.contains_key("version"),
        "pyproject.toml sets a version of its own: leave it to Cargo.toml (dynamic)"
    );
    let dynamic: Vec<&str> = project["dynamic"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(toml::Value::as_str)
        .collect();
    assert!(dynamic.contains(&"version"), "{dynamic:?}");
    let module = std::fs::read_to_string(root.join("python/ctxbench/__init__.py")).unwrap();
    assert!(
        module.contains("version(\"ctxbench\")") && !module.contains(env!("CARGO_PKG_VERSION")),
        "python/ctxbench/__init__.py must read the installed distribution's version, not write one"
    );
}
