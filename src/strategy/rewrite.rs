//! Rewrite: an LLM compresses one step of the history, or one tool output, in place, once each — AgentDiet's
//! trajectory reduction and ACON's observation compression.
//!
//! ## What it does
//! A *step* is an assistant turn with everything that follows it up to the next one (its tool results, an
//! observation, a user message); a tool output is one result or observation. At every call point, each unit
//! not yet considered that has at least `delay` steps after it (for tool outputs: at once) is considered:
//! - under `min_tokens` (its text as the rewriter reads it, counted by the run's tokenizer), it stays;
//! - else the LLM is asked, with the peer's `prompt`, for a rewrite of it, the text between `<history>` tags and
//!   the `context_before` steps before it (all of them when unset; the task stands for the step before the
//!   first) and the `context_after` after it beside, as its user message;
//! - the rewrite is kept when it saves at least `accept_saved` tokens or is under `accept_ratio` of the
//!   original (AgentDiet: 400 tokens or 80%; either is enough; with neither set, always): a step becomes one
//!   assistant message `(System reminder: compressed for better efficiency) …` (its system messages stay before
//!   it), a tool output keeps its place with `[Refined observation]` and the rewrite as its content (read as a
//!   model's words: docs/retention.md).
//!
//! A unit is considered once: a rewrite that is not kept is not asked again. When a call fails, the request
//! stays as it was and the failure is recorded.
//!
//! ## Trade-offs
//! Each rewrite is an LLM call on a small input, so the cost grows with the number of long steps, not with the
//! context; what stays is the agent's own trajectory, shortened, so the prompt cache breaks only from the
//! rewritten step on. What a rewrite leaves out is lost for good, and a step is rewritten only after `delay`
//! more steps: a long output sits whole in the context that long.
//!
//! ## Parameters
//! - `unit` (`steps` or `tool_results`), `delay` (2), `context_before` (1; none: all), `context_after` (2).
//! - `min_tokens` (500), `accept_saved` (400), `accept_ratio` (0.8), `prompt` (`agentdiet`), `item_chars`
//!   (10000: the transcript's cut of each item).
//!
//! ## Example
//! `{"type": "rewrite", "unit": "steps", "delay": 2, "min_tokens": 500, "prompt": "agentdiet"}`

use std::collections::HashSet;

use rustc_hash::FxBuildHasher;
use serde::{Deserialize, Serialize};

use super::prompt::{Around, Prompt, AGENTDIET_REMINDER};
use super::summarization::ask;
use super::{Applied, CallPoint, Change, Strategy, StrategySpec};
use crate::error::{Error, Result};
use crate::history::{Item, Role, REFINED_PREFIX};
use crate::llm::transcript::Transcript;
use crate::llm::{Llm, LlmRequest};
use crate::tokens::item_hash;

/// What a rewrite replaces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewriteUnit {
    /// A step: an assistant turn and what follows it (AgentDiet).
    #[default]
    Steps,
    /// A tool result or observation (ACON's observation compression).
    ToolResults,
}

fn default_delay() -> usize {
    2
}
fn default_before() -> Option<usize> {
    Some(1)
}
fn default_after() -> usize {
    2
}
fn default_min_tokens() -> usize {
    500
}
fn default_saved() -> Option<usize> {
    Some(400)
}
fn default_ratio() -> Option<f64> {
    Some(0.8)
}
fn default_prompt() -> Prompt {
    Prompt::Agentdiet
}
fn default_item_chars() -> usize {
    10_000
}

/// Parameters of [`Rewrite`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewriteConfig {
    /// What is rewritten.
    #[serde(default)]
    pub unit: RewriteUnit,
    /// Steps that must follow a step before it is rewritten (tool outputs are rewritten at once).
    #[serde(default = "default_delay")]
    pub delay: usize,
    /// Steps shown before the target (none: every one).
    #[serde(default = "default_before")]
    pub context_before: Option<usize>,
    /// Steps shown after the target.
    #[serde(default = "default_after")]
    pub context_after: usize,
    /// Units of at most this many tokens are left as they are.
    #[serde(default = "default_min_tokens")]
    pub min_tokens: usize,
    /// A rewrite that saves at least this many tokens is kept.
    #[serde(default = "default_saved")]
    pub accept_saved: Option<usize>,
    /// A rewrite under this share of the original's tokens is kept.
    #[serde(default = "default_ratio")]
    pub accept_ratio: Option<f64>,
    /// The rewriter's prompt.
    #[serde(default = "default_prompt")]
    pub prompt: Prompt,
    /// Characters of each item shown to the rewriter.
    #[serde(default = "default_item_chars")]
    pub item_chars: usize,
}

impl Default for RewriteConfig {
    fn default() -> Self {
        Self {
            unit: RewriteUnit::Steps,
            delay: default_delay(),
            context_before: default_before(),
            context_after: default_after(),
            min_tokens: default_min_tokens(),
            accept_saved: default_saved(),
            accept_ratio: default_ratio(),
            prompt: default_prompt(),
            item_chars: default_item_chars(),
        }
    }
}

impl StrategySpec for RewriteConfig {
    /// Checks the parameters.
    /// When `item_chars` is 0 or `accept_ratio` is outside (0, 1].
    fn validate(&self) -> Result<()> {
        if self.item_chars == 0 {
            return Err(Error::Config("rewrite item_chars must be above 0".into()));
        }
        if let Some(r) = self.accept_ratio {
            if !(r > 0.0 && r <= 1.0) {
                return Err(Error::Config(format!(
                    "rewrite accept_ratio {r} is outside (0, 1]"
                )));
            }
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(Rewrite::new(self.clone()))
    }
}

/// The rewrite strategy; see the module docs.
#[derive(Debug, Clone)]
pub struct Rewrite {
    config: RewriteConfig,
    /// Steps from the start considered so far.
    steps_done: usize,
    /// Tool outputs considered so far, by content.
    outputs_done: HashSet<u128, FxBuildHasher>,
}

/// Whether `item` is a step AgentDiet compressed.
fn is_compressed(item: &Item) -> bool {
    item.is_role(Role::Assistant) && item.text().starts_with(AGENTDIET_REMINDER)
}

/// Where each step of `items` starts: after the task (the first user message), at every assistant turn and
/// every compressed step. What comes before the first is the head, never rewritten.
fn step_starts(items: &[Item]) -> Vec<usize> {
    let from = items
        .iter()
        .position(|i| i.is_role(Role::User))
        .map_or(0, |t| t + 1);
    (from..items.len())
        .filter(|&i| {
            is_compressed(&items[i])
                || (items[i].is_assistant_turn()
                    && (i == 0
                        || !items[i - 1].is_assistant_turn()
                        || is_compressed(&items[i - 1])))
        })
        .collect()
}

impl Rewrite {
    /// A rewrite strategy that has considered nothing yet.
    #[must_use]
    pub fn new(config: RewriteConfig) -> Self {
        Self {
            config,
            steps_done: 0,
            outputs_done: HashSet::default(),
        }
    }

    fn transcript(&self, items: &[Item]) -> Transcript {
        let shown: Vec<Item> = items
            .iter()
            .filter(|i| !i.is_role(Role::System))
            .cloned()
            .collect();
        Transcript::of_items(&shown, self.config.item_chars, self.config.item_chars)
    }

    /// Whether a rewrite from `old` to `new` tokens is kept.
    fn accepts(&self, old: usize, new: usize) -> bool {
        if self.config.accept_saved.is_none() && self.config.accept_ratio.is_none() {
            return true;
        }
        let saved = self
            .config
            .accept_saved
            .is_some_and(|s| old.saturating_sub(new) >= s && new < old);
        #[allow(clippy::cast_precision_loss)]
        let ratio = self
            .config
            .accept_ratio
            .is_some_and(|r| (new as f64) < r * old as f64);
        saved || ratio
    }

    /// Asks for a rewrite of `target` with `around`; the kept text, `None` when it is not kept, or the
    /// failed call.
    fn rewrite(
        &self,
        at: &CallPoint,
        target: &Transcript,
        around: &Around<'_>,
        llm: &dyn Llm,
        applied: &mut Applied,
    ) -> std::result::Result<Option<String>, ()> {
        let request = self.config.prompt.rewrite_request(target, around);
        match ask(llm, &request) {
            Ok((answer, call)) => {
                applied.llm_calls.push(call);
                let text = self.config.prompt.extract(&answer);
                let old = at.tokenizer.count_text(target.as_str());
                let new = at.tokenizer.count_text(&text);
                Ok((!text.is_empty() && self.accepts(old, new)).then_some(text))
            }
            Err(failed) => {
                applied.llm_calls.push(failed);
                Err(())
            }
        }
    }

    fn steps(&mut self, at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Applied {
        let mut applied = Applied::unchanged();
        let starts = step_starts(&req.contents);
        let n = starts.len();
        let len = req.contents.len();
        let end_of = |k: usize| starts.get(k + 1).copied().unwrap_or(len);
        let task = req
            .contents
            .iter()
            .find(|i| i.is_role(Role::User))
            .map_or(String::new(), |i| i.text().to_owned());
        // (step, its replacement), oldest first.
        let mut done: Vec<(usize, String)> = Vec::new();
        while self.steps_done + self.config.delay < n {
            let t = self.steps_done;
            self.steps_done += 1;
            let step = &req.contents[starts[t]..end_of(t)];
            if step.iter().any(is_compressed) {
                continue;
            }
            let target = self.transcript(step);
            if at.tokenizer.count_text(target.as_str()) <= self.config.min_tokens {
                continue;
            }
            let first = self
                .config
                .context_before
                .map_or(0, |b| t.saturating_sub(b));
            let last = (t + self.config.context_after).min(n - 1);
            let mut context = Vec::new();
            if self.config.context_before.is_none_or(|b| b > t) {
                context.push(format!("[task]: {task}"));
            }
            for k in (first..=last).filter(|&k| k != t) {
                context.push(format!(
                    "<step id=\"{k}\">\n{}\n</step>",
                    self.transcript(&req.contents[starts[k]..end_of(k)])
                        .as_str()
                ));
            }
            let context = context.join("\n");
            let around = Around {
                task: &task,
                context: &context,
                step: t,
            };
            match self.rewrite(at, &target, &around, llm, &mut applied) {
                Ok(Some(text)) => done.push((t, text)),
                Ok(None) => {}
                // The request stays exactly as it was.
                Err(()) => return failed(applied),
            }
        }
        let Some(&(first, _)) = done.first() else {
            return applied;
        };
        // Replace from the newest, so that the older steps' positions hold.
        for (t, text) in done.iter().rev() {
            let range = starts[*t]..end_of(*t);
            let mut with: Vec<Item> = req.contents[range.clone()]
                .iter()
                .filter(|i| i.is_role(Role::System))
                .cloned()
                .collect();
            applied.summarized_items += range.len() - with.len();
            with.push(Item::assistant(format!("{AGENTDIET_REMINDER}{text}")));
            req.contents.splice(range, with);
        }
        applied.change = Change::Rewrote {
            kept_prefix: starts[first],
        };
        applied
    }

    fn outputs(&mut self, at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Applied {
        let mut applied = Applied::unchanged();
        let task = req
            .contents
            .iter()
            .find(|i| i.is_role(Role::User))
            .map_or(String::new(), |i| i.text().to_owned());
        let mut done: Vec<(usize, String)> = Vec::new();
        for i in 0..req.contents.len() {
            let item = &req.contents[i];
            if !item.is_tool_output() || item.text().starts_with(REFINED_PREFIX) {
                continue;
            }
            if !self.outputs_done.insert(item_hash(item)) {
                continue;
            }
            let target = self.transcript(std::slice::from_ref(item));
            if at.tokenizer.count_text(target.as_str()) <= self.config.min_tokens {
                continue;
            }
            let from = self
                .config
                .context_before
                .map_or(0, |b| i.saturating_sub(b));
            let context = self.transcript(&req.contents[from..i]);
            let around = Around {
                task: &task,
                context: context.as_str(),
                step: i,
            };
            match self.rewrite(at, &target, &around, llm, &mut applied) {
                Ok(Some(text)) => done.push((i, text)),
                Ok(None) => {}
                // Nothing is committed before every call went through: the request stays as it was.
                Err(()) => return failed(applied),
            }
        }
        let Some(&(first, _)) = done.first() else {
            return applied;
        };
        for (i, text) in done {
            let refined = format!("{REFINED_PREFIX}{text}");
            match &mut req.contents[i] {
                Item::ToolResult { content, .. } | Item::Observation { content, .. } => {
                    *content = refined.into();
                }
                _ => unreachable!("only tool outputs are rewritten"),
            }
            applied.summarized_items += 1;
        }
        applied.change = Change::Rewrote { kept_prefix: first };
        applied
    }
}

/// What an application whose LLM call failed reports: no change, and its calls (the failed one last).
fn failed(applied: Applied) -> Applied {
    let mut unchanged = Applied::unchanged();
    unchanged.llm_calls = applied.llm_calls;
    unchanged
}

impl Strategy for Rewrite {
    fn apply(&mut self, at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        Ok(match self.config.unit {
            RewriteUnit::Steps => self.steps(at, req, llm),
            RewriteUnit::ToolResults => self.outputs(at, req, llm),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::testing::{mock, run, state, Failing};

    /// sys, task, then `n` steps: a thought, a call, a long result of `size` lines.
    fn trajectory(n: usize, size: usize) -> LlmRequest {
        let mut items = vec![Item::system("sys"), Item::user("Fix the failing build.")];
        for i in 0..n {
            items.push(Item::assistant(format!("Step {i}: running make.")));
            items.push(Item::tool_call(
                format!("c{i}"),
                "bash",
                "{\"cmd\":\"make\"}",
            ));
            let mut out = format!("compiling module_{i}.c: ok\n").repeat(size);
            out.push_str(&format!(
                "error E{i:03}: undefined reference in module_{i}.o\n"
            ));
            items.push(Item::tool_result(format!("c{i}"), "bash", out));
        }
        LlmRequest::from_contents(items)
    }

    #[test]
    fn agentdiet_compresses_the_step_two_behind_once() {
        let st = state(1_000_000);
        let mut s = Rewrite::new(RewriteConfig::default());
        // Two steps: none has two after it yet.
        let mut r = trajectory(2, 100);
        assert!(!run(&mut s, &st, &mut r, &mock()).changed());
        // Three steps: step 0 is compressed into one assistant message.
        let mut r = trajectory(3, 100);
        let a = run(&mut s, &st, &mut r, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        assert!(r.contents[2].text().starts_with(AGENTDIET_REMINDER));
        assert_eq!(r.contents[3].text(), "Step 1: running make.");
        assert_eq!(a.summarized_items, 3);
        // Considered once: the next call point asks about step 1 only.
        r.contents.extend(trajectory(4, 100).contents.split_off(11));
        let a = run(&mut s, &st, &mut r, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        assert!(r.contents[3].text().starts_with(AGENTDIET_REMINDER));
    }

    #[test]
    fn short_steps_stay_and_a_rewrite_that_saves_little_is_not_kept() {
        let st = state(1_000_000);
        let mut r = trajectory(3, 1);
        let before = r.clone();
        let a = run(
            &mut Rewrite::new(RewriteConfig::default()),
            &st,
            &mut r,
            &mock(),
        );
        assert!(a.llm_calls.is_empty());
        assert_eq!(r, before);
        let s = Rewrite::new(RewriteConfig::default());
        assert!(s.accepts(1000, 600) && s.accepts(3000, 2590) && !s.accepts(1000, 850));
    }

    #[test]
    fn acon_refines_every_long_output_at_once() {
        let st = state(1_000_000);
        let mut s = Rewrite::new(RewriteConfig {
            unit: RewriteUnit::ToolResults,
            delay: 0,
            context_before: None,
            min_tokens: 200,
            accept_saved: None,
            accept_ratio: None,
            prompt: Prompt::AconObservation,
            ..RewriteConfig::default()
        });
        let mut r = trajectory(2, 60);
        let a = run(&mut s, &st, &mut r, &mock());
        assert_eq!(a.llm_calls.len(), 2);
        assert!(r.contents[4].text().starts_with(REFINED_PREFIX));
        assert!(r.contents[7].text().starts_with(REFINED_PREFIX));
        assert!(!run(&mut s, &st, &mut r, &mock()).changed());
    }

    #[test]
    fn a_failed_call_leaves_the_request_as_it_was() {
        let st = state(1_000_000);
        let mut r = trajectory(3, 60);
        let before = r.clone();
        let a = run(
            &mut Rewrite::new(RewriteConfig::default()),
            &st,
            &mut r,
            &Failing,
        );
        assert_eq!((r, a.failures()), (before, 1));
    }
}
