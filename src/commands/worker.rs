//! `bench worker`: one shipped node, run on this machine (`execution/worker.rs` does the work;
//! here: the arguments, the cache, signals, the exit code).

use std::sync::Arc;

use miette::{IntoDiagnostic, Report, miette};
use tokio_util::sync::CancellationToken;

use crate::cli::{Command, WorkerKind};
use crate::events::{Events, Reporter};
use crate::execution::worker::{WorkerArgs, WorkerReport, work, write_report};
use crate::exit_codes;
use crate::jobs::Kind;
use crate::types::Digest;

pub(super) fn run(command: &Command) -> Result<u8, Report> {
    let Command::Worker {
        kind,
        key,
        cache,
        address,
        store,
        budget_share,
        cpus,
        report,
        max_object_size,
    } = command
    else {
        unreachable!("dispatched on Worker");
    };
    let key = Digest::parse(key).map_err(|e| miette!("--key: {e}"))?;
    let max = max_object_size
        .trim()
        .parse::<bytesize::ByteSize>()
        .map_err(|e| miette!("--max-object-size `{max_object_size}`: {e}"))?
        .as_u64();
    let signer = crate::cache::load_signer()
        .map_err(|e| miette!("{e}"))?
        .map(Arc::new);
    let remote = crate::cache::open(cache, Vec::new(), signer, max).map_err(|e| miette!("{e}"))?;
    let args = WorkerArgs {
        kind: match kind {
            WorkerKind::Solve => Kind::Solve,
            WorkerKind::Grade => Kind::Grade,
        },
        key,
        address: address.clone(),
        store: store
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("bench-worker")),
        budget_share: *budget_share,
        cpus: *cpus,
    };
    let events = Events::new(Reporter::lines());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .into_diagnostic()?;
    let outcome = runtime.block_on(async {
        let cancel = CancellationToken::new();
        let watch = cancel.clone();
        // Slurm's scancel and time limit send SIGTERM; a person at a terminal, SIGINT.
        tokio::spawn(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("SIGTERM can be watched");
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            watch.cancel();
        });
        work(&args, Arc::new(remote), &events, cancel).await
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    if let Some(path) = report {
        write_report(path, &outcome)
            .map_err(|e| miette!("cannot write the report {}: {e}", path.display()))?;
    }
    Ok(match &outcome {
        WorkerReport::Done { key } => {
            events.note(format!("done: {key} is in the cache"));
            exit_codes::OK
        }
        WorkerReport::Failed { key, error } => {
            events.warning(format!("failed: {key}: {}", error.message()));
            match error {
                crate::stages::WorkError::Cancelled => exit_codes::INTERRUPTED,
                _ => exit_codes::NODES_FAILED,
            }
        }
        WorkerReport::Refused { key, reason } => {
            return Err(miette!("refused {key}: {reason}"));
        }
    })
}
