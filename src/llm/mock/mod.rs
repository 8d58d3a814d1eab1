//! A deterministic mock LLM: extractive, sectioned summaries and extractive probe answers, with latency from
//! a model instead of a clock.
//!
//! The same request gives the same response on every machine. A summarization request (one that holds a
//! [`Transcript`]) gets an extractive summary of that transcript under a token budget, laid out in the
//! sections of a good summary ([`summarize`]); any other request is answered by picking the line of the
//! request that shares the most of the last user message's terms, rare ones weighing more ([`answer`]). It
//! sees the request and nothing else: never a finding, an evidence string or an accepted answer.

mod answer;
mod index;
mod summarize;
mod terms;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::transcript::Transcript;
use super::{EpisodeHint, Llm, LlmRequest, LlmResponse, Usage};
use crate::error::Result;
use crate::tokens::Tokenizer;

/// What the mock's calls are labelled until the run names the model they stand for (a config that names none).
pub const UNNAMED: &str = "mock";

/// The mock's parameters: its latency model and its summary budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MockConfig {
    /// The model the mock stands in for: its calls are labelled and priced as it. Absent, the strategies' model
    /// is the one `[pricing] strategy_model` names, else each episode's own (the run labels the mock's calls
    /// with it; [`UNNAMED`] until then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Time to first token, in milliseconds.
    pub ttft_ms: f64,
    /// Prefill time per input token, in milliseconds.
    pub ms_per_input_token: f64,
    /// Decode time per output token, in milliseconds.
    pub ms_per_output_token: f64,
    /// Token budget of a summary.
    pub summary_max_tokens: usize,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            model: None,
            ttft_ms: 350.0,
            ms_per_input_token: 0.02,
            ms_per_output_token: 12.0,
            summary_max_tokens: 400,
        }
    }
}

/// The deterministic mock LLM.
#[derive(Debug, Clone)]
pub struct MockLlm {
    config: MockConfig,
    tokenizer: Arc<Tokenizer>,
}

impl MockLlm {
    /// A mock that counts usage with `tokenizer`.
    #[must_use]
    pub fn new(config: MockConfig, tokenizer: Arc<Tokenizer>) -> Self {
        Self { config, tokenizer }
    }

    /// The modelled latency of a call, in milliseconds.
    #[must_use]
    pub fn latency_ms(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let ms = self.config.ttft_ms
            + input_tokens as f64 * self.config.ms_per_input_token
            + output_tokens as f64 * self.config.ms_per_output_token;
        ms
    }

    /// Answers a request (what [`Llm::generate`] returns): a summary of its
    /// transcript, or an answer to its last user message; usage counted with the tokenizer.
    #[must_use]
    pub fn respond(&self, request: &LlmRequest) -> LlmResponse {
        let judged = crate::llm::judge::parts(request);
        // A judge's request is never a summary's: its transcript is not looked for.
        let transcript = match judged {
            Some(_) => None,
            None => Transcript::from_request(request),
        };
        let (text, input, output) = match transcript {
            // The stand-in judge (see `llm::judge`).
            // The same grade of the same answer, asked again by another strategy, is known.
            _ if judged.is_some() => answer::by_content(request, || {
                let (reference, answer) = judged.unwrap_or_default();
                let text = crate::llm::judge::stand_in(reference, answer);
                let input = self
                    .tokenizer
                    .count_request(&request.instructions, &request.contents);
                let output = self.tokenizer.count_text(&text);
                (text, input, output)
            }),
            Some(transcript) => {
                let text = summarize::summarize(
                    transcript,
                    &self.tokenizer,
                    self.config.summary_max_tokens,
                );
                let input = self
                    .tokenizer
                    .count_request(&request.instructions, &request.contents);
                let output = self.tokenizer.count_text(&text);
                (text, input, output)
            }
            None => answer::answer(&self.tokenizer, request),
        };
        let (input, output) = (input as u64, output as u64);
        LlmResponse {
            latency_ms: self.latency_ms(input, output),
            text,
            usage: Usage {
                input_tokens: input,
                output_tokens: output,
            },
            meta: crate::llm::CallMeta::default(),
        }
    }
}

impl Llm for MockLlm {
    fn model(&self) -> &str {
        self.config.model.as_deref().unwrap_or(UNNAMED)
    }

    fn generate(&self, request: &LlmRequest) -> Result<LlmResponse> {
        Ok(self.respond(request))
    }

    fn start_episode(&self, hint: &EpisodeHint<'_>) {
        answer::expect(hint.questions);
    }
}

/// Cuts `s` to at most `max` characters, marking the cut.
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((byte, _)) => format!("{}…", &s[..byte]),
        None => s.to_owned(),
    }
}
#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::terms::{question_terms, terms};
    use super::*;
    use crate::history::{Item, Role};

    fn mock() -> MockLlm {
        MockLlm::new(MockConfig::default(), Tokenizer::shared_default().unwrap())
    }

    #[test]
    fn summary_is_sectioned_deterministic_and_keeps_errors() {
        let history = "[user]: Fix the failing test in src/app.py...\n\
                       [Tool Call]: run_tests({\"path\": \"tests\"})\n\
                       [Tool Result]: run_tests -> FAILED tests/test_app.py::test_total AssertionError: 41 != 42...\n\
                       [assistant]: The total is off by one in src/app.py line 17; next I will fix it....";
        let req = LlmRequest {
            instructions: vec![format!("Summarize.\n<history>\n{history}\n</history>")],
            contents: vec![Item::user("Please summarize.")],
        };
        let m = mock();
        let a = m.respond(&req);
        assert_eq!(a, m.respond(&req));
        for section in [
            "## Task",
            "## Tools used",
            "## Key findings",
            "## Progress",
            "## Remaining work",
        ] {
            assert!(a.text.contains(section), "{}", a.text);
        }
        assert!(a.text.contains("AssertionError: 41 != 42"), "{}", a.text);
        assert!(a.text.contains("run_tests ×1"), "{}", a.text);
        assert!(a.latency_ms > 350.0);
        assert_eq!(
            a.usage.output_tokens as usize,
            m.tokenizer.count_text(&a.text)
        );
    }

    #[test]
    fn summary_respects_budget() {
        let history: String = (0..500)
            .map(|i| format!("[Tool Result]: t -> error at /src/f{i}.rs:{i}\n"))
            .collect();
        let req = LlmRequest {
            instructions: vec![format!("<history>\n{history}</history>")],
            contents: vec![],
        };
        let m = mock();
        let a = m.respond(&req);
        assert!(
            a.usage.output_tokens <= 400 + 10,
            "{}",
            a.usage.output_tokens
        );
    }

    /// The answer by its definition (the rule of `answer`): every line of every text scored on its own, with
    /// no index and no cache.
    fn reference_answer(request: &LlmRequest) -> String {
        let question = request
            .contents
            .iter()
            .rev()
            .find(|i| i.is_role(Role::User))
            .map_or("", Item::text);
        let wanted = question_terms(question);
        let open = answer::is_open(question);
        let n = request.contents.len() - 1;
        let head = &request.contents[..n];
        // Each text with the terms its tool call holds (name and arguments), for a tool's output.
        let texts: Vec<(&str, Vec<String>)> = request
            .instructions
            .iter()
            .map(|s| (s.as_str(), Vec::new()))
            .chain(head.iter().enumerate().map(|(i, item)| {
                // The latest call with the result's id before it.
                let call = match item {
                    Item::ToolResult { call_id, .. } => {
                        head[..i].iter().rev().find_map(|c| match c {
                            Item::ToolCall {
                                id,
                                name,
                                arguments,
                            } if id == call_id => Some(format!("{name}\n{arguments}")),
                            _ => None,
                        })
                    }
                    _ => None,
                };
                let call_terms = call.map_or_else(Vec::new, |c| {
                    terms(&c).map(Cow::into_owned).collect::<Vec<_>>()
                });
                (item.text(), call_terms)
            }))
            .collect();
        let line_terms: Vec<Vec<Vec<String>>> = texts
            .iter()
            .map(|(t, _)| {
                t.lines()
                    .map(|l| terms(l).map(Cow::into_owned).collect())
                    .collect()
            })
            .collect();
        let lines: u64 = line_terms.iter().map(|t| t.len() as u64).sum();
        let weights: Vec<u64> = wanted
            .iter()
            .map(|w| {
                let df = line_terms
                    .iter()
                    .flatten()
                    .filter(|l| l.contains(w))
                    .count();
                super::index::weight(lines, df as u64)
            })
            .collect();
        // (score, text, line) of the best lines, the best first, the latest first among equals.
        let mut best: Vec<(u64, usize, usize)> = Vec::new();
        let keep = if open { answer::OPEN_LINES } else { 1 };
        for (t, ((text, call), lines)) in texts.iter().zip(&line_terms).enumerate() {
            for (l, (_, found)) in text.lines().zip(lines).enumerate() {
                let own: u64 = (0..wanted.len())
                    .filter(|&k| found.contains(&wanted[k]))
                    .map(|k| weights[k])
                    .sum();
                if own == 0 {
                    continue;
                }
                let context: u64 = (0..wanted.len())
                    .filter(|&k| !found.contains(&wanted[k]) && call.contains(&wanted[k]))
                    .map(|k| weights[k])
                    .sum();
                let score = 2 * own + context;
                let at = best.iter().take_while(|b| b.0 > score).count();
                best.insert(at, (score, t, l));
                best.truncate(keep);
            }
        }
        let mut found: Vec<(usize, usize)> = best.into_iter().map(|(_, t, l)| (t, l)).collect();
        if open {
            // The first lines that are not blank of each of the latest texts.
            let from = texts.len().saturating_sub(answer::RECENT_TEXTS);
            for (t, (text, _)) in texts.iter().enumerate().skip(from) {
                let first = text
                    .lines()
                    .enumerate()
                    .filter(|(_, l)| !l.trim().is_empty())
                    .take(answer::RECENT_LINES);
                found.extend(first.map(|(l, _)| (t, l)));
            }
            found.sort_unstable();
            found.dedup();
        }
        let lines: Vec<&str> = found
            .iter()
            .map(|&(t, l)| texts[t].0.lines().nth(l).unwrap_or(""))
            .collect();
        // How a long line is quoted is the reply's own rule, shared.
        super::answer::reply(&lines, question)
    }

    #[test]
    fn cached_answers_equal_the_definition() {
        let path = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/datasets/default.jsonl"
        ));
        let episodes = crate::history::dataset::read_all(path).unwrap();
        // Without the replay's hint, then with it (each on a fresh thread, so with fresh caches): with it, a
        // question the hint did not name must be answered as well.
        for hinted in [false, true] {
            let asked = std::thread::scope(|s| {
                s.spawn(|| {
                    let m = mock();
                    let mut asked = 0;
                    for ep in episodes.iter().take(12) {
                        if hinted {
                            let questions: Vec<&str> =
                                ep.probes.iter().map(|p| p.question.as_str()).collect();
                            m.start_episode(&EpisodeHint {
                                questions: &questions,
                            });
                        }
                        // A question the hint did not name: the first line of the episode's first tool
                        // result, whose words a table of the probes' words alone would mostly miss.
                        let unexpected = ep.items.iter().find_map(|i| match i {
                            Item::ToolResult { content, .. } => content.lines().next(),
                            _ => None,
                        });
                        let last = ep.items.len() - 1;
                        for question in ep
                            .probes
                            .iter()
                            .map(|p| (p.question.as_str(), p.after_item))
                            .chain(unexpected.map(|q| (q, last)))
                        {
                            asked += check_answers(&m, ep, question);
                        }
                    }
                    asked
                })
                .join()
                .unwrap()
            });
            assert!(asked > 30, "{asked}");
        }
    }

    /// Asks `question` (after the item it names) as the baseline sends it, then with every other tool result
    /// gone (a different request over the same texts, as another strategy sends it) and with a summary
    /// instruction; checks each answer against the definition. Returns how many were asked.
    fn check_answers(
        m: &MockLlm,
        ep: &crate::Episode,
        (question, after_item): (&str, usize),
    ) -> usize {
        let upto = (after_item + 1).min(ep.items.len());
        let full: Vec<Item> = ep.items[..upto].to_vec();
        let thinned: Vec<Item> = full
            .iter()
            .enumerate()
            .filter(|(i, it)| i % 2 == 0 || !matches!(it, Item::ToolResult { .. }))
            .map(|(_, it)| it.clone())
            .collect();
        let mut asked = 0;
        for (instructions, mut contents) in [
            (vec![], full.clone()),
            (vec![], thinned),
            (vec![format!("[Previous work summary]\n{}", ep.task)], full),
        ] {
            contents.push(Item::user(question));
            let req = LlmRequest {
                instructions,
                contents,
            };
            assert_eq!(
                m.respond(&req).text,
                reference_answer(&req),
                "episode {}, question {question:?}",
                ep.id
            );
            asked += 1;
        }
        asked
    }

    #[test]
    fn answers_by_extractive_lookup() {
        let req = LlmRequest::from_contents(vec![
            Item::tool_result(
                "1",
                "db",
                "customer_id: C-1029\ntier: gold\nrefund_limit: 250 USD",
            ),
            Item::user("What is the refund_limit of the customer?"),
        ]);
        assert_eq!(mock().respond(&req).text, "refund_limit: 250 USD");
    }

    #[test]
    fn open_questions_are_answered_with_the_best_lines_and_where_things_stand() {
        let req = LlmRequest::from_contents(vec![
            Item::tool_call("1", "edit_file", r#"{"path": "src/app.py"}"#),
            Item::tool_result("1", "edit_file", "edited src/app.py: 2 lines changed"),
            Item::tool_call("2", "get_refund", r#"{"order": "ORD-1"}"#),
            Item::tool_result(
                "2",
                "get_refund",
                "{\"order\": \"ORD-1\", \"refund_amount\": 1234}",
            ),
            Item::user("Which files did the agent change, and how?"),
        ]);
        let text = mock().respond(&req).text;
        assert!(
            text.contains("edited src/app.py") && text.contains("1234"),
            "{text}"
        );
        assert_eq!(text, reference_answer(&req));
        // A question about what comes next, whose words no line holds: where things stand, the first lines of
        // the three latest texts (the last call, its result and the one before).
        let mut next = req.clone();
        next.contents.pop();
        next.contents
            .push(Item::user("What is the next thing to do, and why?"));
        assert_eq!(
            mock().respond(&next).text,
            "edited src/app.py: 2 lines changed\n{\"order\": \"ORD-1\"}\n\
             {\"order\": \"ORD-1\", \"refund_amount\": 1234}"
        );
        assert_eq!(mock().respond(&next).text, reference_answer(&next));
        // A question for one value keeps its one line.
        assert!(!answer::is_open(
            "What is the refund_limit of the customer?"
        ));
        assert!(answer::is_open("What happens next in this case?"));
        assert!(answer::is_open("What is left to do?"));
    }

    #[test]
    fn a_thread_forgets_the_answers_of_an_episode_with_other_questions() {
        let m = mock();
        let question = "What is the refund_limit of the customer?";
        let req = LlmRequest::from_contents(vec![
            Item::tool_result("1", "db", "customer_id: C-1029\nrefund_limit: 250 USD"),
            Item::user(question),
        ]);
        let held = || answer::ANSWER_CACHE.with_borrow(|c| (c.lines.len(), c.requests.len()));
        m.start_episode(&EpisodeHint {
            questions: &[question],
        });
        assert_eq!(m.respond(&req).text, "refund_limit: 250 USD");
        assert!(held().0 > 0 && held().1 > 0, "{:?}", held());
        // The same questions again (another strategy of the same episode): everything stays.
        let before = held();
        m.start_episode(&EpisodeHint {
            questions: &[question],
        });
        assert_eq!(held(), before);
        // Another episode's questions: nothing cached is of use, so nothing stays, and answers are the same.
        m.start_episode(&EpisodeHint {
            questions: &["Which linker is missing?"],
        });
        assert_eq!(held(), (0, 0));
        m.start_episode(&EpisodeHint {
            questions: &[question],
        });
        assert_eq!(m.respond(&req).text, "refund_limit: 250 USD");
    }
}
