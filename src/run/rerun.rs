//! `bench apply --rerun`: which stored pairs run again as a new attempt.
//!
//! A selection is a comma-separated list of words, each matching pairs by their stored outcome
//! or by team: `timed-out` (the solve or its grade hit its deadline), `errored` (the agent
//! crashed: a non-zero exit that is not a timeout), `failed` (graded and not resolved, which
//! includes the two before), or a team's name (every pair of it). The outcomes are read from
//! the records the manifest's last apply used (its index). A selected pair's solve runs again
//! under the same key; its record before is filed as an earlier attempt
//! (`store/attempts.rs`), and its grade follows from the new patch.

use std::collections::HashMap;
use std::time::Duration;

use crate::graph::RerunOf;
use crate::manifest::{Manifest, StageKind};
use crate::store::{Index, Lookup, Store};

/// What a pair is selected by.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Selector {
    TimedOut,
    Errored,
    Failed,
    Team(String),
}

/// A parsed `--rerun` with its deadline.
#[derive(Debug, Clone)]
pub struct RerunSpec {
    selectors: Vec<Selector>,
    /// `--timeout`: the selected solves' deadline (default: the stage's `timeout`).
    pub timeout: Option<Duration>,
}

/// What the last apply stored of a pair.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Prior {
    solve_key: String,
    grade_key: Option<String>,
    /// `None`: not graded.
    resolved: Option<bool>,
    timed_out: bool,
    errored: bool,
}

impl Prior {
    /// The outcome word the report uses for the pair.
    fn outcome(&self) -> &'static str {
        match (self.resolved, self.timed_out, self.errored) {
            (Some(true), _, _) => "resolved",
            (_, true, _) => "timed out",
            (_, _, true) => "errored",
            (Some(false), _, _) => "unresolved",
            (None, _, _) => "not graded",
        }
    }
}

impl RerunSpec {
    /// Parses `--rerun WORDS` (and `--timeout`) against the manifest's teams. The error names
    /// the word and what is accepted.
    pub fn parse(words: &str, timeout: Option<&str>, m: &Manifest) -> Result<RerunSpec, String> {
        let mut selectors = Vec::new();
        for w in words.split(',').map(str::trim) {
            let s = match w {
                "timed-out" => Selector::TimedOut,
                "errored" => Selector::Errored,
                "failed" => Selector::Failed,
                t if m.teams.contains_key(t) => Selector::Team(t.to_string()),
                other => {
                    let teams: Vec<&str> = m.teams.keys().map(String::as_str).collect();
                    return Err(format!(
                        "--rerun {words:?}: `{other}` is neither an outcome nor a team of {}; \
                         use timed-out, errored, failed or a team ({}), comma-separated",
                        m.path.display(),
                        teams.join(", ")
                    ));
                }
            };
            if !selectors.contains(&s) {
                selectors.push(s);
            }
        }
        let timeout = timeout
            .map(|t| {
                crate::manifest::parse_duration(t)
                    .map_err(|e| format!("--timeout {t:?}: {e} (write it as `90s`, `30m`, `2h`)"))
            })
            .transpose()?;
        if timeout.is_some_and(|t| t.is_zero()) {
            return Err(
                "--timeout 0 gives the reruns no time at all; give a deadline such as `30m`".into(),
            );
        }
        Ok(RerunSpec { selectors, timeout })
    }

    /// The word a pair of `team` is selected by, if it is.
    fn selects(&self, team: &str, p: &Prior) -> Option<String> {
        self.selectors.iter().find_map(|s| {
            let hit = match s {
                Selector::TimedOut => p.timed_out,
                Selector::Errored => p.errored,
                Selector::Failed => p.resolved == Some(false),
                Selector::Team(t) => t == team,
            };
            hit.then(|| match s {
                Selector::TimedOut => "timed-out".to_string(),
                Selector::Errored => "errored".to_string(),
                Selector::Failed => "failed".to_string(),
                Selector::Team(t) => t.clone(),
            })
        })
    }

    /// The solve addresses to run again, with what they replace: every pair of the manifest's
    /// last apply (`index`) that the selection matches.
    pub fn select(&self, store: &Store, index: &Index, m: &Manifest) -> HashMap<String, RerunOf> {
        let mut out = HashMap::new();
        for (solve_stage, stage) in &m.stages {
            let StageKind::Solve(_) = &stage.kind else {
                continue;
            };
            let grades: Vec<&String> = m
                .stages
                .iter()
                .filter(|(_, g)| {
                    matches!(g.kind, StageKind::Grade(_)) && g.needs.contains(solve_stage)
                })
                .map(|(name, _)| name)
                .collect();
            let prefix = format!("{solve_stage}/");
            for (address, key) in index.nodes.range(prefix.clone()..) {
                let Some(rest) = address.strip_prefix(&prefix) else {
                    break;
                };
                // `task/team/replicate`; a task id may hold a slash, a team never does.
                let mut parts = rest.rsplitn(3, '/');
                let (Some(_replicate), Some(team), Some(_task)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                let Some(prior) = prior(store, index, key, &grades, solve_stage, rest) else {
                    continue;
                };
                if let Some(by) = self.selects(team, &prior) {
                    out.insert(
                        address.clone(),
                        RerunOf {
                            outcome: prior.outcome().to_string(),
                            solve_key: prior.solve_key,
                            grade_key: prior.grade_key,
                            selected_by: by,
                            timeout: self.timeout,
                        },
                    );
                }
            }
        }
        out
    }
}

/// What the store holds of the pair `rest` (`task/team/replicate`) of a solve stage: its solve
/// record (`None` without one) and its grade's, from the first grade stage that graded it.
fn prior(
    store: &Store,
    index: &Index,
    solve_key: &str,
    grades: &[&String],
    solve_stage: &str,
    rest: &str,
) -> Option<Prior> {
    let Lookup::Hit(solve) = store.get_action_light(solve_key) else {
        return None;
    };
    let s = solve.solve()?;
    let graded = grades.iter().find_map(|g| {
        let key = index.nodes.get(&format!("{g}/{solve_stage}/{rest}"))?;
        match store.get_action_light(key) {
            Lookup::Hit(r) => r.grade().map(|o| (key.clone(), o.resolved, o.timed_out)),
            _ => None,
        }
    });
    Some(Prior {
        solve_key: solve_key.to_string(),
        grade_key: graded.as_ref().map(|g| g.0.clone()),
        resolved: graded.as_ref().map(|g| g.1),
        timed_out: s.timed_out || graded.as_ref().is_some_and(|g| g.2),
        errored: s.solve_error.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prior(resolved: Option<bool>, timed_out: bool, errored: bool) -> Prior {
        Prior {
            solve_key: "k".into(),
            grade_key: None,
            resolved,
            timed_out,
            errored,
        }
    }

    fn spec(selectors: Vec<Selector>) -> RerunSpec {
        RerunSpec {
            selectors,
            timeout: None,
        }
    }

    #[test]
    fn outcomes_select_the_pairs_they_name_and_teams_all_of_theirs() {
        let timed_out = prior(Some(false), true, false);
        let crashed = prior(Some(false), false, true);
        let unresolved = prior(Some(false), false, false);
        let resolved = prior(Some(true), false, false);
        let ungraded_timeout = prior(None, true, false);
        let t = spec(vec![Selector::TimedOut]);
        assert_eq!(t.selects("a", &timed_out).as_deref(), Some("timed-out"));
        assert_eq!(
            t.selects("a", &ungraded_timeout).as_deref(),
            Some("timed-out")
        );
        assert_eq!(t.selects("a", &crashed), None);
        assert_eq!(t.selects("a", &resolved), None);
        let e = spec(vec![Selector::Errored]);
        assert_eq!(e.selects("a", &crashed).as_deref(), Some("errored"));
        assert_eq!(e.selects("a", &unresolved), None);
        let f = spec(vec![Selector::Failed]);
        for p in [&timed_out, &crashed, &unresolved] {
            assert_eq!(f.selects("a", p).as_deref(), Some("failed"));
        }
        assert_eq!(f.selects("a", &resolved), None);
        assert_eq!(f.selects("a", &ungraded_timeout), None);
        let team = spec(vec![Selector::Team("b".into()), Selector::Failed]);
        assert_eq!(team.selects("b", &resolved).as_deref(), Some("b"));
        assert_eq!(team.selects("a", &resolved), None);
        assert_eq!(timed_out.outcome(), "timed out");
        assert_eq!(crashed.outcome(), "errored");
        assert_eq!(unresolved.outcome(), "unresolved");
        assert_eq!(resolved.outcome(), "resolved");
        assert_eq!(prior(None, false, false).outcome(), "not graded");
    }
}
