//! Counting nodes per stage from the event stream, the one way the dispatcher (for its
//! `stage_finished` events) and the reporter (for its bars) both count. Not rendering, not
//! emitting.

use std::collections::BTreeMap;

use super::event::{Event, Outcome, StageCounts};

/// Per stage, what the terminal events so far say.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    stages: BTreeMap<String, StageCounts>,
}

impl Tally {
    /// Counts `e` if it is a node's terminal event (`cache_hit`, `node_finished`).
    pub fn observe(&mut self, e: &Event) {
        match e {
            Event::CacheHit(h) => {
                let c = self.entry(&h.stage);
                if h.remote {
                    c.remote += 1;
                } else {
                    c.cached += 1;
                }
            }
            Event::NodeFinished(f) => {
                let shared = f.shared_with.is_some();
                let c = self.entry(&f.stage);
                match f.outcome {
                    Outcome::Done if shared => c.shared += 1,
                    Outcome::Done => c.done += 1,
                    Outcome::Failed => c.failed += 1,
                    Outcome::NotRun => c.not_run += 1,
                    Outcome::Cancelled => c.cancelled += 1,
                }
            }
            _ => {}
        }
    }

    fn entry(&mut self, stage: &str) -> &mut StageCounts {
        self.stages
            .entry(stage.to_string())
            .or_insert_with(|| StageCounts {
                stage: stage.to_string(),
                ..Default::default()
            })
    }

    /// The counts of `stage` (zeros if nothing of it ended).
    pub fn get(&self, stage: &str) -> StageCounts {
        self.stages.get(stage).cloned().unwrap_or(StageCounts {
            stage: stage.to_string(),
            ..Default::default()
        })
    }

    /// The counts of `order`'s stages, in that order.
    pub fn in_order(&self, order: &[String]) -> Vec<StageCounts> {
        order.iter().map(|s| self.get(s)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::event::{CacheHit, NodeFinished};

    fn finished(stage: &str, outcome: Outcome, shared: bool) -> Event {
        Event::NodeFinished(NodeFinished {
            stage: stage.into(),
            address: format!("{stage}/x"),
            key: Some("k".into()),
            outcome,
            detail: String::new(),
            shared_with: shared.then(|| format!("{stage}/y")),
            duration_ms: None,
        })
    }

    #[test]
    fn each_terminal_event_counts_once_under_its_kind() {
        let mut t = Tally::default();
        for e in [
            Event::CacheHit(CacheHit {
                stage: "grade".into(),
                address: "grade/a".into(),
                key: "k".into(),
                remote: false,
            }),
            Event::CacheHit(CacheHit {
                stage: "grade".into(),
                address: "grade/b".into(),
                key: "k".into(),
                remote: true,
            }),
            finished("grade", Outcome::Done, false),
            finished("grade", Outcome::Done, true),
            finished("grade", Outcome::Done, true),
            finished("grade", Outcome::Failed, true),
            finished("grade", Outcome::NotRun, false),
            finished("grade", Outcome::Cancelled, false),
        ] {
            t.observe(&e);
        }
        let g = t.get("grade");
        assert_eq!(
            (
                g.cached,
                g.remote,
                g.done,
                g.shared,
                g.failed,
                g.not_run,
                g.cancelled
            ),
            (1, 1, 1, 2, 1, 1, 1)
        );
        assert_eq!(g.total(), 8);
        assert_eq!(t.get("solve").total(), 0);
        let order = vec!["solve".to_string(), "grade".to_string()];
        let stages: Vec<String> = t.in_order(&order).into_iter().map(|c| c.stage).collect();
        assert_eq!(stages, order);
    }
}
