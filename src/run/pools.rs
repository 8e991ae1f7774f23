//! The dispatcher's resource pools: how many nodes of each class run at once. Solves draw on
//! the agents pool, everything else on the jobs pool; a solve stage may cap its own
//! concurrency; a backend may cap the sandboxes running nodes hold at once (a node that needs
//! more than the cap still runs when nothing else does, so nothing waits forever).

use std::collections::HashMap;

/// The pool a node draws on.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Pool {
    Jobs,
    Agents,
    /// Nodes shipped to an engine (`[execution]`): jobs in its queue or running there.
    Shipped,
}

/// What a node needs to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Demand {
    pub pool: Pool,
    pub stage: String,
    /// The stage's own concurrency cap, if any.
    pub stage_cap: Option<usize>,
    /// Sandboxes the node holds at once (a review solve holds the coder's while its
    /// reviewer's runs).
    pub sandboxes: usize,
}

/// Caps and current use.
#[derive(Debug)]
pub struct Pools {
    jobs: usize,
    agents: usize,
    shipped: usize,
    sandbox_cap: Option<usize>,
    running: HashMap<Pool, usize>,
    per_stage: HashMap<String, usize>,
    sandboxes: usize,
}

impl Pools {
    pub fn new(jobs: usize, agents: usize, sandbox_cap: Option<usize>) -> Pools {
        Pools {
            jobs: jobs.max(1),
            agents: agents.max(1),
            shipped: 1,
            sandbox_cap,
            running: HashMap::new(),
            per_stage: HashMap::new(),
            sandboxes: 0,
        }
    }

    /// Caps the nodes shipped to an engine at once (`[execution] max_jobs`).
    pub fn with_shipped(mut self, cap: usize) -> Pools {
        self.shipped = cap.max(1);
        self
    }

    /// Whether `d` may start now.
    pub fn admits(&self, d: &Demand) -> bool {
        let cap = match d.pool {
            Pool::Agents => self.agents,
            Pool::Jobs => self.jobs,
            Pool::Shipped => self.shipped,
        };
        let used = self.running.get(&d.pool).copied().unwrap_or(0);
        let used_stage = self.per_stage.get(&d.stage).copied().unwrap_or(0);
        let sandboxes_full = self
            .sandbox_cap
            .is_some_and(|cap| self.sandboxes > 0 && self.sandboxes + d.sandboxes > cap);
        used < cap && d.stage_cap.is_none_or(|c| used_stage < c) && !sandboxes_full
    }

    pub fn take(&mut self, d: &Demand) {
        *self.running.entry(d.pool).or_default() += 1;
        *self.per_stage.entry(d.stage.clone()).or_default() += 1;
        self.sandboxes += d.sandboxes;
    }

    pub fn release(&mut self, d: &Demand) {
        let dec = |v: &mut usize| *v = v.saturating_sub(1);
        dec(self.running.entry(d.pool).or_default());
        dec(self.per_stage.entry(d.stage.clone()).or_default());
        self.sandboxes = self.sandboxes.saturating_sub(d.sandboxes);
    }

    /// Nodes running.
    pub fn active(&self) -> usize {
        self.running.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(pool: Pool, stage: &str, cap: Option<usize>, sandboxes: usize) -> Demand {
        Demand {
            pool,
            stage: stage.into(),
            stage_cap: cap,
            sandboxes,
        }
    }

    #[test]
    fn each_pool_has_its_own_cap() {
        let mut p = Pools::new(1, 2, None);
        let g = d(Pool::Jobs, "grade", None, 1);
        let s = d(Pool::Agents, "solve", None, 1);
        assert!(p.admits(&g));
        p.take(&g);
        assert!(!p.admits(&g), "the jobs pool is full");
        assert!(p.admits(&s), "the agents pool is not");
        p.take(&s);
        p.take(&s);
        assert!(!p.admits(&s));
        p.release(&g);
        assert!(p.admits(&g));
        assert_eq!(p.active(), 2);
    }

    #[test]
    fn a_stage_cap_bounds_its_stage_only() {
        let mut p = Pools::new(8, 8, None);
        let s = d(Pool::Agents, "solve", Some(1), 1);
        p.take(&s);
        assert!(!p.admits(&s));
        assert!(p.admits(&d(Pool::Agents, "other", Some(1), 1)));
    }

    #[test]
    fn the_sandbox_cap_counts_what_nodes_hold_and_never_deadlocks() {
        let mut p = Pools::new(8, 8, Some(2));
        let review = d(Pool::Agents, "solve", None, 2);
        let solo = d(Pool::Agents, "solve", None, 1);
        assert!(p.admits(&review));
        p.take(&review);
        assert!(!p.admits(&solo), "a review holds two sandboxes");
        p.release(&review);
        p.take(&solo);
        assert!(p.admits(&solo));
        p.take(&solo);
        assert!(!p.admits(&solo));
        // A node needing more than the cap runs alone.
        let big = d(Pool::Agents, "solve", None, 3);
        let mut empty = Pools::new(8, 8, Some(2));
        assert!(empty.admits(&big));
        empty.take(&big);
        assert!(!empty.admits(&solo));
    }
}
