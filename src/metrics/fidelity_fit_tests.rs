//! By-hand tests of a format's reading of its fits ([`super::FormatFidelity::fit_clause`]).

use super::*;

/// A format's reading of its fits: k's range over the fits whose k is known (a one-call episode's k of 1
/// is not a tokenizers' ratio and stays out of it), the worst residual over all, how many are 0 by
/// construction; the block named as the importer names it only where every fit is one constant block.
#[test]
fn a_formats_fits_read_by_hand() {
    let episode = |fit: FitReading| Fidelity {
        has_usage: true,
        leaves_out: Some("the system prompt".into()),
        fit: Some(fit),
        ..Fidelity::default()
    };
    let mut f = FormatFidelity::default();
    f.add(&episode(FitReading {
        k: 1.5,
        worst: -0.002,
        constant: true,
        k_known: true,
        ..FitReading::default()
    }));
    f.add(&episode(FitReading {
        k: 1.0,
        constant: true,
        by_construction: true,
        ..FitReading::default()
    }));
    assert_eq!(
        f.fit_clause(),
        "; the ratio is 1 by construction where blocks were sized from the record: fitted, recorded ≈ U + \
         k × replayed (k 1.500) leaves at most -0.2% on a call of 2 episodes, 0 by construction on 1 (as \
         many parameters as calls)"
    );
    assert_eq!(f.unrecorded_name(), "the system prompt");
    f.add(&episode(FitReading {
        k: 2.0,
        worst: 0.05,
        flagged: true,
        k_known: true,
        ..FitReading::default()
    }));
    assert!(
        f.fit_clause().contains(
            "(k 1.500–2.000) leaves at most +5.0% on a call of 3 episodes, past \
             3% on 1 (flagged)"
        ),
        "{}",
        f.fit_clause()
    );
    assert_eq!(
        f.unrecorded_name(),
        "not one constant block on 1 of 3 episodes: the system prompt, and what changed or was miscounted"
    );
    let mut unknown = FormatFidelity::default();
    unknown.add(&episode(FitReading {
        k: 1.0,
        constant: true,
        by_construction: true,
        ..FitReading::default()
    }));
    assert!(
        unknown.fit_clause().contains("(k not fitted)"),
        "{}",
        unknown.fit_clause()
    );
}
