//! Strategy compute time: percentiles from HDR histograms, in constant memory whatever the number of steps.

/// Compute times of one strategy's steps.
#[derive(Debug, Clone)]
pub struct ComputeTimes(hdrhistogram::Histogram<u64>);

impl Default for ComputeTimes {
    fn default() -> Self {
        // Two significant digits: a percentile is off by at most 1%, below run-to-run noise, in a table of a few
        // kilobytes (three digits took 170 KB for the range of an LLM call's latency in nanoseconds).
        Self(
            hdrhistogram::Histogram::new(2)
                .expect("two significant digits are within hdrhistogram's range"),
        )
    }
}

impl ComputeTimes {
    /// Records one step's compute time, in microseconds.
    pub fn record(&mut self, us: f64) {
        // In nanoseconds; the histogram grows to any value, so a record cannot fail.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let _ = self.0.record((us * 1e3).round() as u64);
    }

    /// Times recorded.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// The time at quantile `q` in microseconds, 0 when nothing was recorded.
    #[must_use]
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            0.0
        } else {
            #[allow(clippy::cast_precision_loss)]
            let us = self.0.value_at_quantile(q) as f64 / 1e3;
            us
        }
    }
}
