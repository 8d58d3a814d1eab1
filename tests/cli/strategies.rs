//! `ctxbench strategies` says, per preset, the release it is checked against and when, or why it is not
//! (docs/presets.md).

use super::{ctxbench, text};

/// The lines of `stdout` that describe `preset` (its own and the indented ones after it), whitespace runs made
/// one space (where lines wrap depends on the column widths, not on what is said).
fn entry(stdout: &str, preset: &str) -> String {
    let mut lines = stdout
        .lines()
        .skip_while(|l| !l.starts_with(&format!("  {preset} ")));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("{preset} is not listed:\n{stdout}"));
    let rest = lines.take_while(|l| l.starts_with("   "));
    std::iter::once(first)
        .chain(rest)
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn strategies_name_the_checked_release_or_why_a_preset_is_not_checked() {
    let out = ctxbench(&["strategies"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let adk = entry(&stdout, "adk_compaction");
    assert!(
        adk.contains("checked: google-adk 2.15.0 on "),
        "adk_compaction: {adk}"
    );
    let sdk = entry(&stdout, "openhands_sdk");
    assert!(
        sdk.contains("checked: openhands-sdk 1.58.2 on ")
            && sdk.contains("max_size=240, keep_first=2")
            && !sdk.contains("not checked"),
        "openhands_sdk: {sdk}"
    );
    let verbose = ctxbench(&["strategies", "-v"], None);
    assert!(verbose.status.success(), "{}", text(&verbose.stderr));
    let sdk = entry(&text(&verbose.stdout), "openhands_sdk");
    assert!(
        sdk.contains("count: the OpenHands SDK's own: the agent LLM's get_token_count"),
        "openhands_sdk -v: {sdk}"
    );
    let recent = entry(&stdout, "openhands_recent");
    assert!(
        recent.contains("not checked: not driven yet: ")
            && recent.contains("counts the system prompt as an event"),
        "openhands_recent: {recent}"
    );
    // A preset with neither says nothing of a check.
    let letta = entry(&stdout, "claude_code_auto_compact");
    assert!(
        !letta.contains("checked"),
        "claude_code_auto_compact: {letta}"
    );
}
