//! The experiment page's task x team grid: one row per task (sorted), one column per team (in
//! the manifest's order, then any other team a pair names, sorted), and in each cell the
//! outcome of every replicate of that pair, by replicate. Built from the same rows the pairs
//! list shows, for a finished report and for a running apply alike. Not rendering: the page
//! draws it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

/// One pair as the grid reads it: task, team, replicate, outcome word.
pub type GridPair<'a> = (&'a str, &'a str, u32, &'a str);

/// The grid's document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grid {
    /// The rows, sorted.
    pub tasks: Vec<String>,
    /// The columns.
    pub teams: Vec<String>,
    /// `cells[row][column]`: `[replicate, outcome]` per replicate, by replicate (empty: no
    /// pair yet).
    pub cells: Vec<Vec<Vec<(u32, String)>>>,
}

/// The grid of `pairs`, its columns `teams` first (in that order).
pub fn grid<'a>(teams: &[String], pairs: impl IntoIterator<Item = GridPair<'a>>) -> Grid {
    let mut by: BTreeMap<&str, BTreeMap<&str, BTreeMap<u32, &str>>> = BTreeMap::new();
    let mut others = BTreeSet::new();
    for (task, team, rep, outcome) in pairs {
        if !teams.iter().any(|t| t == team) {
            others.insert(team);
        }
        by.entry(task)
            .or_default()
            .entry(team)
            .or_default()
            .insert(rep, outcome);
    }
    let mut columns: Vec<String> = teams.to_vec();
    columns.extend(others.into_iter().map(str::to_string));
    let cells = by
        .values()
        .map(|row| {
            columns
                .iter()
                .map(|team| {
                    row.get(team.as_str())
                        .map(|reps| reps.iter().map(|(r, o)| (*r, o.to_string())).collect())
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect();
    Grid {
        tasks: by.keys().map(|t| t.to_string()).collect(),
        teams: columns,
        cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_sorted_tasks_columns_the_teams_and_cells_every_replicate() {
        let teams = vec!["solo".to_string(), "best".to_string()];
        let g = grid(
            &teams,
            [
                ("t2", "best", 1, "unresolved"),
                ("t2", "best", 0, "resolved"),
                ("t1", "solo", 0, "errored"),
                ("t1", "extra", 0, "resolved"),
            ],
        );
        assert_eq!(g.tasks, ["t1", "t2"]);
        assert_eq!(g.teams, ["solo", "best", "extra"]);
        assert_eq!(
            g.cells,
            vec![
                vec![
                    vec![(0, "errored".to_string())],
                    vec![],
                    vec![(0, "resolved".to_string())]
                ],
                vec![
                    vec![],
                    vec![(0, "resolved".to_string()), (1, "unresolved".to_string())],
                    vec![]
                ],
            ]
        );
        // The same pairs in another order make the same grid.
        let again = grid(
            &teams,
            [
                ("t1", "extra", 0, "resolved"),
                ("t2", "best", 0, "resolved"),
                ("t1", "solo", 0, "errored"),
                ("t2", "best", 1, "unresolved"),
            ],
        );
        assert_eq!(again, g);
    }

    #[test]
    fn no_pairs_make_an_empty_grid_with_the_teams() {
        let g = grid(&["a".to_string()], []);
        assert!(g.tasks.is_empty() && g.cells.is_empty());
        assert_eq!(g.teams, ["a"]);
    }
}
