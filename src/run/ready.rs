//! The dispatcher's ready queue: nodes waiting for a pool slot, launched in the order they were
//! queued. They are kept apart by what they demand of the pools, so a launch pass that finds a
//! demand refused skips all of its nodes at once: a pass costs the demands queued, not the
//! nodes (with thousands of solves queued behind two agent slots, every completion used to
//! look at each of them again).

use std::collections::{HashMap, VecDeque};

use super::pools::Demand;

/// Ready nodes by demand, each demand's nodes in queue order.
#[derive(Debug, Default)]
pub struct ReadyQueue {
    /// The next node's place in the queue.
    seq: u64,
    /// Few demands (a stage and its pool): a list beats a map.
    classes: Vec<(Demand, VecDeque<(u64, usize)>)>,
    /// Queued nodes per stage.
    per_stage: HashMap<String, usize>,
}

/// One demand's nodes, as [`ReadyQueue::next`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class(usize);

impl ReadyQueue {
    /// Queues node `id`, which needs `demand`.
    pub fn push(&mut self, id: usize, demand: Demand) {
        *self.per_stage.entry(demand.stage.clone()).or_default() += 1;
        let entry = (self.seq, id);
        self.seq += 1;
        match self.classes.iter_mut().find(|(d, _)| *d == demand) {
            Some((_, q)) => q.push_back(entry),
            None => self.classes.push((demand, VecDeque::from([entry]))),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.classes.iter().all(|(_, q)| q.is_empty())
    }

    /// Nodes of `stage` queued.
    pub fn in_stage(&self, stage: &str) -> usize {
        self.per_stage.get(stage).copied().unwrap_or(0)
    }

    /// The demand whose first node was queued earliest, among those not in `refused`.
    pub fn next(&self, refused: &[Class]) -> Option<Class> {
        self.classes
            .iter()
            .enumerate()
            .filter(|(i, _)| !refused.contains(&Class(*i)))
            .filter_map(|(i, (_, q))| q.front().map(|(seq, _)| (*seq, i)))
            .min()
            .map(|(_, i)| Class(i))
    }

    /// What a class's nodes demand.
    pub fn demand(&self, class: Class) -> &Demand {
        &self.classes[class.0].0
    }

    /// Takes the first node of `class` off the queue.
    pub fn pop(&mut self, class: Class) -> Option<usize> {
        let (demand, q) = &mut self.classes[class.0];
        let (_, id) = q.pop_front()?;
        if let Some(n) = self.per_stage.get_mut(&demand.stage) {
            *n -= 1;
        }
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::pools::Pool;

    fn d(pool: Pool, stage: &str) -> Demand {
        Demand {
            pool,
            stage: stage.into(),
            stage_cap: None,
            sandboxes: 1,
        }
    }

    /// Pops every node in launch order, refusing the demands `refuse` names.
    fn drain(q: &mut ReadyQueue, refuse: &[&str]) -> Vec<usize> {
        let mut refused = Vec::new();
        let mut out = Vec::new();
        while let Some(c) = q.next(&refused) {
            if refuse.contains(&q.demand(c).stage.as_str()) {
                refused.push(c);
                continue;
            }
            out.push(q.pop(c).expect("the class has a node"));
        }
        out
    }

    #[test]
    fn nodes_leave_in_the_order_they_were_queued_across_demands() {
        let mut q = ReadyQueue::default();
        for (id, stage) in [
            (5, "solve"),
            (1, "grade"),
            (9, "solve"),
            (2, "gold"),
            (3, "grade"),
        ] {
            let pool = if stage == "solve" {
                Pool::Agents
            } else {
                Pool::Jobs
            };
            q.push(id, d(pool, stage));
        }
        assert_eq!(q.in_stage("solve"), 2);
        assert_eq!(drain(&mut q, &[]), vec![5, 1, 9, 2, 3]);
        assert!(q.is_empty());
        assert_eq!(q.in_stage("solve"), 0);
    }

    #[test]
    fn a_refused_demand_keeps_its_nodes_in_place_for_the_next_pass() {
        let mut q = ReadyQueue::default();
        q.push(1, d(Pool::Agents, "solve"));
        q.push(2, d(Pool::Jobs, "grade"));
        q.push(3, d(Pool::Agents, "solve"));
        q.push(4, d(Pool::Jobs, "grade"));
        assert_eq!(drain(&mut q, &["solve"]), vec![2, 4]);
        assert!(!q.is_empty());
        q.push(5, d(Pool::Jobs, "grade"));
        q.push(6, d(Pool::Agents, "solve"));
        // The solves queued first still go first, then what came after, in order.
        assert_eq!(drain(&mut q, &[]), vec![1, 3, 5, 6]);
    }

    #[test]
    fn demands_differing_only_in_sandboxes_are_apart() {
        let mut q = ReadyQueue::default();
        let review = Demand {
            sandboxes: 2,
            ..d(Pool::Agents, "solve")
        };
        q.push(1, review.clone());
        q.push(2, d(Pool::Agents, "solve"));
        let mut refused = Vec::new();
        let first = q.next(&refused).expect("queued");
        assert_eq!(q.demand(first), &review);
        refused.push(first);
        let second = q.next(&refused).expect("queued");
        assert_eq!(q.pop(second), Some(2));
        assert_eq!(q.in_stage("solve"), 1);
    }
}
