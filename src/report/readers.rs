//! Every reader of strategy fields — the report's tables and charts, the console, the recommendation, the
//! sweep's files — rendered against the standard catalog's fields. In unit tests a field a reader asks for and
//! the results lack panics ([`crate::metrics::StrategyMetrics::get`]) instead of printing "–", so a key naming
//! no field of the catalog fails here as well as in `metrics::fields`.

use std::path::Path;
use std::sync::Arc;

use super::{console, reading, rebuild, table, Exporter, RunReport};
use crate::metrics::series::SweepPoint;
use crate::metrics::{Catalog, StrategyMetrics};
use crate::sweep::export::{SweepCsv, SweepInfo, SweepMd};

/// The bundled example run, its strategies' results made again by the standard catalog: its fields, and no
/// other, with the example's figures.
fn example() -> (RunReport, Catalog) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/example");
    let mut run = rebuild::load(&dir).expect("reports/example is a run");
    let catalog = Catalog::standard();
    let totals = catalog.totals();
    let from_file = std::mem::take(&mut run.strategies);
    run.strategies = from_file
        .iter()
        .map(|s| {
            // The catalog's fields, with the figures the example has for them.
            let mut made: StrategyMetrics = catalog.strategy(&s.strategy, &totals);
            for (name, value) in &s.values {
                if let Some(v) = made.values.get_mut(name) {
                    v.clone_from(value);
                }
            }
            made
        })
        .collect();
    (run, catalog)
}

#[test]
fn every_reader_asks_for_fields_the_catalog_computes() {
    let (run, catalog) = example();
    assert!(run.strategies.len() > 1);
    // Every field of the made results is one the catalog declares, and nothing else.
    let fields: Vec<&str> = catalog
        .strategy_fields()
        .map(|f| f.column.name.as_str())
        .collect();
    for s in &run.strategies {
        assert!(s
            .values
            .keys()
            .map(String::as_str)
            .eq(fields.iter().copied()));
    }
    // The readers: each panics on a field the results lack.
    assert!(!table::tables(&run).is_empty());
    let _ = reading::reading(&run);
    let _ = console::summary(&table::rows(&run));
    for exporter in [
        &super::markdown::MarkdownReport as &dyn Exporter,
        &super::html::HtmlReport,
    ] {
        assert!(!exporter.serialize(&run).unwrap().is_empty());
    }
    assert!(!super::charts::render(&run, &run.charts).unwrap().is_empty());
    let info = Arc::new(SweepInfo {
        name: "readers".into(),
        points: run
            .strategies
            .iter()
            .enumerate()
            .map(|(i, s)| SweepPoint {
                grid: "g".into(),
                values: vec![("x".into(), i.to_string())],
                strategy: s.strategy.clone(),
            })
            .collect(),
        min_retention: 0.9,
        grids: 1,
        recommendation: run.recommendation.clone().expect("the example recommends"),
    });
    for exporter in [
        &SweepCsv(Arc::clone(&info)) as &dyn Exporter,
        &SweepMd(Arc::clone(&info)),
    ] {
        assert!(!exporter.serialize(&run).unwrap().is_empty());
    }
}

/// A key the results lack — what a field renamed in its metric, or a misspelt key, would be — panics in a
/// reader under test, naming the field.
#[test]
#[should_panic(expected = "has no field `savings`")]
fn a_field_the_results_lack_panics_in_a_reader() {
    let (mut run, _) = example();
    for s in &mut run.strategies {
        s.values.remove("savings");
    }
    let _ = console::summary(&table::rows(&run));
}

/// `ctxbench report` reads these columns of `steps.csv` back by name (`rebuild::StepIn`).
#[test]
fn the_step_columns_the_rebuild_reads_exist() {
    let catalog = Catalog::standard();
    for name in [
        "tokens_sent",
        "findings_introduced",
        "findings_retained",
        "cost_usd",
    ] {
        assert!(
            catalog.step_columns().iter().any(|c| c.name == name),
            "steps.csv has no column {name}"
        );
    }
}
