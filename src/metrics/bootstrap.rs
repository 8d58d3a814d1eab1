//! Paired bootstrap over episodes, in constant memory: 95% intervals for the headline figures and for the
//! difference between two strategies.
//!
//! ## Method
//! A Poisson bootstrap (Hanley & MacGibbon 2006; Chamandy et al. 2012): each of [`REPLICATES`] replicates
//! weighs every episode by an independent Poisson(1) draw — the large-sample limit of resampling episodes
//! with replacement — so each replicate's sums grow as episodes finish, in constant memory, in any number of
//! passes. An episode's weights depend only on its id and [`SEED`], so a strategy and the baseline, and two
//! strategies, see the same resampled episodes (the bootstrap is paired), and runs with the mock LLM stay
//! byte-identical. A figure's interval is the 2.5th and 97.5th percentiles of its value over the replicates
//! (the percentile method). A replicate whose figure is undefined (its weights left out every episode that
//! has needs, say) is left out of that figure's percentiles.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Bootstrap replicates.
pub const REPLICATES: usize = 1000;

/// The seed of the episode weights.
pub const SEED: u64 = 0x0c7b_e7c4_2028;

/// P(Poisson(1) ≤ k) for k = 0…11 (beyond, 1).
const POISSON_CDF: [f64; 12] = [
    0.36787944117144233,
    0.7357588823428847,
    0.9196986029286058,
    0.9810118431238463,
    0.9963401531726563,
    0.9994058151824183,
    0.999916758850712,
    0.9999897508033253,
    0.999998874797402,
    0.9999998885745216,
    0.9999999899522336,
    0.9999999991683892,
];

/// SplitMix64's output function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The Poisson(1) weight of each replicate for the episode `id`.
#[must_use]
pub fn weights(id: &str) -> Vec<u8> {
    let base = xxh3_64_with_seed(id.as_bytes(), SEED);
    (0..REPLICATES as u64)
        .map(|b| {
            let bits = mix(base ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 11;
            #[allow(clippy::cast_precision_loss)]
            let u = bits as f64 / (1u64 << 53) as f64;
            let k = POISSON_CDF.iter().position(|&c| u < c).unwrap_or(12);
            u8::try_from(k).unwrap_or(u8::MAX)
        })
        .collect()
}

/// The 95% percentile interval of `values` (undefined replicates left out), `None` when fewer than half the
/// replicates are defined.
#[must_use]
pub fn interval(values: impl IntoIterator<Item = Option<f64>>) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = values
        .into_iter()
        .flatten()
        .filter(|x| x.is_finite())
        .collect();
    if v.len() * 2 < REPLICATES {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let i = ((v.len() - 1) as f64 * q).round() as usize;
        v[i]
    };
    Some((at(0.025), at(0.975)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_poisson_and_fixed_by_the_id() {
        let w = weights("episode-1");
        assert_eq!(w.len(), REPLICATES);
        assert_eq!(w, weights("episode-1"));
        assert_ne!(w, weights("episode-2"));
        #[allow(clippy::cast_precision_loss)]
        let mean = w.iter().map(|&k| f64::from(k)).sum::<f64>() / REPLICATES as f64;
        assert!((mean - 1.0).abs() < 0.1, "mean weight {mean}");
        let zeros = w.iter().filter(|&&k| k == 0).count();
        // P(0) = 0.368: within 5 standard deviations of 368 out of 1000.
        assert!((290..=445).contains(&zeros), "{zeros} zero weights");
        // The stream itself is pinned: a changed generator changes every published interval.
        assert_eq!(
            w[..24],
            [1, 0, 1, 1, 0, 0, 3, 0, 0, 0, 0, 1, 1, 1, 0, 4, 0, 2, 1, 2, 0, 2, 2, 0]
        );
        assert_eq!(
            (zeros, w.iter().map(|&k| u32::from(k)).sum::<u32>()),
            (372, 975)
        );
    }

    /// SplitMix64's published first output for seed 0: mix(0 + the golden gamma).
    #[test]
    fn mix_is_splitmix64() {
        assert_eq!(mix(0x9E37_79B9_7F4A_7C15), 0xE220_A839_7B1D_CDAF);
        assert_eq!(
            mix(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(2)),
            0x6E78_9E6A_A1B9_65F4
        );
    }

    #[test]
    fn interval_is_the_percentiles() {
        #[allow(clippy::cast_precision_loss)]
        let values: Vec<Option<f64>> = (0..REPLICATES).map(|i| Some(i as f64)).collect();
        assert_eq!(interval(values), Some((25.0, 974.0)));
        // Undefined replicates are left out; too few defined gives no interval.
        let mut half: Vec<Option<f64>> = vec![None; REPLICATES];
        for (i, v) in half.iter_mut().enumerate().take(REPLICATES / 2) {
            #[allow(clippy::cast_precision_loss)]
            let x = i as f64;
            *v = Some(x);
        }
        assert_eq!(interval(half.clone()), Some((12.0, 487.0)));
        half[0] = None;
        assert_eq!(interval(half), None);
    }
}
