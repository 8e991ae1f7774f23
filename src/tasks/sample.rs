//! The seeded sample: filter, then order by a keyed hash, then take a prefix.
//!
//! Algorithm (stable across machines, platforms and bench versions): a task's rank is
//! `blake3(seed as 8 little-endian bytes || instance_id as UTF-8)`, compared as bytes; ties
//! (impossible in practice) break by instance id. The sample is the `limit` lowest-ranked tasks
//! that pass the filters. blake3 here acts as a pseudo-random function keyed by the seed, so
//! each task's position depends only on (seed, id): raising `limit` keeps every task already
//! drawn (prefix-stable), and adding tasks to a dataset never reorders the others.

use crate::manifest::SampleFilters;

use super::task::TaskSet;

/// A task's rank under `seed`.
pub fn sample_rank(seed: u64, instance_id: &str) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    h.update(instance_id.as_bytes());
    *h.finalize().as_bytes()
}

/// The ordered sample of task ids.
pub fn sample(set: &TaskSet, f: &SampleFilters) -> Vec<String> {
    let since = f
        .since
        .as_ref()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok());
    let until = f
        .until
        .as_ref()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok());
    let mut ranked: Vec<([u8; 32], &str)> = set
        .tasks
        .values()
        .filter(|t| {
            let created = t.created_at.parse::<jiff::Timestamp>().ok();
            since.is_none_or(|s| created.is_some_and(|c| c >= s))
                && until.is_none_or(|u| created.is_some_and(|c| c < u))
                && (f.repos.is_empty() || f.repos.contains(&t.repo))
                && (f.languages.is_empty()
                    || t.language.as_ref().is_some_and(|l| f.languages.contains(l)))
                && (f.instance_ids.is_empty() || f.instance_ids.contains(&t.instance_id))
        })
        .map(|t| (sample_rank(f.seed, &t.instance_id), t.instance_id.as_str()))
        .collect();
    ranked.sort();
    let n = f
        .limit
        .map_or(ranked.len(), |l| (l as usize).min(ranked.len()));
    ranked[..n].iter().map(|(_, id)| id.to_string()).collect()
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
