//! How faithfully an imported trace replays: the baseline's input against the prompt tokens the trace records
//! (`ctxbench usage`, in every run's console and report), per episode here and per source format in the
//! report. A format outside 0.97–1.03 is named with its cause: context the trace left out, the tokenizer, or
//! calls without usage.

use serde::{Deserialize, Serialize};

use crate::history::recorded::RecordedCompaction;
use crate::history::usage::ProviderUsage;
use crate::history::{Episode, ItemKind};
use crate::replay::EpisodeReplay;
use crate::strategy::{AsRecordedConfig, NamedStrategy, StrategyConfig};

/// Whether `episode`'s record is compared with what the agent sent as it recorded it (`as_recorded`) rather
/// than the baseline: where the agent compacted its own context, the provider counted the compacted requests.
/// The one rule of every comparison with a record: import's calibration, `ctxbench usage`, the run's reading
/// and the explorer.
#[must_use]
pub fn compares_as_recorded(episode: &Episode) -> bool {
    RecordedCompaction::is_in(episode)
}

/// The strategy whose replay of `episode` its record is compared with ([`compares_as_recorded`]).
#[must_use]
pub fn compared_strategy(episode: &Episode) -> NamedStrategy {
    if compares_as_recorded(episode) {
        NamedStrategy::new(
            "as_recorded",
            StrategyConfig::AsRecorded(AsRecordedConfig::default()),
        )
    } else {
        NamedStrategy::new("none", StrategyConfig::None)
    }
}

/// What one episode's baseline replay says against its recorded usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fidelity {
    /// The episode's source (`import/aider`, `gen/coding`).
    pub source: String,
    /// Whether the trace records the provider's usage at all.
    pub has_usage: bool,
    /// Whether it records each call's (else only totals).
    pub per_call: bool,
    /// What the trace leaves out of each prompt, as its importer says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaves_out: Option<String>,
    /// Prompt tokens recorded over the compared call points.
    pub recorded: u64,
    /// Input tokens the baseline replays over the same call points.
    pub replayed: u64,
    /// Of the baseline's input over every call point, the tokens of context the trace did not record.
    pub unrecorded: u64,
    /// The baseline's input over every call point.
    pub input: u64,
    /// Call points the trace shows without usage.
    pub without_usage: usize,
    /// The per-call replay / recorded farthest from 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worst_call: Option<f64>,
    /// Where its blocks of unrecorded context were sized with another tokenizer than the run's and sized
    /// again, that tokenizer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resized_from: Option<String>,
    /// Whether a model it called is not OpenAI's, or it names none: an OpenAI encoding then stands in for
    /// its model's own tokenizer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stand_in: bool,
    /// Whether its record is compared with what the agent sent as it recorded it ([`compares_as_recorded`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub as_recorded: bool,
    /// Where the trace leaves context out and records each call, the fit recorded ≈ U + k × replayed
    /// ([`crate::replay::fit`]): its residual per call is the fidelity figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitReading>,
}

/// What the run reads of an episode's fit ([`crate::replay::fit::Fit`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FitReading {
    /// The tokenizers' ratio.
    pub k: f64,
    /// The residual farthest from 0.
    pub worst: f64,
    /// Whether a call's residual is past 3%.
    pub flagged: bool,
    /// Whether the unrecorded context is one constant block (the agent's fixed prefix).
    pub constant: bool,
    /// Whether the residuals are 0 by construction (as many parameters as calls).
    pub by_construction: bool,
    /// Whether `k` is known: fitted, or given (the model's own tokenizer, or the one the agent counted its
    /// record with); else it is 1 for want of two
    /// recorded calls in a segment, and says nothing of the tokenizers.
    #[serde(default)]
    pub k_known: bool,
    /// Whether the replay counted the history at k (the model's tokens: [`crate::replay::fit::Fit::counted_at`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counted: bool,
}

impl Fidelity {
    /// The check of `episode`'s baseline replay `baseline` against its recorded usage.
    #[must_use]
    pub fn of(episode: &Episode, baseline: &EpisodeReplay) -> Self {
        let sent: Vec<usize> = baseline.steps.iter().map(|s| s.tokens_sent).collect();
        let mut out = Self {
            source: episode.source.clone(),
            input: sent.iter().sum::<usize>() as u64,
            unrecorded: baseline
                .steps
                .iter()
                .map(|s| s.tokens_by_kind.get(ItemKind::Unrecorded) as u64)
                .sum(),
            ..Self::default()
        };
        let Some(usage) = ProviderUsage::of(episode) else {
            return out;
        };
        out.has_usage = true;
        out.as_recorded = compares_as_recorded(episode);
        out.fit = crate::replay::fit::of_episode(episode, &baseline.steps).map(|f| FitReading {
            k: f.k,
            worst: f.worst().map_or(0.0, |(_, w)| w),
            flagged: f.flagged(),
            constant: f.constant(),
            by_construction: f.by_construction,
            k_known: f.k_fitted || f.k_given,
            counted: f.counted_at.is_some(),
        });
        let models = episode.models();
        out.stand_in = models.is_empty()
            || models
                .iter()
                .any(|(m, _)| !crate::tokens::is_openai_model(m));
        out.leaves_out.clone_from(&usage.leaves_out);
        out.resized_from.clone_from(&usage.resized_from);
        out.without_usage = usage.unrecorded.len();
        if let Some(calls) = usage.per_call_point(sent.len()) {
            out.per_call = true;
            for (k, c) in calls {
                out.recorded += c.input_tokens;
                out.replayed += sent[k] as u64;
                if c.input_tokens > 0 {
                    #[allow(clippy::cast_precision_loss)]
                    let r = sent[k] as f64 / c.input_tokens as f64;
                    if out.worst_call.is_none_or(|w| r.ln().abs() > w.ln().abs()) {
                        out.worst_call = Some(r);
                    }
                }
            }
        } else if let Some(total) = usage.input_tokens.filter(|_| usage.unrecorded.is_empty()) {
            out.recorded = total;
            out.replayed = out.input;
        }
        out
    }

    /// The format, from the source (`import/aider` → `aider`).
    #[must_use]
    pub fn format(&self) -> &str {
        self.source.strip_prefix("import/").unwrap_or(&self.source)
    }
}

/// Per source format: [`Fidelity`] summed over its episodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FormatFidelity {
    /// The format (`aider`, `claude-code`; a generator family for generated data).
    pub format: String,
    /// Episodes.
    pub episodes: usize,
    /// Of those, the episodes that record usage.
    pub with_usage: usize,
    /// Of those, the episodes that record each call's.
    pub per_call: usize,
    /// What the format leaves out of each prompt, when its importer says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaves_out: Option<String>,
    /// Prompt tokens recorded over the compared call points.
    pub recorded: u64,
    /// The baseline's input over the same call points.
    pub replayed: u64,
    /// The tokens of unrecorded context the baseline sent.
    pub unrecorded: u64,
    /// The baseline's input.
    pub input: u64,
    /// Call points without usage.
    pub without_usage: usize,
    /// The per-call ratio farthest from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_call: Option<f64>,
    /// Of the episodes that record usage, those compared as the agent sent them ([`compares_as_recorded`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub as_recorded: usize,
    /// Whether an OpenAI encoding stands in for the tokenizer of a model its episodes called (or they name
    /// none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stand_in: bool,
    /// Episodes with a fit of their unrecorded context ([`Fidelity::fit`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fitted: usize,
    /// Of those, the ones a call of which the fit leaves past 3%, the ones whose unrecorded context is not
    /// one constant block, and the ones fitted by construction.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fit_flagged: usize,
    /// See [`FormatFidelity::fit_flagged`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fit_varying: usize,
    /// See [`FormatFidelity::fit_flagged`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fit_by_construction: usize,
    /// The fits' residual farthest from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_worst: Option<f64>,
    /// The smallest and largest k of the fits whose k is known (fitted or given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit_k: Option<(f64, f64)>,
    /// Of the fitted episodes, those whose replay counted the history at their k (the model's tokens).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fit_counted: usize,
    /// Episodes whose blocks of unrecorded context were sized with another tokenizer and sized again, and
    /// the first such tokenizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resized: Option<(usize, String)>,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The range of replay / recorded within which a format is taken to replay what its traces record.
pub const FAITHFUL: (f64, f64) = (0.97, 1.03);

impl FormatFidelity {
    /// Adds an episode's check.
    pub fn add(&mut self, f: &Fidelity) {
        self.episodes += 1;
        self.with_usage += usize::from(f.has_usage);
        self.per_call += usize::from(f.per_call);
        if self.leaves_out.is_none() {
            self.leaves_out.clone_from(&f.leaves_out);
        }
        self.recorded += f.recorded;
        self.replayed += f.replayed;
        self.unrecorded += f.unrecorded;
        self.input += f.input;
        self.without_usage += f.without_usage;
        self.stand_in |= f.has_usage && f.stand_in;
        self.as_recorded += usize::from(f.has_usage && f.as_recorded);
        if let Some(fit) = &f.fit {
            self.fitted += 1;
            self.fit_flagged += usize::from(fit.flagged);
            self.fit_varying += usize::from(!fit.constant);
            self.fit_by_construction += usize::from(fit.by_construction);
            self.fit_counted += usize::from(fit.counted);
            let w = self.fit_worst.get_or_insert(fit.worst);
            if fit.worst.abs() > w.abs() {
                *w = fit.worst;
            }
            if fit.k_known {
                let (lo, hi) = self.fit_k.get_or_insert((fit.k, fit.k));
                *lo = lo.min(fit.k);
                *hi = hi.max(fit.k);
            }
        }
        if let Some(from) = &f.resized_from {
            let resized = self.resized.get_or_insert_with(|| (0, from.clone()));
            resized.0 += 1;
        }
        if let Some(r) = f.worst_call {
            if self.worst_call.is_none_or(|w| r.ln().abs() > w.ln().abs()) {
                self.worst_call = Some(r);
            }
        }
    }

    /// replay / recorded over the compared call points, when the traces record usage.
    #[must_use]
    pub fn ratio(&self) -> Option<f64> {
        #[allow(clippy::cast_precision_loss)]
        (self.recorded > 0).then(|| self.replayed as f64 / self.recorded as f64)
    }

    /// What the fits of the format's unrecorded context found, in a clause (empty without one).
    #[must_use]
    pub fn fit_clause(&self) -> String {
        let Some(worst) = self.fit_worst else {
            return String::new();
        };
        let k = match self.fit_k {
            Some((lo, hi)) if (hi - lo).abs() < 5e-4 => format!("k {lo:.3}"),
            Some((lo, hi)) => format!("k {lo:.3}–{hi:.3}"),
            None => "k not fitted".to_owned(),
        };
        let mut out = format!(
            "; the ratio is 1 by construction where blocks were sized from the record: fitted, recorded ≈ U + \
             k × replayed ({k}) leaves at most {:+.1}% on a call of {} episode{}",
            100.0 * worst,
            self.fitted,
            if self.fitted == 1 { "" } else { "s" }
        );
        if self.fit_flagged > 0 {
            out += &format!(", past 3% on {} (flagged)", self.fit_flagged);
        }
        if self.fit_by_construction > 0 {
            out += &format!(
                ", 0 by construction on {} (as many parameters as calls)",
                self.fit_by_construction
            );
        }
        if self.fit_counted > 0 {
            out += &format!(
                "; {} counted in the model's tokens at the fitted k (every item and every text a strategy \
                 writes at k × the tokenizer's count)",
                if self.fit_counted == self.fitted {
                    "every episode fitted".to_owned()
                } else {
                    format!("{} of {} episodes", self.fit_counted, self.fitted)
                },
            );
        }
        out
    }

    /// What the traces left out, as the report names it: the importer's words where the fit finds one constant
    /// block on every episode, else "context the traces did not record" with how many episodes it changes on.
    #[must_use]
    pub fn unrecorded_name(&self) -> String {
        let what = self.leaves_out.as_deref().unwrap_or("unrecorded context");
        if self.fit_varying == 0 {
            what.to_owned()
        } else {
            format!(
                "not one constant block on {} of {} episodes: {what}, and what changed or was miscounted",
                self.fit_varying, self.fitted
            )
        }
    }

    /// The share of the baseline's input that the traces did not record.
    #[must_use]
    pub fn unrecorded_share(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        if self.input == 0 {
            0.0
        } else {
            self.unrecorded as f64 / self.input as f64
        }
    }

    /// Why the format replays outside [`FAITHFUL`] or cannot be checked, in a sentence; `None` when it replays
    /// within it (or is generated data, which records no usage to check). `tokenizer` is what counted, and
    /// `model_own` whether it is the agent model's own (given with `--tokenizer`): where it is not, and the
    /// traces' models are not OpenAI's (or are not named), the tokenizer is named as the cause, whatever the
    /// ratio (DeepSeek's run reads 0.76 on a call with o200k_base and 1.005 with its own tokenizer: no fixed
    /// bound tells the two apart); where it is, what is left is more than a tokenizer explains.
    #[must_use]
    pub fn cause(&self, tokenizer: &str, model_own: bool) -> Option<String> {
        if self.with_usage == 0 {
            return self.format_is_imported().then(|| {
                "its traces record no usage: figures cover only what they recorded".to_owned()
            });
        }
        let r = self.ratio()?;
        let outside = r < FAITHFUL.0 || r > FAITHFUL.1;
        let worst_outside = self
            .worst_call
            .is_some_and(|w| w < FAITHFUL.0 || w > FAITHFUL.1);
        if !outside && !worst_outside {
            return None;
        }
        let mut why = Vec::new();
        if let Some(what) = &self.leaves_out {
            if self.unrecorded == 0 && r < FAITHFUL.0 {
                why.push(format!(
                    "unrecorded context: the traces leave out {what}, and no block of it was added (import \
                     them again, without `--unrecorded ignore`)"
                ));
            }
        }
        // The tokenizer, or more, where unrecorded context is not the cause (or the import added some of it).
        if self.leaves_out.is_none() || self.unrecorded > 0 || why.is_empty() {
            why.push(if !model_own && self.stand_in {
                format!(
                    "the tokenizer: counted with {tokenizer}, not the model's own (give its tokenizer.json and \
                     chat template: --tokenizer, --chat-template; `ctxbench usage --per-call` with them shows \
                     what is left)"
                )
            } else {
                format!(
                    "more than a tokenizer explains: the traces' usage counts calls or context their replay \
                     does not hold (counted with {tokenizer}, the model's own; check `ctxbench usage \
                     --per-call`)"
                )
            });
        }
        if self.without_usage > 0 {
            why.push(format!(
                "{} call point{} without usage, left out of the comparison",
                self.without_usage,
                if self.without_usage == 1 { "" } else { "s" }
            ));
        }
        Some(why.join("; "))
    }

    fn format_is_imported(&self) -> bool {
        !self.format.starts_with("gen/") && self.format != "test"
    }
}

#[cfg(test)]
#[path = "fidelity_fit_tests.rs"]
mod fit_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::usage::CallUsage;
    use crate::replay::StepRecord;

    fn replay(sent: &[usize], unrecorded: &[usize]) -> EpisodeReplay {
        EpisodeReplay {
            episode: "e".into(),
            source: "import/x".into(),
            strategy: "none".into(),
            items: 0,
            steps: sent
                .iter()
                .zip(unrecorded)
                .map(|(&tokens_sent, &u)| {
                    let mut s = StepRecord {
                        tokens_sent,
                        ..StepRecord::default()
                    };
                    s.tokens_by_kind.add(ItemKind::Unrecorded, u);
                    s
                })
                .collect(),
            probes: Vec::new(),
            calls: Vec::new(),
        }
    }

    /// Two calls recorded at 100 and 200 and replayed at 95 and 210: 305 / 300 over the format, the worst call
    /// 95 / 100 (farther from 1 on a log scale than 210 / 200); a call without usage is left out of the comparison and said.
    #[test]
    fn per_call_records_are_compared_where_they_exist() {
        let mut ep = Episode {
            source: "import/x".into(),
            ..Episode::default()
        };
        let call = |n| {
            Ok(CallUsage {
                input_tokens: n,
                ..CallUsage::default()
            })
        };
        ProviderUsage::from_call_points("t", vec![call(100), Err("cut".into()), call(200)])
            .store(&mut ep);
        let f = Fidelity::of(&ep, &replay(&[95, 150, 210], &[0, 0, 0]));
        assert_eq!((f.recorded, f.replayed, f.input), (300, 305, 455));
        assert_eq!(f.without_usage, 1);
        assert_eq!(f.worst_call, Some(0.95));
        let mut format = FormatFidelity {
            format: "x".into(),
            ..FormatFidelity::default()
        };
        format.add(&f);
        assert!((format.ratio().unwrap() - 305.0 / 300.0).abs() < 1e-12);
        let cause = format.cause("o200k_base", false).unwrap();
        assert!(
            cause.contains("tokenizer") && cause.contains("1 call point without usage"),
            "{cause}"
        );
        // Unrecorded context the trace left out and import added: its share of the input.
        let f = Fidelity::of(&ep, &replay(&[100, 150, 200], &[60, 60, 60]));
        let mut format = FormatFidelity::default();
        format.add(&f);
        assert!((format.unrecorded_share() - 180.0 / 450.0).abs() < 1e-12);
    }

    /// An episode whose calls record `recorded` prompt tokens and replay `sent`.
    fn checked(source: &str, recorded: &[u64], sent: &[usize]) -> Fidelity {
        let mut ep = Episode {
            source: source.into(),
            ..Episode::default()
        };
        let calls = recorded
            .iter()
            .map(|&n| {
                Ok(CallUsage {
                    input_tokens: n,
                    ..CallUsage::default()
                })
            })
            .collect();
        ProviderUsage::from_call_points("t", calls).store(&mut ep);
        Fidelity::of(&ep, &replay(sent, &vec![0; sent.len()]))
    }

    /// The worst call is the ratio farthest from 1 on a log scale, the first of two as far (2 and 0.5); the
    /// format's, the farthest of its episodes'.
    #[test]
    fn the_worst_call_is_the_farthest_from_one_and_the_first_on_ties() {
        let f = checked("import/aider", &[100, 100], &[110, 50]);
        assert_eq!(f.worst_call, Some(0.5));
        assert_eq!(checked("x", &[100, 100], &[200, 50]).worst_call, Some(2.0));
        assert_eq!(f.source, "import/aider");
        assert_eq!(f.format(), "aider");
        assert_eq!(checked("gen/coding", &[], &[]).format(), "gen/coding");
        let mut format = FormatFidelity::default();
        assert_eq!(format.ratio(), None, "nothing recorded, no ratio");
        for worst in [1.1, 0.5, 2.0, 1.2] {
            format.add(&Fidelity {
                has_usage: true,
                per_call: worst < 1.5,
                worst_call: Some(worst),
                ..Fidelity::default()
            });
        }
        assert_eq!(
            (format.episodes, format.with_usage, format.per_call),
            (4, 4, 3)
        );
        assert_eq!(format.worst_call, Some(0.5));
    }

    /// A format that replays within 0.97–1.03 over all its calls still has a cause when one call is outside.
    #[test]
    fn one_call_outside_the_range_is_named_though_the_format_is_within_it() {
        let mut format = FormatFidelity {
            format: "aider".into(),
            ..FormatFidelity::default()
        };
        format.add(&checked("import/aider", &[1000, 100], &[995, 120]));
        assert!((format.ratio().unwrap() - 1115.0 / 1100.0).abs() < 1e-12);
        let cause = format.cause("o200k_base", false).expect("a call at 1.2");
        assert!(cause.contains("tokenizer"), "{cause}");
        let mut within = FormatFidelity::default();
        within.add(&checked("import/aider", &[1000, 100], &[1000, 101]));
        assert_eq!(within.cause("o200k_base", false), None);
    }

    /// A format with usage: `replayed` of 100 recorded tokens, its worst call, what it leaves out and how much of
    /// it the import added.
    fn format_at(
        replayed: u64,
        worst: Option<f64>,
        leaves_out: Option<&str>,
        unrecorded: u64,
    ) -> FormatFidelity {
        FormatFidelity {
            format: "aider".into(),
            episodes: 1,
            with_usage: 1,
            recorded: 100,
            replayed,
            worst_call: worst,
            leaves_out: leaves_out.map(str::to_owned),
            unrecorded,
            stand_in: true,
            ..FormatFidelity::default()
        }
    }

    /// 0.97 and 1.03 are within the range, for the format and for its worst call; below and above are not.
    #[test]
    fn the_range_holds_its_ends() {
        let cause = |f: FormatFidelity| f.cause("o200k_base", false);
        assert_eq!(cause(format_at(97, None, None, 0)), None);
        assert_eq!(cause(format_at(103, None, None, 0)), None);
        assert_eq!(cause(format_at(100, Some(1.03), None, 0)), None);
        assert_eq!(cause(format_at(100, Some(0.97), None, 0)), None);
        for outside in [90, 110] {
            let why = cause(format_at(outside, None, None, 0)).expect("outside");
            assert!(why.starts_with("the tokenizer"), "{why}");
            assert!(!why.contains("without usage"), "{why}");
        }
    }

    /// Where an OpenAI encoding stands in for the model's tokenizer, the tokenizer is the cause however far
    /// the ratio is (no fixed bound: DeepSeek's run reads 0.763 on a call with o200k_base and 1.005 with its
    /// own); counted with the model's own (given, or an OpenAI model's encoding), what is left is more than
    /// a tokenizer explains.
    #[test]
    fn the_tokenizer_is_the_cause_wherever_it_stands_in() {
        for (replayed, worst) in [(86, Some(0.763)), (50, None), (140, Some(1.6))] {
            let f = format_at(replayed, worst, None, 0);
            let why = f.cause("o200k_base", false).unwrap();
            assert!(
                why.starts_with("the tokenizer: counted with o200k_base"),
                "{why}"
            );
            let own = f.cause("tokenizer.json", true).unwrap();
            assert!(own.starts_with("more than a tokenizer"), "{own}");
            let openai = FormatFidelity {
                stand_in: false,
                ..f
            };
            let why = openai.cause("o200k_base", false).unwrap();
            assert!(why.starts_with("more than a tokenizer"), "{why}");
        }
        // An episode's models decide: gpt-4o on o200k is its own; a Claude model, or none named, is not.
        let named = |model: Option<&str>| {
            let mut ep = Episode {
                source: "import/x".into(),
                items: vec![crate::history::Item::user("hi")],
                model: model.map(str::to_owned),
                ..Episode::default()
            };
            ProviderUsage::from_calls("t", vec![CallUsage::default()]).store(&mut ep);
            Fidelity::of(&ep, &replay(&[10], &[0])).stand_in
        };
        assert!(!named(Some("gpt-4o-2024-08-06")));
        assert!(!named(Some("openai/gpt-4.1")));
        assert!(named(Some("claude-opus-4-5-20251101")));
        assert!(named(Some("deepseek/deepseek-reasoner")));
        assert!(named(None));
    }

    /// Unrecorded context is the cause only below the range and when the import added none of it; once it
    /// added some, the rest is the tokenizer's or more.
    #[test]
    fn unrecorded_context_is_the_cause_only_where_none_was_added_below_the_range() {
        let cause = |f: FormatFidelity| f.cause("o200k_base", false).expect("outside");
        let why = cause(format_at(90, None, Some("the system prompt"), 0));
        assert!(
            why.starts_with("unrecorded context: the traces leave out the system prompt"),
            "{why}"
        );
        assert!(!why.contains("tokenizer"), "{why}");
        // Above the range, or a call outside it: not the context left out, but never a cause left empty.
        for (replayed, worst) in [(110, None), (97, Some(0.5))] {
            let why = cause(format_at(replayed, worst, Some("the system prompt"), 0));
            assert!(!why.contains("unrecorded context"), "{replayed}: {why}");
            assert!(
                why.starts_with("the tokenizer") || why.starts_with("more than a tokenizer"),
                "{replayed}: {why}"
            );
        }
        let why = cause(format_at(90, None, Some("the system prompt"), 1));
        assert!(why.starts_with("the tokenizer"), "{why}");
    }

    /// A format that records no usage: imported traces are named, generated data is not.
    #[test]
    fn only_imported_formats_without_usage_are_named() {
        let none = |format: &str| FormatFidelity {
            format: format.into(),
            episodes: 1,
            ..FormatFidelity::default()
        };
        assert!(none("aider")
            .cause("o200k_base", false)
            .is_some_and(|c| c.starts_with("its traces record no usage")));
        assert_eq!(none("gen/coding").cause("o200k_base", false), None);
        assert_eq!(none("test").cause("o200k_base", false), None);
    }

    /// A call recorded with 0 prompt tokens counts in the sums but has no ratio: the worst call is the others'.
    #[test]
    fn a_call_recorded_at_zero_tokens_has_no_ratio() {
        let mut ep = Episode::default();
        let call = |n| {
            Ok(CallUsage {
                input_tokens: n,
                ..CallUsage::default()
            })
        };
        ProviderUsage::from_call_points("t", vec![call(0), call(100)]).store(&mut ep);
        let f = Fidelity::of(&ep, &replay(&[40, 110], &[0, 0]));
        assert_eq!((f.recorded, f.replayed), (100, 150));
        assert_eq!(f.worst_call, Some(1.1));
    }
}
