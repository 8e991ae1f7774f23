//! Budgets of solve stages with `max_cost_usd`: the priced spend recorded in the store for this
//! manifest (every paid attempt once, earlier applies included), whether a run of unknown cost
//! halts launches, and each launch's share of what remains.

use std::collections::{BTreeMap, HashSet};

use crate::manifest::{Manifest, StageKind};
use crate::store::{Lookup, NodeStatus, Store};

/// One stage's budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    pub cap: f64,
    pub allow_unpriced: bool,
    pub spent: f64,
    pub unknown: usize,
}

impl Budget {
    pub fn new(cap: f64, allow_unpriced: bool) -> Budget {
        Budget {
            cap,
            allow_unpriced,
            spent: 0.0,
            unknown: 0,
        }
    }

    /// Charges one finished attempt (`None`: its cost is unknown).
    pub fn charge(&mut self, cost: Option<f64>) {
        match cost {
            Some(c) => self.spent += c,
            None => self.unknown += 1,
        }
    }

    pub fn remaining(&self) -> f64 {
        (self.cap - self.spent).max(0.0)
    }

    /// The share of what remains offered to one of `pending` launches.
    pub fn share(&self, pending: usize) -> f64 {
        self.remaining() / pending.max(1) as f64
    }

    /// Why launches stop, if they do.
    pub fn halted(&self) -> Option<String> {
        if self.spent >= self.cap {
            return Some(format!(
                "budget reached (${:.2} of ${:.2} spent)",
                self.spent, self.cap
            ));
        }
        if self.unknown > 0 && !self.allow_unpriced {
            return Some(format!(
                "budget: {} earlier run(s) of unknown cost halt launches (set allow_unpriced = true to count priced spend only)",
                self.unknown
            ));
        }
        None
    }
}

/// The budgets of a manifest's solve stages.
#[derive(Debug, Default)]
pub struct Budgets(BTreeMap<String, Budget>);

impl Budgets {
    /// The budgets with the spend the store records for this manifest.
    pub fn load(m: &Manifest, store: &Store) -> Budgets {
        let mut out = BTreeMap::new();
        for (name, stage) in &m.stages {
            if let StageKind::Solve(s) = &stage.kind
                && let Some(cap) = s.max_cost_usd
            {
                out.insert(name.clone(), Budget::new(cap, s.allow_unpriced));
            }
        }
        if out.is_empty() {
            return Budgets(out);
        }
        let path = m.path.display().to_string();
        let mut seen = HashSet::new();
        for r in store.runs().iter().filter(|r| r.manifest_path == path) {
            for (address, n) in &r.nodes {
                let stage = address.split('/').next().unwrap_or("");
                let (Some(b), Some(key)) = (out.get_mut(stage), &n.key) else {
                    continue;
                };
                // Each paid attempt counts once, however many runs recorded it.
                if n.status == NodeStatus::Done
                    && seen.insert(key.clone())
                    && let Lookup::Hit(rec) = store.get_action_light(key)
                    && let Some(s) = rec.solve()
                {
                    b.charge(s.cost_usd(&m.pricing));
                }
            }
        }
        Budgets(out)
    }

    pub fn get(&self, stage: &str) -> Option<&Budget> {
        self.0.get(stage)
    }

    pub fn get_mut(&mut self, stage: &str) -> Option<&mut Budget> {
        self.0.get_mut(stage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spend_halts_at_the_cap() {
        let mut b = Budget::new(1.0, false);
        assert!(b.halted().is_none());
        b.charge(Some(0.6));
        assert!((b.remaining() - 0.4).abs() < 1e-12);
        assert!((b.share(4) - 0.1).abs() < 1e-12);
        b.charge(Some(0.4));
        assert!(b.halted().unwrap().contains("budget reached"));
        assert_eq!(b.remaining(), 0.0);
    }

    #[test]
    fn unknown_cost_halts_unless_allowed() {
        let mut b = Budget::new(5.0, false);
        b.charge(None);
        assert!(b.halted().unwrap().contains("unknown cost"));
        let mut allowed = Budget::new(5.0, true);
        allowed.charge(None);
        assert!(allowed.halted().is_none());
    }
}
