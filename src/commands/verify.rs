//! `bench verify`: every blob of every cached record the plan reaches, re-hashed.

use std::collections::BTreeMap;
use std::path::Path;

use miette::{Report, miette};

use crate::cli::Cli;
use crate::exit_codes;
use crate::graph::{Graph, Mode};

use super::load_for_reading;

/// `bench verify`: the graph as `plan` expands it, every blob of every cached record it reaches
/// re-hashed.
pub(super) fn verify(cli: &Cli, file: &Path) -> Result<u8, Report> {
    let l = load_for_reading(&cli.store, file)?;
    let Some(store) = l.store.as_ref() else {
        println!("no store at {}: nothing to verify", l.store_root.display());
        return Ok(exit_codes::OK);
    };
    let mut graph =
        Graph::new(&l.m, Some(store), &l.datasets, Mode::Plan).map_err(|e| miette!("{e}"))?;
    graph.verify_blobs = true;
    while !graph.advance().is_empty() {}
    let checked: std::collections::BTreeSet<crate::types::Digest> = graph
        .nodes
        .iter()
        .filter_map(|n| n.state.record())
        .flat_map(|r| r.blob_digests().unwrap_or_default())
        .collect();
    for (path, reason) in &graph.invalid {
        println!("record {}: {reason}; removed", path.display());
    }
    // One line per bad blob, however many cached results use it (the first to check it finds
    // what is wrong; it is removed, so the others find it missing).
    let mut bad_blobs: BTreeMap<&Path, (&str, usize)> = BTreeMap::new();
    for bad in &graph.bad_blobs {
        bad_blobs.entry(&bad.path).or_insert((&bad.problem, 0)).1 += 1;
    }
    for (path, (problem, users)) in &bad_blobs {
        let users = if *users > 1 {
            format!(" (used by {users} cached results)")
        } else {
            String::new()
        };
        println!("blob {} is {problem}{users}", path.display());
    }
    let bad = graph.invalid.len() + bad_blobs.len();
    println!(
        "{} blobs of cached results verified, {bad} bad{}",
        checked.len(),
        if bad > 0 {
            ": `bench apply` recomputes the nodes that wrote them"
        } else {
            ""
        }
    );
    Ok(if bad > 0 {
        exit_codes::PENDING
    } else {
        exit_codes::OK
    })
}
