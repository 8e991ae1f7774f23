//! `bench cache keygen|push|pull|status`, and opening a manifest's remote cache for plan and
//! apply.

use std::path::Path;
use std::sync::Arc;

use futures_util::StreamExt;
use miette::{IntoDiagnostic, Report, miette};

use crate::cache::{self, CacheError, RemoteCache};
use crate::cli::{CacheCommand, Cli};
use crate::exit_codes;
use crate::graph::{Graph, Mode};
use crate::manifest::Manifest;
use crate::run::{self, remote::RemoteSummary};
use crate::store::{Store, StoreLock};

/// Uploads or downloads at once in `push` and `pull`.
const CONCURRENCY: usize = 16;

pub(super) fn run(cli: &Cli, action: &CacheCommand) -> Result<u8, Report> {
    match action {
        CacheCommand::Keygen { out } => keygen(out.as_deref()),
        CacheCommand::Push { file, quiet } => push(cli, file, *quiet),
        CacheCommand::Pull { file, quiet } => pull(cli, file, *quiet),
        CacheCommand::Status { file, json } => status(file, *json),
    }
}

fn keygen(out: Option<&Path>) -> Result<u8, Report> {
    let path = match out {
        Some(p) => p.to_path_buf(),
        None => std::env::var_os(cache::KEY_FILE_ENV)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
            .or_else(cache::default_key_path)
            .ok_or_else(|| miette!("no home directory for the key: give --out PATH"))?,
    };
    let signer = cache::generate_key_file(&path).map_err(|e| miette!("{e}"))?;
    eprintln!(
        "wrote the signing key {} (keep it secret: it never goes in a manifest or a store)",
        path.display()
    );
    eprintln!("machines that accept this one's results add its public key to `[cache] trust`:");
    println!("{}", signer.public());
    Ok(exit_codes::OK)
}

fn runtime() -> Result<tokio::runtime::Runtime, Report> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .into_diagnostic()
}

fn require_remote(m: &Manifest, signing: bool) -> Result<Arc<dyn RemoteCache>, Report> {
    run::sequence::open_remote_required(m, signing)
}

fn push(cli: &Cli, file: &Path, quiet: bool) -> Result<u8, Report> {
    let m = super::load(file)?;
    let remote = require_remote(&m, true)?;
    if !remote.can_push() {
        return Err(miette!("{}", CacheError::NoSigningKey));
    }
    let root = super::store_path(&cli.store, &m);
    let store = Store::open_existing(&root)
        .ok_or_else(|| miette!("there is no store at {}: nothing to push", root.display()))?;
    let keys = store.action_keys();
    let results: Vec<Result<bool, CacheError>> = runtime()?.block_on(
        futures_util::stream::iter(keys.iter())
            .map(|k| {
                let (remote, store) = (remote.clone(), store.clone());
                async move { remote.push(k, &store, true).await }
            })
            .buffer_unordered(CONCURRENCY)
            .collect(),
    );
    let (mut sent, mut present, mut failed) = (0, 0, Vec::new());
    for r in results {
        match r {
            Ok(true) => sent += 1,
            Ok(false) => present += 1,
            Err(e) => failed.push(e.to_string()),
        }
    }
    if let Some(m) = remote.down() {
        return Err(miette!(
            "the remote cache {} is unreachable: {m} ({sent} records uploaded before it failed)",
            remote.url()
        ));
    }
    failed.sort();
    failed.dedup();
    for f in &failed {
        eprintln!("note: not uploaded: {f}");
    }
    if !quiet {
        eprintln!(
            "pushed {sent} records to {} ({present} there already, {} not uploaded)",
            remote.url(),
            failed.len()
        );
    }
    Ok(if failed.is_empty() {
        exit_codes::OK
    } else {
        exit_codes::ERROR
    })
}

fn pull(cli: &Cli, file: &Path, quiet: bool) -> Result<u8, Report> {
    let mut m = super::load(file)?;
    let remote = require_remote(&m, false)?;
    let root = super::store_path(&cli.store, &m);
    let store =
        Store::open(&root).map_err(|e| miette!("cannot open the store {}: {e}", root.display()))?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let _lock = StoreLock::acquire(&root, &command).map_err(|e| {
        miette!(
            help = "wait for it to finish, or use another store with --store",
            "{e}"
        )
    })?;
    let (datasets, _) =
        run::load_datasets(&m, Some(&store), true).map_err(run::sequence::fetch_error)?;
    run::sequence::resolve_images(&mut m, &datasets, &crate::events::Events::default())?;
    let mut graph =
        Graph::new(&m, Some(&store), &datasets, Mode::Plan).map_err(|e| miette!("{e}"))?;
    let mut summary = RemoteSummary::new(remote.as_ref());
    runtime()?.block_on(run::remote::expand_with_remote(
        &mut graph,
        remote.clone(),
        Some(&store),
        &mut summary,
    ));
    for note in summary.notes() {
        eprintln!("{note}");
    }
    if let Some(m) = &summary.unreachable {
        return Err(miette!(
            "the remote cache {} is unreachable: {m}",
            remote.url()
        ));
    }
    let stages = graph.summaries(&Default::default());
    if !quiet {
        for s in &stages {
            println!(
                "  {:<12} {:<7} fetched {:>6}   cached {:>6}   to run {:>6}",
                s.stage, s.kind, s.remote, s.cached, s.to_run
            );
        }
        println!(
            "pulled {} records ({} blobs, {}) from {}",
            summary.served,
            summary.blobs,
            crate::backend::disk::human(summary.bytes),
            remote.url()
        );
    }
    Ok(exit_codes::OK)
}

fn status(file: &Path, json: bool) -> Result<u8, Report> {
    let m = super::load(file)?;
    let remote = require_remote(&m, false)?;
    let me = cache::load_signer()
        .map_err(|e| miette!("{e}"))?
        .map(|s| s.public().to_string());
    let st = runtime()?
        .block_on(remote.status())
        .map_err(|e| miette!("{e}"))?;
    if json {
        let doc = serde_json::json!({
            "remote": st.url,
            "signing_key": me,
            "trust": m.cache.trust,
            "entries_by_signer": st.entries_by_signer,
            "blobs": st.blobs,
            "blob_bytes": st.blob_bytes,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("status serializes")
        );
        return Ok(exit_codes::OK);
    }
    println!("remote cache {}", st.url);
    match &me {
        Some(k) => println!(
            "  this machine signs as {k}{}",
            if m.cache.trust.contains(k) {
                " (trusted by this manifest)"
            } else {
                " (not in this manifest's trust list)"
            }
        ),
        None => println!("  this machine has no signing key (`bench cache keygen`): it only reads"),
    }
    for (signer, n) in &st.entries_by_signer {
        let mark = if m.cache.trust.contains(signer) {
            "trusted"
        } else {
            "not trusted"
        };
        println!("  {n:>8} records by {signer} ({mark})");
    }
    println!(
        "  {:>8} blobs, {}",
        st.blobs,
        crate::backend::disk::human(st.blob_bytes)
    );
    Ok(exit_codes::OK)
}
