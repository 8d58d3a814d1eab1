//! What a sweep writes beside its run: `sweep.csv` (one row per setting), `sweep.md` (the recommendation and a
//! table) and `charts/sweep_<grid>_<parameter>.svg`, each an exporter of the run's metrics.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::metrics::series::SweepPoint;
use crate::metrics::{fields as field, StrategyMetrics};
use crate::report::recommend::{Recommendation, Standing};
use crate::report::{pct, Exporter, RunReport};

/// What the sweep's files show besides the run's metrics.
pub struct SweepInfo {
    /// The run's name.
    pub name: String,
    /// Every setting, in grid order.
    pub points: Vec<SweepPoint>,
    /// The retention target.
    pub min_retention: f64,
    /// How many grids the settings come from.
    pub grids: usize,
    /// The recommendation.
    pub recommendation: Recommendation,
}

impl SweepInfo {
    /// A setting's verdict in the recommendation.
    #[must_use]
    pub fn verdict(&self, strategy: &str) -> Option<&crate::report::recommend::Verdict> {
        self.recommendation
            .verdicts
            .iter()
            .find(|v| v.strategy == strategy)
    }

    /// A setting's standing in the recommendation.
    #[must_use]
    pub fn standing(&self, strategy: &str) -> Option<Standing> {
        self.verdict(strategy)
            .map(crate::report::recommend::Verdict::standing)
    }

    /// Each setting with its metrics in `run`.
    fn rows<'a>(
        &'a self,
        run: &'a RunReport,
    ) -> Result<Vec<(&'a SweepPoint, &'a StrategyMetrics)>> {
        let metrics: BTreeMap<&str, &StrategyMetrics> = run
            .strategies
            .iter()
            .map(|s| (s.strategy.as_str(), s))
            .collect();
        self.points
            .iter()
            .map(|p| {
                metrics
                    .get(p.strategy.as_str())
                    .map(|m| (p, *m))
                    .ok_or_else(|| Error::Serialize {
                        what: "sweep",
                        message: format!("setting '{}' has no results", p.strategy),
                    })
            })
            .collect()
    }
}

/// `sweep.csv`: one row per setting, its parameters as `name=value` in one column for any grid shape, and
/// the analysis's verdict on it (`qualifies`: whether it could be picked — the target met where it acted, no
/// costlier than no reduction, nothing over the window, enough episodes and needs —, `verdict`: the reason's
/// label), never a figure compared with the target here.
pub struct SweepCsv(pub Arc<SweepInfo>);

impl Exporter for SweepCsv {
    fn file_name(&self) -> &'static str {
        "sweep.csv"
    }

    fn serialize(&self, run: &RunReport) -> Result<Vec<u8>> {
        let ser = |e: csv::Error| Error::Serialize {
            what: "sweep.csv",
            message: e.to_string(),
        };
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record([
            "grid",
            "strategy",
            "parameters",
            "savings",
            "cost_usd",
            "cost_savings",
            "retention_at_need",
            "mean_retention",
            "probe_accuracy",
            "strategy_calls",
            "qualifies",
            "verdict",
        ])
        .map_err(ser)?;
        let f = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v}"));
        for (p, m) in self.0.rows(run)? {
            let params: Vec<String> = p.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
            w.write_record([
                p.grid.clone(),
                p.strategy.clone(),
                params.join(";"),
                format!("{}", m.number(field::SAVINGS).unwrap_or(0.0)),
                f(m.number(field::COST_USD)),
                f(m.number(field::COST_SAVINGS)),
                f(m.number(field::RETENTION_AT_NEED)),
                f(m.number(field::MEAN_RETENTION)),
                f(m.number(field::PROBE_ACCURACY)),
                m.count(field::STRATEGY_CALLS)
                    .map_or_else(String::new, |n| n.to_string()),
                (self.0.standing(&m.strategy) == Some(Standing::Qualifies)).to_string(),
                self.0
                    .verdict(&m.strategy)
                    .map_or_else(String::new, |v| v.reason.label().to_owned()),
            ])
            .map_err(ser)?;
        }
        w.into_inner().map_err(|e| Error::Serialize {
            what: "sweep.csv",
            message: e.to_string(),
        })
    }
}

/// The sweep's charts: one SVG per grid parameter.
pub struct SweepCharts(pub Arc<SweepInfo>);

impl SweepCharts {
    fn charts(&self, run: &RunReport) -> Result<Vec<(String, String)>> {
        let metrics: BTreeMap<&str, &StrategyMetrics> = self
            .0
            .rows(run)?
            .into_iter()
            .map(|(p, m)| (p.strategy.as_str(), m))
            .collect();
        crate::report::charts::sweep_charts(&self.0.points, &metrics, self.0.min_retention)
    }
}

impl Exporter for SweepCharts {
    fn file_name(&self) -> &'static str {
        "charts"
    }

    fn serialize(&self, _: &RunReport) -> Result<Vec<u8>> {
        Ok(Vec::new())
    }

    fn files(&self, run: &RunReport) -> Result<Vec<(String, Vec<u8>)>> {
        Ok(self
            .charts(run)?
            .into_iter()
            .map(|(file, svg)| (format!("charts/{file}"), svg.into_bytes()))
            .collect())
    }
}

/// `sweep.md`: the recommendation, the charts and a table of every setting.
pub struct SweepMd(pub Arc<SweepInfo>);

impl Exporter for SweepMd {
    fn file_name(&self) -> &'static str {
        "sweep.md"
    }

    fn serialize(&self, run: &RunReport) -> Result<Vec<u8>> {
        let info = &*self.0;
        let mut md = format!(
            "# ctxbench sweep: {}\n\n## Recommendation\n\n{}\n\n",
            info.name, info.recommendation.text
        );
        let _ = writeln!(md, "Target: retention at need ≥ {}. {} settings in {} grids; the full comparison is in [report.md](report.md).\n", pct(Some(info.min_retention)), info.points.len(), info.grids);
        md.push_str("![retention against savings](charts/retention_vs_savings.svg)\n\n");
        for (file, _) in SweepCharts(Arc::clone(&self.0)).charts(run)? {
            let _ = writeln!(md, "![{file}](charts/{file})\n");
        }
        md.push_str("| setting | savings | cost | retention at need | qualifies |\n|---|---:|---:|---:|---|\n");
        for (p, m) in info.rows(run)? {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                p.strategy,
                pct(m.number(field::SAVINGS)),
                m.number(field::COST_USD)
                    .map_or_else(|| "unknown".into(), |c| format!("${c:.2}")),
                pct(m.number(field::RETENTION_AT_NEED)),
                match info.verdict(&m.strategy) {
                    Some(v) if v.standing() == Standing::Qualifies => "yes".to_owned(),
                    Some(v) => format!("no: {}", v.reason.label()),
                    None => "–".to_owned(),
                }
            );
        }
        Ok(md.into_bytes())
    }
}
