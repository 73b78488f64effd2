//! SPEC §7: the guest's own work budget — the deterministic limit that
//! decides, the same in every host. The guest counts its work in units
//! (bytes scanned or copied, per phase) and charges each phase **before**
//! running it; a phase that would pass the budget does not run, and the
//! result is `failed` (raw text, log `reason=budget`). A host's fuel, wall
//! time and memory limits are only safety nets, set far above it
//! (`settings.call-limits-for`), so that no host gives up where another
//! prunes, whatever the machine's speed or load.

use crate::limits::{WORK_BASE, WORK_PER_BYTE};

/// The budget for a text of `text_bytes` bytes: [`WORK_BASE`] plus
/// [`WORK_PER_BYTE`] per byte (units; saturating).
pub fn budget_for(text_bytes: usize) -> u64 {
    WORK_BASE.saturating_add(WORK_PER_BYTE.saturating_mul(text_bytes as u64))
}

/// The work would pass the budget: the phase was not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exhausted;

/// Work counted for one result against its budget.
#[derive(Clone, Debug)]
pub struct Meter {
    spent: u64,
    budget: u64,
}

impl Meter {
    /// A meter with `budget` units.
    pub fn new(budget: u64) -> Meter {
        Meter { spent: 0, budget }
    }

    /// Charge `units` for the phase about to run. `Err` (nothing charged)
    /// when that would pass the budget: do not run the phase.
    pub fn charge(&mut self, units: usize) -> Result<(), Exhausted> {
        let next = self.spent.saturating_add(units as u64);
        if next > self.budget {
            return Err(Exhausted);
        }
        self.spent = next;
        Ok(())
    }

    /// Units charged so far.
    pub fn spent(&self) -> u64 {
        self.spent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_that_would_pass_the_budget_is_refused_and_not_counted() {
        let mut m = Meter::new(10);
        assert_eq!(m.charge(6), Ok(()));
        assert_eq!(m.charge(4), Ok(()), "exactly the budget is allowed");
        assert_eq!(m.spent(), 10);
        assert_eq!(m.charge(1), Err(Exhausted));
        assert_eq!(m.spent(), 10, "a refused charge is not counted");
    }

    #[test]
    fn the_budget_grows_with_the_text_and_saturates() {
        assert_eq!(budget_for(0), WORK_BASE);
        assert_eq!(budget_for(1_000), WORK_BASE + 1_000 * WORK_PER_BYTE);
        assert_eq!(budget_for(usize::MAX), u64::MAX);
    }
}
