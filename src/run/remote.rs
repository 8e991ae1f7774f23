//! The remote cache in plan and apply: which nodes to ask it for, and what its answers do to
//! the graph. A node that would run (apply: ready; plan: will run) with a key is asked for
//! before it runs; a hit makes it cached (apply: its record and blobs are fetched, verified and
//! committed to the local store; plan: its trusted record is only read), and the expansion goes
//! on from it, so the keys downstream of it are asked for too. A miss, a rejected entry
//! (untrusted, forged, a blob that fails its digest) or a remote that is down leaves the node
//! to run here, with a note.
//!
//! Apply, plan and pull read as a pipeline ([`Reads`]): up to [`IN_FLIGHT`] reads at once
//! across stages, each answer applied to the graph as it arrives, so the keys it makes known
//! are asked for at once, while the other reads go on (each verifying its entry and blobs on
//! its own task).
//!
//! Not here: the transport, signatures and verification (`cache/`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;

use crate::cache::{Fetch, Peek, RemoteCache};
use crate::graph::{Graph, NodeState};
use crate::jobs::Kind;
use crate::store::Store;

/// Reads in flight at once (each one request at a time: its entry, then its blobs).
pub const IN_FLIGHT: usize = 32;

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

/// Applies the answer for one key to its nodes `ids`: a hit serves them all (counted in
/// `summary`), a refused entry is noted for each, and an unreachable remote once. Returns
/// whether they were served, or the refusal's reason.
fn apply_answer(
    graph: &mut Graph<'_>,
    ids: &[usize],
    answer: Fetch,
    summary: &mut RemoteSummary,
) -> Result<bool, String> {
    match answer {
        Fetch::Hit(f) => {
            summary.served += 1;
            summary.blobs += f.blobs;
            summary.bytes += f.bytes;
            let rec = Arc::new(f.record);
            for &id in ids {
                graph.serve_remote(id, rec.clone());
            }
            Ok(true)
        }
        Fetch::Miss => Ok(false),
        Fetch::Rejected(why) => {
            for &id in ids {
                summary
                    .rejected
                    .push((graph.nodes[id].address.clone(), why.clone()));
            }
            Err(why)
        }
        Fetch::Unreachable(m) => {
            summary.unreachable.get_or_insert(m);
            Ok(false)
        }
    }
}

/// Plan and pull (a graph in plan mode): expands `graph` as far as the store and the remote
/// allow, with the reads as a pipeline ([`Reads`]) as in an apply: each answer is applied as it
/// arrives (a node not served will run), and the keys it makes known are asked for at once.
/// With `store` (pull), what is served is fetched whole into it; without (plan), only the
/// trusted records are read.
pub async fn expand_with_remote(
    graph: &mut Graph<'_>,
    remote: Arc<dyn RemoteCache>,
    store: Option<&Store>,
    summary: &mut RemoteSummary,
) {
    graph.ask_remote = true;
    let mut reads = Reads::new(remote, store.cloned());
    let mut new = graph.advance();
    while !new.is_empty() || reads.pending() {
        let now = reads.ask(graph, new, summary);
        graph.settle_unserved(&now);
        for (key, answer) in reads.answers().await {
            let ids = reads.settle(graph, &key, answer, summary);
            graph.settle_unserved(&ids);
        }
        new = graph.advance();
    }
    summary.rejected.sort();
}

/// Reads `key` from the remote: fetched whole into `store` (apply, pull), or without one only
/// its trusted record (plan: nothing is written).
async fn read(remote: &dyn RemoteCache, key: &str, kind: Kind, store: Option<&Store>) -> Fetch {
    let Some(store) = store else {
        return match remote.peek(key, kind).await {
            Peek::Trusted(rec) => Fetch::Hit(Box::new(crate::cache::Fetched {
                record: *rec,
                blobs: 0,
                bytes: 0,
            })),
            Peek::Miss => Fetch::Miss,
            Peek::Rejected(r) => Fetch::Rejected(r),
            Peek::Unreachable(m) => Fetch::Unreachable(m),
        };
    };
    remote.fetch(key, kind, store).await
}

/// The reads of the remote cache (apply, plan, pull), kept in flight across stages:
/// [`Reads::ask`] starts the reads of the nodes that would run (each key once per process),
/// [`Reads::answers`] waits for the next ones to arrive, [`Reads::settle`] applies one to the
/// graph. Every read runs on its own task (downloads, signature and digest checks and store
/// commits of one record overlap with the others'), at most [`IN_FLIGHT`] at once, started in
/// the order asked.
pub struct Reads {
    remote: Arc<dyn RemoteCache>,
    /// Where served results are fetched to (apply, pull); none: records only (plan).
    store: Option<Store>,
    fetches: tokio::task::JoinSet<Fetch>,
    /// The key of each fetch task.
    tasks: HashMap<tokio::task::Id, String>,
    slots: Arc<tokio::sync::Semaphore>,
    /// Keys asked for and not answered yet -> the nodes waiting for the answer.
    waiting: HashMap<String, Vec<usize>>,
    /// Keys whose entry was refused -> why (a node of such a key found later is noted too).
    refused: HashMap<String, String>,
}

impl Reads {
    pub fn new(remote: Arc<dyn RemoteCache>, store: Option<Store>) -> Reads {
        Reads {
            remote,
            store,
            fetches: tokio::task::JoinSet::new(),
            tasks: HashMap::new(),
            slots: Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT)),
            waiting: HashMap::new(),
            refused: HashMap::new(),
        }
    }

    /// Whether fetches are in flight.
    pub fn pending(&self) -> bool {
        !self.fetches.is_empty()
    }

    /// Starts fetching the would-run nodes among `ids` whose key was not asked for yet; a node
    /// whose key is being fetched waits for that fetch. Returns the nodes that wait for nothing
    /// (to admit now), in order.
    pub fn ask(
        &mut self,
        graph: &Graph<'_>,
        ids: Vec<usize>,
        summary: &mut RemoteSummary,
    ) -> Vec<usize> {
        let up = self.remote.down().is_none();
        let mut now = Vec::with_capacity(ids.len());
        for id in ids {
            let n = &graph.nodes[id];
            let key = match (&n.state, &n.key) {
                (NodeState::Ready | NodeState::WillRun, Some(k)) if up => k,
                _ => {
                    now.push(id);
                    continue;
                }
            };
            if let Some(w) = self.waiting.get_mut(key) {
                w.push(id);
            } else if summary.asked.insert(key.clone()) {
                self.waiting.insert(key.clone(), vec![id]);
                self.start(key.clone(), n.kind.output_kind());
            } else {
                if let Some(why) = self.refused.get(key) {
                    summary.rejected.push((n.address.clone(), why.clone()));
                }
                now.push(id);
            }
        }
        now
    }

    fn start(&mut self, key: String, kind: Kind) {
        let (remote, store, slots) = (self.remote.clone(), self.store.clone(), self.slots.clone());
        let k = key.clone();
        let task = self.fetches.spawn(async move {
            let _slot = slots.acquire_owned().await;
            read(remote.as_ref(), &k, kind, store.as_ref()).await
        });
        self.tasks.insert(task.id(), key);
    }

    /// Waits for the next answer, and takes every other one that has arrived meanwhile.
    /// Empty when nothing is in flight.
    pub async fn answers(&mut self) -> Vec<(String, Fetch)> {
        let mut out = Vec::new();
        let Some(first) = self.fetches.join_next_with_id().await else {
            return out;
        };
        out.push(self.answer(first));
        while let Some(next) = self.fetches.try_join_next_with_id() {
            out.push(self.answer(next));
        }
        out
    }

    fn answer(
        &mut self,
        done: Result<(tokio::task::Id, Fetch), tokio::task::JoinError>,
    ) -> (String, Fetch) {
        let (id, fetch) = match done {
            Ok((id, f)) => (id, f),
            Err(e) => (e.id(), Fetch::Unreachable(format!("a fetch failed: {e}"))),
        };
        (self.tasks.remove(&id).unwrap_or_default(), fetch)
    }

    /// Applies the answer for `key` to the nodes waiting for it: served, they are cached;
    /// otherwise they stay ready to run here (a refused entry noted for each). Returns them.
    pub fn settle(
        &mut self,
        graph: &mut Graph<'_>,
        key: &str,
        answer: Fetch,
        summary: &mut RemoteSummary,
    ) -> Vec<usize> {
        let ids = self.waiting.remove(key).unwrap_or_default();
        if let Err(why) = apply_answer(graph, &ids, answer, summary) {
            self.refused.insert(key.to_string(), why);
        }
        ids
    }
}
