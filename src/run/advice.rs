//! Why a strategy never acted, and the window that would show it acting — decided from its configuration,
//! the window in use, the largest request and what no strategy may reduce.
//!
//! Advice is given only where it is true:
//! - only a strategy whose size to act at moves with the window is offered a window (one a count of turns or
//!   items, a fixed budget, or its own trigger sets is told that the window does not move it);
//! - the window offered is never the one in use, never below what no strategy may reduce, and puts the
//!   strategy's size to act at between that floor (so that it can work) and the largest request (so that it
//!   acts), the nearest such to half the largest request, in whole thousands;
//! - where no window does, it says so.

use crate::report::analysis::Idle;
use crate::strategy::StrategyConfig;

/// Why `config`, which changed no request under the `window` in use, never acted; `peak` is the largest
/// request and `floor` the largest part of one no strategy may reduce.
#[must_use]
pub fn idle(config: &StrategyConfig, window: u64, peak: Option<u64>, floor: Option<u64>) -> Idle {
    let budget = |w: u64| {
        config
            .budget(usize::try_from(w).unwrap_or(usize::MAX))
            .map(|b| b as u64)
    };
    let Some(at) = budget(window) else {
        return Idle::Other;
    };
    // Requests over its size that never made it act: it found nothing it reduces in them.
    if peak.is_some_and(|p| at < p) {
        return Idle::NothingToReduce { at };
    }
    if budget(window.saturating_mul(2)) == Some(at) && budget((window / 2).max(1)) == Some(at) {
        return Idle::Budget { at };
    }
    Idle::Window {
        at,
        suggest: peak.and_then(|p| suggest(&budget, window, p, floor.unwrap_or(0))),
    }
}

/// The window to suggest (see the module docs): windows up to 64 times the largest request, in thousands;
/// a strategy's size to act at grows with the window or stays.
fn suggest(
    budget: &impl Fn(u64) -> Option<u64>,
    window: u64,
    peak: u64,
    floor: u64,
) -> Option<u64> {
    let half = (peak / 2 / 1000 * 1000).max(1000);
    (1..=(peak.max(1000) * 64 / 1000))
        .map(|k| k * 1000)
        .filter(|&w| w != window && w >= floor)
        .filter(|&w| budget(w).is_some_and(|b| b >= floor && b < peak))
        .min_by_key(|&w| w.abs_diff(half))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::pipeline::PipelineConfig;
    use crate::strategy::sliding_window::SlidingWindowConfig;

    fn share(s: f64) -> StrategyConfig {
        StrategyConfig::SlidingWindow(SlidingWindowConfig {
            window_share: Some(s),
            ..SlidingWindowConfig::default()
        })
    }

    /// A window share: the window suggested puts its budget between the floor and the largest request,
    /// nearest half the request, never the window in use nor one below the floor.
    #[test]
    fn a_window_share_is_offered_a_window_it_would_act_under() {
        // Half the window, at 128,000: 64,000 is over the 26,095-token request. Budgets of 0.5·w in
        // [22,788, 26,095) need w in [45,576, 52,190): 46,000 … 52,000, nearest 13,000 is 46,000.
        let w = share(0.5);
        assert_eq!(
            idle(&w, 128_000, Some(26_095), Some(22_788)),
            Idle::Window {
                at: 64_000,
                suggest: Some(46_000)
            }
        );
        // Requests over its budget that never made it act: it found nothing to reduce in them, and no window
        // is offered.
        let at = idle(&w, 46_000, Some(26_095), Some(22_788));
        assert_eq!(at, Idle::NothingToReduce { at: 23_000 });
        let at = idle(&w, 60_000, Some(26_095), Some(22_788));
        assert_eq!(
            at,
            Idle::Window {
                at: 30_000,
                suggest: Some(46_000)
            }
        );
        // A tenth of the window: budgets in [25,000, 26,095) need windows in [250,000, 260,950).
        let tight = share(0.1);
        let far = idle(&tight, 400_000, Some(26_095), Some(25_000));
        assert_eq!(
            far,
            Idle::Window {
                at: 40_000,
                suggest: Some(250_000)
            }
        );
        // No window whose budget holds the floor under the largest request: none is offered.
        let none = idle(&tight, 400_000, Some(26_095), Some(26_095));
        assert_eq!(
            none,
            Idle::Window {
                at: 40_000,
                suggest: None
            }
        );
    }

    /// A window never offered below the floor, even where the budget would fit: a window of 20,000 with a
    /// floor of 22,788 is too small for the traces, whatever the strategy.
    #[test]
    fn no_window_below_the_floor() {
        let w = share(0.99);
        let at = idle(&w, 128_000, Some(26_095), Some(22_788));
        let Idle::Window {
            suggest: Some(s), ..
        } = at
        else {
            panic!("{at:?}");
        };
        assert!(s >= 22_788 && s != 128_000, "{s}");
    }

    /// A fixed budget, and no budget (a count of turns or items): the window does not move them.
    #[test]
    fn a_budget_or_a_count_is_not_moved_by_the_window() {
        let fixed = StrategyConfig::SlidingWindow(SlidingWindowConfig {
            max_tokens: Some(30_000),
            ..SlidingWindowConfig::default()
        });
        assert_eq!(
            idle(&fixed, 128_000, Some(26_095), Some(1_000)),
            Idle::Budget { at: 30_000 }
        );
        let count = StrategyConfig::SlidingWindow(SlidingWindowConfig {
            max_items: Some(40),
            ..SlidingWindowConfig::default()
        });
        assert_eq!(
            idle(&count, 128_000, Some(26_095), Some(1_000)),
            Idle::Other
        );
        // A pipeline over 0.8 of the window moves with it.
        let pipeline = StrategyConfig::Pipeline(PipelineConfig::new(0.8, Vec::new()));
        assert!(matches!(
            idle(&pipeline, 128_000, Some(26_095), Some(1_000)),
            Idle::Window {
                at: 102_400,
                suggest: Some(_)
            }
        ));
    }
}
