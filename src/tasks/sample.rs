//! The seeded sample: filter, then order by a keyed hash, then take a prefix.
//!
//! Algorithm (stable across machines, platforms and bench versions): a task's rank is
//! `blake3(seed as 8 little-endian bytes || instance_id as UTF-8)`, compared as bytes; ties
//! (impossible in practice) break by instance id. The sample is the `limit` lowest-ranked tasks
//! that pass the filters. blake3 here acts as a pseudo-random function keyed by the seed, so
//! each task's position depends only on (seed, id): raising `limit` keeps every task already
//! drawn (prefix-stable), and adding tasks to a dataset never reorders the others.

use crate::types::SampleFilters;

use super::task::TaskSet;

/// A task's rank under `seed`.
pub fn sample_rank(seed: u64, instance_id: &str) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(instance_id.as_bytes());
    *h.finalize().as_bytes()
}

/// What the filters and a task listing read of a task (`bench tasks` reads only these columns
/// of a dataset).
#[derive(Debug, Clone, Copy)]
pub struct SampleRow<'a> {
    pub instance_id: &'a str,
    pub repo: &'a str,
    pub language: Option<&'a str>,
    /// `created_at`; `None` when it is not a timestamp (then no `since` / `until` keeps it).
    pub created: Option<jiff::Timestamp>,
}

/// The filters of a sample stage with their bounds parsed once.
#[derive(Debug, Clone)]
pub struct Filter<'a> {
    filters: &'a SampleFilters,
    since: Option<jiff::Timestamp>,
    until: Option<jiff::Timestamp>,
}

impl<'a> Filter<'a> {
    pub fn new(filters: &'a SampleFilters) -> Filter<'a> {
        let bound = |b: &Option<String>| b.as_ref().and_then(|s| s.parse::<jiff::Timestamp>().ok());
        Filter {
            since: bound(&filters.since),
            until: bound(&filters.until),
            filters,
        }
    }

    /// Whether the filters keep `row`.
    pub fn keeps(&self, row: &SampleRow<'_>) -> bool {
        let f = self.filters;
        self.since
            .is_none_or(|s| row.created.is_some_and(|c| c >= s))
            && self
                .until
                .is_none_or(|u| row.created.is_some_and(|c| c < u))
            && (f.repos.is_empty() || f.repos.contains(row.repo))
            && (f.languages.is_empty() || row.language.is_some_and(|l| f.languages.contains(l)))
            && (f.instance_ids.is_empty() || f.instance_ids.contains(row.instance_id))
    }
}

/// The ordered sample of task ids.
pub fn sample(set: &TaskSet, f: &SampleFilters) -> Vec<String> {
    sample_rows(
        set.tasks.values().map(|t| SampleRow {
            instance_id: &t.instance_id,
            repo: &t.repo,
            language: t.language.as_deref(),
            created: t.created_at.parse::<jiff::Timestamp>().ok(),
        }),
        f,
    )
    .into_iter()
    .map(str::to_string)
    .collect()
}

/// The ordered sample of `rows` (any order; ids are unique): the same ids as [`sample`] on a
/// set of the same tasks.
pub fn sample_rows<'a>(
    rows: impl Iterator<Item = SampleRow<'a>>,
    f: &SampleFilters,
) -> Vec<&'a str> {
    let filter = Filter::new(f);
    let mut ranked: Vec<([u8; 32], &str)> = rows
        .filter(|r| filter.keeps(r))
        .map(|r| (sample_rank(f.seed, r.instance_id), r.instance_id))
        .collect();
    let n = f
        .limit
        .map_or(ranked.len(), |l| (l as usize).min(ranked.len()));
    if n < ranked.len() {
        // Only the first `n` in order are wanted: partition, then sort that prefix.
        ranked.select_nth_unstable(n);
        ranked.truncate(n);
    }
    ranked.sort_unstable();
    ranked.into_iter().map(|(_, id)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_is_pinned() {
        // The algorithm is part of bench's contract: this value must never change.
        let r = sample_rank(7, "quickstart__roman-1");
        assert_eq!(blake3::Hash::from(r).to_hex().to_string(), {
            let mut h = blake3::Hasher::new();
            h.update(&[7, 0, 0, 0, 0, 0, 0, 0]);
            h.update(b"quickstart__roman-1");
            h.finalize().to_hex().to_string()
        });
    }
}
