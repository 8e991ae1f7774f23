//! The remote cache in plan and apply: which nodes to ask it for, and what its answers do to
//! the graph. A node that would run (apply: ready; plan: will run) with a key is asked for
//! before it runs; a hit makes it cached (apply: its record and blobs are fetched, verified and
//! committed to the local store; plan: its trusted record is only read), and the expansion goes
//! on from it, so the keys downstream of it are asked for in the next round. A miss, a rejected
//! entry (untrusted, forged, a blob that fails its digest) or a remote that is down leaves the
//! node to run here, with a note.
//!
//! Not here: the transport, signatures and verification (`cache/`).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;
use serde::Serialize;

use crate::cache::{Fetch, Peek, RemoteCache};
use crate::graph::{Graph, NodeState};
use crate::store::Store;

/// Requests to the remote at once.
const CONCURRENCY: usize = 16;

/// What the remote cache did in one plan or apply.
#[derive(Debug, Default, Clone, Serialize)]
pub struct RemoteSummary {
    pub url: String,
    /// Distinct keys it served.
    pub served: usize,
    /// Blobs downloaded for them, and their bytes (apply).
    pub blobs: usize,
    pub bytes: u64,
    /// Nodes whose entry was refused: (address, reason), sorted.
    pub rejected: Vec<(String, String)>,
    /// Why the remote was given up, if it was.
    pub unreachable: Option<String>,
    /// Results uploaded (apply), and those that could not be.
    pub uploaded: usize,
    pub not_uploaded: usize,
    /// Whether this machine has a signing key (without one nothing is uploaded).
    pub signing: bool,
    /// Keys asked for already (each is asked once per process).
    #[serde(skip)]
    asked: std::collections::HashSet<String>,
}

impl RemoteSummary {
    pub fn new(remote: &dyn RemoteCache) -> RemoteSummary {
        RemoteSummary {
            url: remote.url().to_string(),
            signing: remote.can_push(),
            ..Default::default()
        }
    }

    /// The lines a person reads after a plan or apply (sorted, stable).
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(m) = &self.unreachable {
            out.push(format!(
                "note: remote cache {} is unreachable ({m}); going on without it",
                self.url
            ));
        }
        // One note per reason: the nodes it refused, named when they are few.
        let mut by_reason: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (address, why) in &self.rejected {
            by_reason.entry(why).or_default().push(address);
        }
        let mut grouped: Vec<(&str, Vec<&str>)> = by_reason.into_iter().collect();
        grouped.sort_by(|a, b| a.1.cmp(&b.1));
        for (why, addresses) in grouped {
            let who = match addresses.len() {
                1 => addresses[0].to_string(),
                n if n <= 3 => addresses.join(", "),
                n => format!("{n} nodes ({}, ...)", addresses[..2].join(", ")),
            };
            let runs = if addresses.len() == 1 {
                "it runs"
            } else {
                "they run"
            };
            out.push(format!(
                "note: remote cache: {who}: not used: {why}; {runs} here"
            ));
        }
        out
    }
}

/// Which nodes of `ids` to ask for: those that would run, by key, whose key was not asked for
/// yet.
fn wanted(
    graph: &Graph<'_>,
    ids: &[usize],
    summary: &mut RemoteSummary,
) -> BTreeMap<String, Vec<usize>> {
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for &id in ids {
        let n = &graph.nodes[id];
        if matches!(n.state, NodeState::Ready | NodeState::WillRun)
            && let Some(k) = &n.key
            && (by_key.contains_key(k) || !summary.asked.contains(k))
        {
            by_key.entry(k.clone()).or_default().push(id);
        }
    }
    summary.asked.extend(by_key.keys().cloned());
    by_key
}

/// One round: asks the remote for the would-run nodes among `ids`. With `store`, fetches them
/// whole into it (apply, pull); without, only reads their records (plan). Returns how many
/// nodes it served; they are cached in the graph now.
pub async fn serve_round(
    graph: &mut Graph<'_>,
    ids: &[usize],
    remote: &dyn RemoteCache,
    store: Option<&Store>,
    summary: &mut RemoteSummary,
) -> usize {
    let by_key = wanted(graph, ids, summary);
    if by_key.is_empty() || remote.down().is_some() {
        return 0;
    }
    // Every node of one key computes the same kind of output (the key hashes the job, whose
    // kind is part of it): the record served must be of that kind.
    let kinds: BTreeMap<String, crate::jobs::Kind> = by_key
        .iter()
        .map(|(k, ids)| (k.clone(), graph.nodes[ids[0]].kind.output_kind()))
        .collect();
    let answers: Vec<(String, Fetch)> = futures_util::stream::iter(kinds)
        .map(|(k, kind)| async move {
            let answer = match store {
                Some(s) => remote.fetch(&k, kind, s).await,
                None => match remote.peek(&k, kind).await {
                    Peek::Trusted(rec) => Fetch::Hit(Box::new(crate::cache::Fetched {
                        record: *rec,
                        blobs: 0,
                        bytes: 0,
                    })),
                    Peek::Miss => Fetch::Miss,
                    Peek::Rejected(r) => Fetch::Rejected(r),
                    Peek::Unreachable(m) => Fetch::Unreachable(m),
                },
            };
            (k, answer)
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut served = 0;
    for (key, answer) in answers {
        let ids = &by_key[&key];
        match answer {
            Fetch::Hit(f) => {
                summary.served += 1;
                summary.blobs += f.blobs;
                summary.bytes += f.bytes;
                let rec = Arc::new(f.record);
                for &id in ids {
                    graph.serve_remote(id, rec.clone());
                    served += 1;
                }
            }
            Fetch::Miss => {}
            Fetch::Rejected(why) => {
                for &id in ids {
                    summary
                        .rejected
                        .push((graph.nodes[id].address.clone(), why.clone()));
                }
            }
            Fetch::Unreachable(m) => {
                summary.unreachable.get_or_insert(m);
            }
        }
    }
    summary.rejected.sort();
    served
}

/// Plan and pull (a graph in plan mode): expands `graph` as far as the store and the remote
/// allow, round after round.
pub async fn expand_with_remote(
    graph: &mut Graph<'_>,
    remote: &dyn RemoteCache,
    store: Option<&Store>,
    summary: &mut RemoteSummary,
) {
    graph.ask_remote = true;
    loop {
        let new = graph.advance();
        if new.is_empty() {
            break;
        }
        serve_round(graph, &new, remote, store, summary).await;
        graph.settle_unserved(&new);
    }
}
