//! What answers a replay of a run's configuration, built once for `run`, `show` and `--dry-run`: the
//! tokenizer, the agent's LLM (the configured model or the mock), the judge (the configured one or the mock's
//! deterministic stand-in) and the spending budget every real call is reserved against.

use std::sync::Arc;

use super::RunConfig;
use crate::error::{Error, Result};
use crate::llm::mock::{MockConfig, MockLlm};
use crate::llm::openai::{Budget, OpenAiLlm};
use crate::llm::Llm;
use crate::replay::Replayer;
use crate::tokens::Tokenizer;

/// How a session reaches the configured models.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Models {
    /// The configured `[llm]` and `[judge]`, checked with a preflight call unless their response cache may
    /// answer every call; every call reserved against `max_cost` USD when it is given.
    Real {
        /// The most the session may spend.
        max_cost: Option<f64>,
    },
    /// The mock and the stand-in judge alone, whatever the configuration says (nothing is sent).
    MockOnly,
}

/// The tokenizer and the models a replay answers with; see the module docs.
pub struct Session {
    tokenizer: Arc<Tokenizer>,
    llm: Option<OpenAiLlm>,
    judge: Option<OpenAiLlm>,
    mock: MockLlm,
    stand_in: MockLlm,
    context_window: usize,
    defaults: crate::llm::pricing::Defaults,
    unrecorded: bool,
}

impl Session {
    /// The session of `config`.
    ///
    /// # Errors
    /// A tokenizer that cannot be built; with [`Models::Real`], a client that cannot be built, an endpoint
    /// whose preflight fails, or a `max_cost` for a model without a price.
    pub fn open(config: &RunConfig, models: Models) -> Result<Self> {
        let tokenizer = Arc::new(config.tokenizer.build()?);
        let (llm, judge) = match models {
            Models::Real { max_cost } => {
                let budget = max_cost.map(Budget::new);
                let prices = config.prices();
                let client = |c: &crate::llm::openai::OpenAiConfig,
                              price: Option<crate::llm::pricing::Price>,
                              role: &str|
                 -> Result<OpenAiLlm> {
                    if budget.is_some() && price.is_none() {
                        return Err(Error::Config(format!(
                            "--max-cost needs the price of the {role} model '{}': add it to [pricing.models] \
                             in the config",
                            c.model
                        )));
                    }
                    let client = OpenAiLlm::new(c.clone())?
                        .with_tokenizer(Arc::clone(&tokenizer))
                        .with_budget(price, budget.clone());
                    // A client whose cache may answer every call checks the endpoint before its first request
                    // the cache cannot answer (and sends nothing when there is none).
                    if !client.cache_has_answers() {
                        client.preflight_once()?;
                    }
                    Ok(client)
                };
                let llm = config
                    .llm
                    .as_ref()
                    .map(|l| client(l, prices.strategy, "strategies'"))
                    .transpose()?;
                let judge = config
                    .judge
                    .as_ref()
                    .map(|j| {
                        client(j, prices.judge, "judge's")
                            .map(|c| c.with_schema("grades", crate::llm::judge::schema()))
                    })
                    .transpose()?;
                (llm, judge)
            }
            Models::MockOnly => (None, None),
        };
        Ok(Self {
            // The mock stands in for the strategies' model the config names (none: each episode's own, which
            // the run's writer labels its calls with).
            mock: MockLlm::new(
                MockConfig {
                    model: config.strategy_model().map(str::to_owned),
                    ..config.mock.clone()
                },
                Arc::clone(&tokenizer),
            ),
            // The stand-in is a mock of its own so that its calls are named as such in llm_calls.jsonl.
            stand_in: MockLlm::new(
                MockConfig {
                    model: Some(crate::llm::judge::STAND_IN_MODEL.to_owned()),
                    ..config.mock.clone()
                },
                Arc::clone(&tokenizer),
            ),
            tokenizer,
            llm,
            judge,
            context_window: config.context_window,
            defaults: config.model_defaults(),
            unrecorded: config.unrecorded.is_keep(),
        })
    }

    /// The tokenizer.
    #[must_use]
    pub fn tokenizer(&self) -> &Arc<Tokenizer> {
        &self.tokenizer
    }

    /// The agent's LLM: the configured model, else the mock.
    #[must_use]
    pub fn llm(&self) -> &dyn Llm {
        match &self.llm {
            Some(l) => l,
            None => &self.mock,
        }
    }

    /// The judge: the configured model, else the mock's stand-in.
    #[must_use]
    pub fn judge(&self) -> &dyn Llm {
        match &self.judge {
            Some(j) => j,
            None => &self.stand_in,
        }
    }

    /// The mock.
    #[must_use]
    pub fn mock(&self) -> &MockLlm {
        &self.mock
    }

    /// The mock's stand-in judge.
    #[must_use]
    pub fn stand_in(&self) -> &MockLlm {
        &self.stand_in
    }

    /// The configured clients, when there are (what they did, for the console).
    #[must_use]
    pub fn clients(&self) -> (Option<&OpenAiLlm>, Option<&OpenAiLlm>) {
        (self.llm.as_ref(), self.judge.as_ref())
    }

    /// A replayer answered by the session's LLM and judge.
    #[must_use]
    pub fn replayer(&self) -> Replayer<'_> {
        self.replayer_with(self.llm(), self.judge())
    }

    /// How the session takes each episode's model, price and window.
    #[must_use]
    pub fn defaults(&self) -> &crate::llm::pricing::Defaults {
        &self.defaults
    }

    /// A replayer with the session's tokenizer, windows (each episode's model's, or `--window`) and unrecorded
    /// context, answered by `llm` and `judge` (a run's recorded calls, a wrapper that counts them).
    #[must_use]
    pub fn replayer_with<'a>(&'a self, llm: &'a dyn Llm, judge: &'a dyn Llm) -> Replayer<'a> {
        Replayer::new(Arc::clone(&self.tokenizer), llm, self.context_window)
            .with_windows(&self.defaults)
            .with_judge(judge)
            .with_unrecorded(self.unrecorded)
    }
}
