//! The judge: a model grades an agent's answer to an open probe against its reference answer, on the six
//! dimensions of Factory.ai's evaluation of context compression (December 2025), 0–5 each, and overall.
//!
//! The prompt and the rubric are versioned files (`assets/judge/prompt.md`, `assets/judge/rubric.md`) built
//! into the binary; [`digest`] names the pair, and a run records it so that a resumed or merged run never mixes
//! grades made under different instructions.
//!
//! With the mock LLM the judge is a deterministic **stand-in**: it scores an answer by the share of the
//! reference's identifying tokens ([`crate::history::evidence::identifying_tokens`]) that the answer holds,
//! 0–5 on every dimension. It measures the same thing the real judge's accuracy does, crudely, as the mock's
//! summaries are extractive stand-ins for a model's.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::LlmRequest;
use crate::history::Item;

/// The judge's instructions.
pub const PROMPT: &str = include_str!("../../assets/judge/prompt.md");
/// The rubric it grades by.
pub const RUBRIC: &str = include_str!("../../assets/judge/rubric.md");

/// The dimensions, in report order.
pub const DIMENSIONS: [&str; 6] = [
    "accuracy",
    "context_awareness",
    "artifact_trail",
    "completeness",
    "continuity",
    "instruction_following",
];

const QUESTION: &str = "Question: ";
const REFERENCE: &str = "\n\nReference answer: ";
const ANSWER: &str = "\n\nAgent's answer: ";

/// SHA-256 of the prompt and the rubric: the judge's version.
#[must_use]
pub fn digest() -> String {
    format!("{:x}", Sha256::digest(format!("{PROMPT}\n{RUBRIC}")))
}

/// The grades of one answer, 0–5.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Grades {
    /// One per [`DIMENSIONS`] entry, in order.
    pub dimensions: [f64; 6],
    /// The overall grade.
    pub overall: f64,
}

/// The request that asks the judge to grade `answer` to `question` against `reference`.
#[must_use]
pub fn request(question: &str, reference: &str, answer: &str) -> LlmRequest {
    LlmRequest {
        instructions: vec![format!("{PROMPT}\n{RUBRIC}")],
        contents: vec![Item::user(format!(
            "{QUESTION}{question}{REFERENCE}{reference}{ANSWER}{answer}"
        ))],
    }
}

/// The JSON schema of the judge's reply: every dimension and `overall`, each an integer 0 to 5, nothing else
/// (for servers that constrain replies to a schema: `response_format` in `[judge]`).
#[must_use]
pub fn schema() -> Value {
    let grade = serde_json::json!({"type": "integer", "enum": [0, 1, 2, 3, 4, 5]});
    let keys: Vec<&str> = DIMENSIONS
        .iter()
        .copied()
        .chain(std::iter::once("overall"))
        .collect();
    serde_json::json!({
        "type": "object",
        "properties": keys.iter().map(|k| ((*k).to_owned(), grade.clone())).collect::<serde_json::Map<_, _>>(),
        "required": keys,
        "additionalProperties": false,
    })
}

/// Whether `request` is a judge's ([`request`]), and if so its reference and answer.
#[must_use]
pub fn parts(request: &LlmRequest) -> Option<(&str, &str)> {
    let system = request.instructions.first()?;
    if !(system.len() == PROMPT.len() + 1 + RUBRIC.len()
        && system.starts_with(PROMPT)
        && system.ends_with(RUBRIC))
    {
        return None;
    }
    let text = request.contents.first()?.text();
    let rest = &text[text.find(REFERENCE)? + REFERENCE.len()..];
    let at = rest.find(ANSWER)?;
    Some((&rest[..at], &rest[at + ANSWER.len()..]))
}

/// The grades a judge's reply gives: its JSON object, or failing that each dimension named with a number
/// after it; an overall grade it leaves out is the mean of the dimensions. `None` when it gives none.
#[must_use]
pub fn parse(reply: &str) -> Option<Grades> {
    let grade = |v: f64| v.clamp(0.0, 5.0);
    let from_json = reply
        .find('{')
        .zip(reply.rfind('}'))
        .filter(|(a, b)| a < b)
        .and_then(|(a, b)| serde_json::from_str::<Value>(&reply[a..=b]).ok());
    let lookup = |name: &str| -> Option<f64> {
        if let Some(v) = from_json.as_ref().and_then(|j| j.get(name)) {
            return v
                .as_f64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                .map(grade);
        }
        // `name: 4`, `"name" = 4`, `Name - 4` in prose.
        let lower = reply.to_lowercase();
        let at = lower
            .find(&name.replace('_', " "))
            .or_else(|| lower.find(name))?;
        let after = &lower[at..];
        let digits: String = after
            .chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        (after.find(|c: char| c.is_ascii_digit())? < name.len() + 6)
            .then(|| digits.parse::<f64>().ok().map(grade))
            .flatten()
    };
    let dims: Vec<Option<f64>> = DIMENSIONS.iter().map(|d| lookup(d)).collect();
    let given: Vec<f64> = dims.iter().flatten().copied().collect();
    #[allow(clippy::cast_precision_loss)]
    let overall = lookup("overall")
        .or_else(|| (!given.is_empty()).then(|| given.iter().sum::<f64>() / given.len() as f64))?;
    let mut dimensions = [overall; 6];
    for (d, v) in dimensions.iter_mut().zip(&dims) {
        if let Some(v) = v {
            *d = *v;
        }
    }
    Some(Grades {
        dimensions,
        overall,
    })
}

/// The model name the mock's stand-in judge goes by in `llm_calls.jsonl`.
pub const STAND_IN_MODEL: &str = "stand-in-judge";

/// The stand-in judge's reply: every dimension the share of the reference's identifying tokens the answer
/// holds, times 5, to one decimal, as the JSON a judge writes.
#[must_use]
pub fn stand_in(reference: &str, answer: &str) -> String {
    let keys = crate::history::evidence::identifying_tokens(reference);
    let held = crate::history::evidence::token_share(&keys, answer);
    let score = (held * 50.0).round() / 10.0;
    let mut out = serde_json::Map::new();
    for d in DIMENSIONS.iter().chain(std::iter::once(&"overall")) {
        out.insert((*d).to_owned(), serde_json::json!(score));
    }
    Value::Object(out).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grades_come_from_json_or_prose() {
        let g = parse(
            r#"Sure. {"accuracy": 4, "context_awareness": 3, "artifact_trail": 2, "completeness": 3,
               "continuity": 4, "instruction_following": 5, "overall": 3} Hope this helps."#,
        )
        .unwrap();
        assert_eq!(
            (g.dimensions, g.overall),
            ([4.0, 3.0, 2.0, 3.0, 4.0, 5.0], 3.0)
        );
        let g = parse("Accuracy: 5\nContext awareness: 4\nOverall: 4.5 out of 5").unwrap();
        assert_eq!(g.dimensions[..2], [5.0, 4.0]);
        assert_eq!(g.overall, 4.5);
        // Missing dimensions take the overall grade; a missing overall is the mean of those given.
        assert_eq!(g.dimensions[2], 4.5);
        let g = parse(r#"{"accuracy": 2, "completeness": 4}"#).unwrap();
        assert_eq!(g.overall, 3.0);
        // Out of range is clamped; nothing to go by is no grade.
        assert_eq!(parse(r#"{"overall": 9}"#).unwrap().overall, 5.0);
        assert_eq!(parse("I cannot grade this."), None);
    }

    #[test]
    fn the_request_carries_its_parts_and_the_stand_in_grades_them() {
        let req = request(
            "Which file changed?",
            "edited src/dates.py",
            "I edited src/dates.py.",
        );
        assert_eq!(
            parts(&req),
            Some(("edited src/dates.py", "I edited src/dates.py."))
        );
        assert_eq!(parts(&LlmRequest::default()), None);
        assert_eq!(
            parse(&stand_in("edited src/dates.py", "src/dates.py"))
                .unwrap()
                .overall,
            5.0
        );
        assert_eq!(
            parse(&stand_in("ORD-1 and TCK-2", "only ORD-1"))
                .unwrap()
                .overall,
            2.5
        );
        assert_eq!(parse(&stand_in("ORD-1", "nothing")).unwrap().overall, 0.0);
        assert_eq!(digest().len(), 64);
    }
}
