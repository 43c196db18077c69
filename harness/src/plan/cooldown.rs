//! The thermal gate before a cell (`[gaps] cooldown = { until = "nominal", max_s = 600 }`):
//! after the fixed gap, wait until the machine's thermal pressure is at or below a level, at most
//! `max_s`, reading the pass's own sampler (no process is started here), and record how long it
//! waited and where the pressure stood when the cell began (docs/plans.md, "Gaps").

use std::time::{Duration, Instant};

use benchpass_format::format::CooldownRecord;
use benchpass_format::machine::ThermalPressure;

use crate::runner::Interrupt;
use crate::sampler::MachineSampler;

/// How often the gate looks at the sampler's latest reading (which it takes about once a
/// second).
const POLL: Duration = Duration::from_millis(250);

/// Waits until the pressure is at or below `until`, at most `max`. `None` when Ctrl-C came
/// first. Where this OS tells no level, nothing is waited for and the record says so (no level).
pub(crate) async fn cool_down(until: ThermalPressure, max: Duration, sampler: &MachineSampler, interrupt: &mut Interrupt) -> Option<CooldownRecord> {
    let began = Instant::now();
    loop {
        let level = sampler.thermal_now();
        let done = match level {
            None => true,
            Some(level) => level <= until || began.elapsed() >= max,
        };
        if done {
            return Some(CooldownRecord { until, waited_s: began.elapsed().as_secs_f64(), level });
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL.min(max.saturating_sub(began.elapsed()))) => {}
            _ = interrupt.wait() => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use ThermalPressure::*;

    fn interrupt() -> Interrupt {
        Interrupt::never()
    }

    #[tokio::test]
    async fn the_gate_waits_for_the_level_and_records_how_long() {
        // Heavy for the first three readings (20 ms apart), nominal after.
        let n = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&n);
        let sampler = MachineSampler::start_with(
            move || crate::sampler::Reading::thermal(Some(if counted.fetch_add(1, Ordering::SeqCst) < 3 { Heavy } else { Nominal })),
            Duration::from_millis(20),
        );
        let record = cool_down(Nominal, Duration::from_secs(10), &sampler, &mut interrupt()).await.unwrap();
        assert_eq!(record.level, Some(Nominal));
        assert!(!record.started_hot());
        // At least the two more readings it took to come down, 20 ms apart.
        assert!(record.waited_s >= 0.04, "{record:?}");
    }

    #[tokio::test]
    async fn a_machine_that_stays_hot_is_given_up_on_at_max_s_and_the_cell_started_hot() {
        let sampler = MachineSampler::start_with(|| crate::sampler::Reading::thermal(Some(Heavy)), Duration::from_millis(20));
        let record = cool_down(Nominal, Duration::from_millis(300), &sampler, &mut interrupt()).await.unwrap();
        assert_eq!(record.level, Some(Heavy));
        assert!(record.started_hot());
        assert!(record.waited_s >= 0.3, "{record:?}");
    }

    #[tokio::test]
    async fn where_the_os_tells_no_level_nothing_is_waited_for() {
        let sampler = MachineSampler::start_with(|| crate::sampler::Reading::thermal(None), Duration::from_millis(20));
        let record = cool_down(Nominal, Duration::from_secs(600), &sampler, &mut interrupt()).await.unwrap();
        assert_eq!(record.level, None);
        assert!(record.waited_s < 1.0 && !record.started_hot());
    }
}
