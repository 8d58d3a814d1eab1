//! Threshold sweeps: a grid over strategy parameters, run as one comparison, with a recommendation.
//!
//! A grid is a base strategy configuration and, for some of its parameters (JSON pointers into the
//! configuration, such as `threshold` or `stages/0/keep_last`), the values to try. Every combination becomes a
//! named strategy of one run, so the grid replays in parallel on the same episodes. The recommendation is the
//! cheapest setting whose retention at need is at least the target (the most saving one when prices are unknown).

pub mod export;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::report::recommend::Recommendation;

use crate::error::{Error, Result};
use crate::metrics::series::SweepPoint;
use crate::report::ExportManager;
use crate::run::{self, Progress, RunConfig};
use crate::strategy::{NamedStrategy, StrategyConfig};
use export::{SweepCharts, SweepCsv, SweepInfo, SweepMd};

fn default_min_retention() -> f64 {
    0.9
}

/// One family of settings: a base configuration and the values to try for some of its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    /// Family name, the prefix of every point's name.
    pub name: String,
    /// The base strategy configuration.
    pub base: Value,
    /// Parameter (a JSON pointer into `base`, without the leading `/`) → values to try.
    pub params: BTreeMap<String, Vec<Value>>,
}

/// A sweep: grids and the retention target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepConfig {
    /// The lowest acceptable retention at need, in [0, 1].
    #[serde(default = "default_min_retention")]
    pub min_retention: f64,
    /// The grids.
    #[serde(rename = "grid")]
    pub grids: Vec<Grid>,
}

/// The built-in sweep (`configs/sweep.toml`).
pub const BUILTIN: &str = include_str!("../../configs/sweep.toml");

/// One point of a grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The grid's name.
    pub grid: String,
    /// The parameter values of this point.
    pub values: Vec<(String, Value)>,
    /// The strategy.
    pub strategy: NamedStrategy,
}

fn set(target: &mut Value, pointer: &str, value: Value) -> Result<()> {
    let mut cur = target;
    let parts: Vec<&str> = pointer.split('/').filter(|p| !p.is_empty()).collect();
    let Some((last, path)) = parts.split_last() else {
        return Err(Error::Config("a sweep parameter has an empty name".into()));
    };
    for p in path {
        cur = match cur {
            Value::Object(o) => o
                .entry((*p).to_owned())
                .or_insert_with(|| Value::Object(serde_json::Map::new())),
            Value::Array(a) => p
                .parse::<usize>()
                .ok()
                .and_then(|i| a.get_mut(i))
                .ok_or_else(|| {
                    Error::Config(format!("sweep parameter '{pointer}': no element '{p}'"))
                })?,
            _ => {
                return Err(Error::Config(format!(
                    "sweep parameter '{pointer}': '{p}' is not an object or a list"
                )))
            }
        };
    }
    match cur {
        Value::Object(o) => {
            o.insert((*last).to_owned(), value);
            Ok(())
        }
        _ => Err(Error::Config(format!(
            "sweep parameter '{pointer}' does not name a field"
        ))),
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A grid's base configuration: `base` itself, or where it is `{ preset = "NAME" }` the configuration of that
/// peer preset (`ctxbench strategies`), so that a sweep can tune a preset's thresholds.
fn base_config(g: &Grid) -> Result<Value> {
    let Some(name) = g
        .base
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("preset"))
    else {
        return Ok(g.base.clone());
    };
    let preset = name
        .as_str()
        .and_then(crate::strategy::presets::find)
        .ok_or_else(|| {
            Error::Config(format!(
                "grid '{}': no preset named {name} (ctxbench strategies lists them)",
                g.name
            ))
        })?;
    serde_json::to_value(&preset.config)
        .map_err(|e| Error::Config(format!("grid '{}': {e}", g.name)))
}

impl SweepConfig {
    /// Parses TOML.
    ///
    /// # Errors
    /// Names the TOML problem.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let c: Self =
            toml::from_str(text).map_err(|e| Error::Config(format!("'{origin}': {e}")))?;
        if !(0.0..=1.0).contains(&c.min_retention) {
            return Err(Error::Config(format!(
                "min_retention {} is outside [0, 1]",
                c.min_retention
            )));
        }
        if c.grids.is_empty() {
            return Err(Error::Config(format!("'{origin}' has no [[grid]]")));
        }
        Ok(c)
    }

    /// Every point of every grid, in grid order and then in the order of the parameters' values.
    ///
    /// # Errors
    /// A parameter that does not name a field, or a combination that is not a valid strategy.
    pub fn points(&self) -> Result<Vec<Point>> {
        let mut out = Vec::new();
        for g in &self.grids {
            let mut combos: Vec<Vec<(String, Value)>> = vec![Vec::new()];
            for (param, values) in &g.params {
                if values.is_empty() {
                    return Err(Error::Config(format!(
                        "grid '{}': parameter '{param}' has no value",
                        g.name
                    )));
                }
                combos = combos
                    .into_iter()
                    .flat_map(|c| {
                        values.iter().map(move |v| {
                            let mut c = c.clone();
                            c.push((param.clone(), v.clone()));
                            c
                        })
                    })
                    .collect();
            }
            let base = base_config(g)?;
            for combo in combos {
                let mut config = base.clone();
                for (p, v) in &combo {
                    set(&mut config, p, v.clone())?;
                }
                let parsed: StrategyConfig = serde_json::from_value(config)
                    .map_err(|e| Error::Config(format!("grid '{}': {e}", g.name)))?;
                let name =
                    std::iter::once(g.name.clone())
                        .chain(combo.iter().map(|(p, v)| {
                            format!("{}={}", p.rsplit('/').next().unwrap_or(p), show(v))
                        }))
                        .collect::<Vec<_>>()
                        .join(" ");
                out.push(Point {
                    grid: g.name.clone(),
                    values: combo,
                    strategy: NamedStrategy::new(name, parsed),
                });
            }
        }
        Ok(out)
    }
}

/// Runs a sweep and writes the run files plus `sweep.csv`, `sweep.md` and `charts/sweep_*.svg` under `out`.
///
/// # Errors
/// As [`run::run`], or an invalid sweep.
pub fn run(
    base: &RunConfig,
    sweep: &SweepConfig,
    dataset: &Path,
    out: &Path,
    name: &str,
    progress: &dyn Progress,
) -> Result<(run::RunOutcome, Recommendation)> {
    let points = sweep.points()?;
    let mut config = base.clone();
    // The run's own report recommends by the sweep's target.
    config.min_retention = sweep.min_retention;
    config.strategies = std::iter::once(NamedStrategy::new("none", StrategyConfig::None))
        .chain(points.iter().map(|p| p.strategy.clone()))
        .collect();
    let outcome = run::run(
        &config,
        dataset,
        out,
        name,
        progress,
        &run::RunOptions::default(),
    )?;
    // The run's analysis recommended by the sweep's target already.
    let recommendation =
        outcome.report.recommendation.clone().ok_or_else(|| {
            Error::Config("the sweep compared no setting with the baseline".into())
        })?;
    let info = Arc::new(SweepInfo {
        name: name.to_owned(),
        points: points
            .iter()
            .map(|p| SweepPoint {
                grid: p.grid.clone(),
                values: p.values.iter().map(|(k, v)| (k.clone(), show(v))).collect(),
                strategy: p.strategy.name.clone(),
            })
            .collect(),
        min_retention: sweep.min_retention,
        grids: sweep.grids.len(),
        recommendation: recommendation.clone(),
    });
    ExportManager::new(out)
        .with(Box::new(SweepCsv(Arc::clone(&info))))
        .with(Box::new(SweepMd(Arc::clone(&info))))
        .with(Box::new(SweepCharts(info)))
        .write_everything(&outcome.report)?;
    Ok((outcome, recommendation))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_grid_expands_into_valid_named_strategies() {
        let s = SweepConfig::parse(BUILTIN, "builtin").unwrap();
        let points = s.points().unwrap();
        assert!(points.len() >= 15, "{}", points.len());
        let names: std::collections::HashSet<&str> =
            points.iter().map(|p| p.strategy.name.as_str()).collect();
        assert_eq!(names.len(), points.len(), "names are unique");
        for p in &points {
            p.strategy.config.validate().unwrap();
        }
    }

    #[test]
    fn nested_pointer_sets_a_stage_parameter() {
        let s = SweepConfig::parse(
            "[[grid]]\nname = \"p\"\nbase = { type = \"pipeline\", stages = [{ type = \"compaction\" }] }\n[grid.params]\n\"stages/0/keep_last\" = [1, 7]\n",
            "t",
        )
        .unwrap();
        let points = s.points().unwrap();
        assert_eq!(points[1].strategy.name, "p keep_last=7");
        let StrategyConfig::Pipeline(p) = &points[1].strategy.config else {
            panic!()
        };
        assert!(matches!(&p.stages[0], StrategyConfig::Compaction(c) if c.keep_last == 7));
    }

    #[test]
    fn bad_parameter_is_named() {
        let s = SweepConfig::parse("[[grid]]\nname = \"w\"\nbase = { type = \"sliding_window\" }\n[grid.params]\nmax_tokenz = [1]\n", "t").unwrap();
        assert!(s.points().unwrap_err().to_string().contains("max_tokenz"));
    }

    #[test]
    fn a_grid_tunes_a_preset_by_name() {
        let c = SweepConfig::parse(
            "[[grid]]\nname = \"cc\"\nbase = { preset = \"claude_code_auto_compact\" }\n[grid.params]\nreserve_tokens = [20000, 50000]\n",
            "t",
        )
        .unwrap();
        let points = c.points().unwrap();
        let preset = crate::strategy::presets::find("claude_code_auto_compact").unwrap();
        let mut expected = serde_json::to_value(&preset.config).unwrap();
        expected["reserve_tokens"] = 50000.into();
        assert_eq!(points.len(), 2);
        assert_eq!(points[1].strategy.name, "cc reserve_tokens=50000");
        assert_eq!(
            serde_json::to_value(&points[1].strategy.config).unwrap(),
            expected
        );
        let bad = SweepConfig::parse(
            "[[grid]]\nname = \"x\"\nbase = { preset = \"nope\" }\n[grid.params]\nthreshold = [0.5]\n",
            "t",
        )
        .unwrap();
        assert!(bad
            .points()
            .unwrap_err()
            .to_string()
            .contains("no preset named"));
    }
}
