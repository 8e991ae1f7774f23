//! Budgets of solve stages with `max_cost_usd`: the priced spend recorded in the store for this
//! manifest (every paid attempt once, earlier applies included), whether a run of unknown cost
//! halts launches, and each launch's share of what remains.

use std::collections::{BTreeMap, HashSet};

use crate::manifest::{Agent, Manifest, StageKind};
use crate::store::{Lookup, NodeStatus, Store};
use crate::types::UsageFormat;

use super::spend::BudgetCap;

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
        self.why_halted().map(|why| format!("budget: {why}"))
    }

    /// Why launches stop, as a fragment (`spent $0.06 of $0.025`), if they do.
    pub fn why_halted(&self) -> Option<String> {
        if self.spent >= self.cap {
            return Some(format!("spent {} of {}", usd(self.spent), usd(self.cap)));
        }
        if self.unknown > 0 && !self.allow_unpriced {
            return Some(format!(
                "{} earlier run(s) of unknown cost halt launches (set allow_unpriced = true to count priced spend only)",
                self.unknown
            ));
        }
        None
    }

    /// What is left of it, for the plan's expected spend.
    pub fn cap_of(&self, stage: &str) -> BudgetCap {
        BudgetCap {
            stage: stage.to_string(),
            cap_usd: self.cap,
            spent_usd: self.spent,
            remaining_usd: if self.why_halted().is_some() {
                0.0
            } else {
                self.remaining()
            },
            halted: self.why_halted(),
        }
    }
}

/// Dollars with cents, or with as many more digits (up to 4) as the amount needs: a cap of
/// $0.025 is not printed as $0.03.
pub fn usd(x: f64) -> String {
    let cents = format!("{x:.2}");
    if (cents.parse::<f64>().unwrap_or(x) - x).abs() < 1e-9 {
        return format!("${cents}");
    }
    let fine = format!("{x:.4}");
    format!("${}", fine.trim_end_matches('0'))
}

/// Why a budget cannot count what `agent` spends, and the fix that makes it countable; `None`
/// when its cost is known before it runs: it drives no model, or its tokens are read and its
/// model is priced by the table (built-in or `[pricing]`), or it is claude run without a model
/// (the CLI prices its own default models). A model the table does not price is refused even
/// with a harness that prints a total: that total is dropped when the harness could not price
/// the model either, and the first such run would halt every launch of the stage.
pub fn unpriced_fix(m: &Manifest, agent: &Agent) -> Option<String> {
    let name = &agent.harness;
    let h = &m.harnesses[name];
    let price = |model: &str| {
        (!m.pricing.contains_key(model)).then(|| {
            format!("add `[pricing.\"{model}\"]` (dollars per million tokens: input, cached_input, cache_write, output)")
        })
    };
    match (h.usage, agent.model.as_deref()) {
        (None, None) => None,
        (None, Some(model)) => Some(format!(
            "its tokens cannot be read without a usage reader: add `usage = \"claude-json\"` (or \"codex-jsonl\", \"aider\", \"mini-swe-agent\": the format the command prints, see docs/agents.md) to `[harnesses.{name}]`{}",
            price(model)
                .map(|p| format!(", and {p}"))
                .unwrap_or_default()
        )),
        (Some(UsageFormat::ClaudeJson), None) => None,
        (Some(_), None) => Some(format!(
            "it runs without a model, so its tokens cannot be priced: name the model (`{name}@MODEL`) and add `[pricing.\"MODEL\"]`"
        )),
        (Some(_), Some(model)) => price(model),
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

    /// Why a pending solve of `stage` would not run (`halted by budget: stage solve spent $0.06
    /// of $0.025`), if its budget halts launches.
    pub fn halt_reason(&self, stage: &str) -> Option<String> {
        let why = self.get(stage)?.why_halted()?;
        Some(format!("halted by budget: stage {stage} {why}"))
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
        assert_eq!(b.halted().unwrap(), "budget: spent $1.00 of $1.00");
        assert_eq!(usd(0.025), "$0.025");
        assert_eq!(usd(0.1 + 0.2), "$0.30");
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
