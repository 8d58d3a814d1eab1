//! The 95% interval of a share of (finding, need) pairs clustered by episode, in constant memory.
//!
//! ## Method (docs/intervals.md)
//! With `k` episodes that have pairs, `N` pairs of which `Y` kept, and the pooled share `p = Y / N`:
//! - the **design effect** is the cluster-robust variance of `p` (the ratio estimator's linearization with the
//!   small-sample factor k / (k − 1): k / (k − 1) · Σ (yᵢ − p·nᵢ)² / N²) over the binomial one (p(1 − p) / N),
//!   never below 1;
//! - where fewer than two episodes lost a pair, or fewer than two kept one, the data cannot tell how losses
//!   cluster, and each episode counts as one pair (the design effect is N / k): with every need kept on 10
//!   episodes the interval reaches down to 66%, not to 100%;
//! - the interval is Wilson's score interval at `p` on the `N / deff` effective pairs, with Student's t at k − 1
//!   degrees of freedom in place of the normal 1.96 (few episodes estimate the design effect poorly);
//! - with fewer than two episodes there is none: one episode says nothing of the next.
//!
//! `super::coverage` simulates clustered retention and checks how often the interval holds the true share.

/// Student's t at the 97.5th percentile for 1 to 30 degrees of freedom.
const T975: [f64; 30] = [
    12.706_204_736,
    4.302_652_730,
    3.182_446_305,
    2.776_445_105,
    2.570_581_836,
    2.446_911_851,
    2.364_624_252,
    2.306_004_135,
    2.262_157_163,
    2.228_138_852,
    2.200_985_160,
    2.178_812_830,
    2.160_368_656,
    2.144_786_688,
    2.131_449_546,
    2.119_905_299,
    2.109_815_578,
    2.100_922_040,
    2.093_024_054,
    2.085_963_447,
    2.079_613_845,
    2.073_873_068,
    2.068_657_610,
    2.063_898_562,
    2.059_538_553,
    2.055_529_439,
    2.051_830_516,
    2.048_407_142,
    2.045_229_642,
    2.042_272_456,
];

/// The normal distribution's 97.5th percentile.
const Z975: f64 = 1.959_963_984_540_054;

/// Student's t at the 97.5th percentile for `df` degrees of freedom: exact to 9 digits up to 30, the
/// Cornish–Fisher expansion beyond (within 1.8·10⁻⁶ of the exact value at 31, 1.3·10⁻⁷ at 60, 10⁻⁸ at 120).
#[must_use]
pub fn t975(df: u64) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T975[usize::try_from(df - 1).expect("at most 30")],
        _ => {
            #[allow(clippy::cast_precision_loss)]
            let n = df as f64;
            let z = Z975;
            let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
            z + (z3 + z) / (4.0 * n)
                + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
                + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n * n * n)
        }
    }
}

/// Wilson's score interval of a share `p` over `n` (effective) trials at the critical value `z`, within [0, 1].
#[must_use]
pub fn wilson(p: f64, n: f64, z: f64) -> (f64, f64) {
    let z2 = z * z;
    let d = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / d;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / d;
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// The running sums of a share of pairs over episodes (the clusters) that its interval needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterSums {
    /// Episodes with at least one pair.
    episodes: u64,
    /// Of those, the episodes that lost a pair, and those that kept one.
    lossy: u64,
    keeping: u64,
    /// Σ yᵢ (kept), Σ nᵢ (pairs), Σ yᵢ², Σ nᵢ², Σ yᵢ·nᵢ.
    kept: u128,
    pairs: u128,
    kept_sq: u128,
    pairs_sq: u128,
    cross: u128,
    /// A value was missing: no interval.
    broken: bool,
}

impl ClusterSums {
    /// Adds one episode: `kept` of its `pairs` (`None` for a value missing, which leaves no interval). An
    /// episode without pairs adds nothing.
    pub fn add(&mut self, kept: Option<u64>, pairs: Option<u64>) {
        let (Some(y), Some(n)) = (kept, pairs) else {
            self.broken = true;
            return;
        };
        if n == 0 {
            return;
        }
        let (y, n) = (u128::from(y.min(n)), u128::from(n));
        self.episodes += 1;
        self.lossy += u64::from(y < n);
        self.keeping += u64::from(y > 0);
        self.kept += y;
        self.pairs += n;
        self.kept_sq += y * y;
        self.pairs_sq += n * n;
        self.cross += y * n;
    }

    /// Episodes with at least one pair: the clusters.
    #[must_use]
    pub fn episodes(&self) -> u64 {
        self.episodes
    }

    /// The effective number of pairs, `N / deff` (see the module docs); `None` with fewer than two episodes.
    #[must_use]
    pub fn effective_pairs(&self) -> Option<f64> {
        if self.broken || self.episodes < 2 {
            return None;
        }
        #[allow(clippy::cast_precision_loss)]
        let (k, n) = (self.episodes as f64, self.pairs as f64);
        if self.lossy < 2 || self.keeping < 2 {
            return Some(k);
        }
        // N² · Σ (yᵢ − p·nᵢ)² = N²·Σy² − 2·Y·N·Σyn + Y²·Σn², exact in integers (never below 0).
        let (y, big_n) = (self.kept as i128, self.pairs as i128);
        let scaled = big_n * big_n * self.kept_sq as i128 - 2 * y * big_n * self.cross as i128
            + y * y * self.pairs_sq as i128;
        #[allow(clippy::cast_precision_loss)]
        let (scaled, y) = (scaled as f64, self.kept as f64);
        // deff = [k/(k−1) · scaled / N⁴] / [Y(N − Y) / N³].
        let deff = k / (k - 1.0) * scaled / (n * y * (n - y));
        Some(n / deff.max(1.0))
    }

    /// The 95% interval of the pooled share (see the module docs); `None` with fewer than two episodes.
    #[must_use]
    pub fn interval(&self) -> Option<(f64, f64)> {
        let effective = self.effective_pairs()?;
        #[allow(clippy::cast_precision_loss)]
        let p = self.kept as f64 / self.pairs as f64;
        Some(wilson(p, effective, t975(self.episodes - 1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(episodes: &[(u64, u64)]) -> ClusterSums {
        let mut s = ClusterSums::default();
        for &(y, n) in episodes {
            s.add(Some(y), Some(n));
        }
        s
    }

    fn close(a: (f64, f64), b: (f64, f64)) -> bool {
        (a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9
    }

    /// Student's t: the table's ends, and the expansion past it against the exact quantiles (mpmath's inverse
    /// of the regularized incomplete beta function, to 12 digits), each within the expansion's own error there
    /// (a changed term of it moves df 31 by 5·10⁻⁶ or more, df 120 by 9·10⁻⁸ or more), approaching 1.96.
    #[test]
    fn t_quantiles() {
        assert!((t975(1) - 12.706_204_736).abs() < 1e-9);
        assert!((t975(9) - 2.262_157_163).abs() < 1e-9);
        assert!((t975(30) - 2.042_272_456).abs() < 1e-9);
        for (df, t, within) in [
            (31, 2.039_513_446_40, 2e-6),
            (32, 2.036_933_343_46, 2e-6),
            (40, 2.021_075_390_31, 7e-7),
            (60, 2.000_297_822_01, 1.5e-7),
            (120, 1.979_930_405_08, 1e-8),
            (1000, 1.962_339_080_83, 1e-11),
        ] {
            let got = t975(df);
            assert!(
                (got - t).abs() < within && got < t,
                "df {df}: {got} against {t}"
            );
        }
        assert!((t975(1_000_000) - Z975).abs() < 1e-5);
        assert!(t975(0).is_infinite());
        assert!(t975(31) < t975(30) && t975(40) < t975(31));
    }

    /// Wilson's interval by hand: 8 of 10 at z = 1.96 is [0.4902, 0.9433] (Wilson 1927, as tabulated by
    /// Newcombe 1998, case 1: 81 of 263 is [0.2553, 0.3662]); at 0 and 1 it keeps a width.
    #[test]
    fn wilson_by_hand() {
        let (lo, hi) = wilson(81.0 / 263.0, 263.0, 1.96);
        assert!(
            (lo - 0.2553).abs() < 5e-5 && (hi - 0.3662).abs() < 5e-5,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson(1.0, 10.0, 1.96);
        assert!((lo - 10.0 / (10.0 + 1.96 * 1.96)).abs() < 1e-12 && hi == 1.0);
        let (lo, hi) = wilson(0.0, 10.0, 1.96);
        assert!(lo == 0.0 && (hi - 1.96 * 1.96 / (10.0 + 1.96 * 1.96)).abs() < 1e-12);
    }

    /// One episode has no interval; every need kept (or every one lost) on k episodes counts each episode
    /// as one pair, whatever the pairs; so does a single episode that lost any.
    #[test]
    fn an_interval_never_claims_what_the_episodes_cannot_tell() {
        assert_eq!(sums(&[(27, 27)]).interval(), None);
        assert_eq!(sums(&[(0, 5), (0, 0)]).interval(), None);
        let all_kept = sums(&[(10, 10); 10]);
        assert_eq!(all_kept.effective_pairs(), Some(10.0));
        let (lo, hi) = all_kept.interval().unwrap();
        let t = t975(9);
        assert!(
            (lo - 10.0 / (10.0 + t * t)).abs() < 1e-12 && hi == 1.0,
            "{lo}"
        );
        assert!(lo < 0.67 && lo > 0.65, "{lo}");
        let all_lost = sums(&[(0, 3), (0, 2), (0, 7)]);
        assert_eq!(all_lost.effective_pairs(), Some(3.0));
        assert_eq!(all_lost.interval().unwrap().0, 0.0);
        assert!(all_lost.interval().unwrap().1 > 0.5);
        // One episode lost one need of its ten: still each episode one pair, the interval no narrower.
        let mut one_lost = [(10, 10); 10];
        one_lost[3] = (9, 10);
        assert_eq!(sums(&one_lost).effective_pairs(), Some(10.0));
        // Episodes without pairs add nothing.
        assert_eq!(sums(&[(10, 10), (0, 0), (10, 10)]).episodes(), 2);
    }

    /// The design effect's thresholds, by hand: two episodes are enough for an interval, and two episodes that
    /// lost a pair (or two that kept one) are enough to estimate how losses cluster. 10/10, 9/10, 5/10 (p = 0.8;
    /// residuals 2, 1, −3: Σ = 14): clustered variance 3/2 · 14 / 900, binomial 0.16 / 30, deff 4.375 and
    /// 6.857 effective pairs, not one per episode; 0/10, 1/10, 5/10 (p = 0.2, residuals −2, −1, 3) the same;
    /// 9/10, 5/10 (p = 0.7, residuals ±2): 2 · 8 / 400 over 0.21 / 20, 5.25 effective pairs.
    #[test]
    fn two_episodes_suffice_for_an_interval_and_for_the_design_effect() {
        let near = |s: ClusterSums, want: f64| {
            let got = s.effective_pairs().expect("an interval");
            assert!((got - want).abs() < 1e-9, "{got} against {want}");
        };
        let three = 30.0 / ((1.5 * 14.0 / 900.0) / (0.16 / 30.0));
        near(sums(&[(10, 10), (9, 10), (5, 10)]), three);
        near(sums(&[(0, 10), (1, 10), (5, 10)]), three);
        near(
            sums(&[(9, 10), (5, 10)]),
            20.0 / ((2.0 * 8.0 / 400.0) / (0.21 / 20.0)),
        );
        assert!(sums(&[(9, 10), (5, 10)]).interval().is_some());
    }

    /// The design effect by hand: four episodes of 10 pairs keeping 9, 9, 5 and 5 (p = 0.7). Residuals
    /// 2, 2, −2, −2: Σ = 16; clustered variance 4/3 · 16 / 1600 = 1/75; binomial 0.21 / 40 = 0.00525;
    /// deff = 2.5397 and 15.75 effective pairs.
    #[test]
    fn the_design_effect_by_hand() {
        let s = sums(&[(9, 10), (9, 10), (5, 10), (5, 10)]);
        let deff = (4.0 / 3.0 * 16.0 / 1600.0) / (0.7 * 0.3 / 40.0);
        let n = s.effective_pairs().unwrap();
        assert!((n - 40.0 / deff).abs() < 1e-9, "{n}");
        assert!(close(
            s.interval().unwrap(),
            wilson(0.7, 40.0 / deff, t975(3))
        ));
        // Episodes that share one share have no between-episode variance: the design effect is 1, never less.
        let even = sums(&[(5, 10), (5, 10), (1, 2), (1, 2)]);
        assert_eq!(even.effective_pairs(), Some(24.0));
        // A missing value leaves no interval.
        let mut broken = s;
        broken.add(None, Some(3));
        assert_eq!(broken.interval(), None);
    }
}
