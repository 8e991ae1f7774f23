//! The sequence of `bench apply`, from the manifest to the last event: the store's lock, the
//! no-op memo, datasets, preflight checks, task images, the backend (`backend::open`), the
//! remote cache, the dispatcher (`apply.rs`), and `run_finished` (`summary.rs`). With the
//! helpers other commands share (pulling and resolving images, opening the remote cache, the
//! offline hint). Not the CLI's parsing (`cli.rs`) nor any rendering (`events/`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use miette::{IntoDiagnostic, Report, miette};

use crate::cache::{self, PublicKey, RemoteCache};
use crate::events::Events;
use crate::exit_codes;
use crate::manifest::{self, Manifest, StageKind};
use crate::run::{self, ApplyOptions, remote::RemoteSummary};
use crate::store::{Store, StoreLock, default_store_path};

/// `bench apply`: locks the store, takes the no-op memo's path when nothing changed, fetches
/// the datasets, checks what this machine can run, pulls and resolves the task images, opens
/// the backend and the remote cache, runs the dispatcher, and ends the event stream with
/// `run_finished`. `store` is `--store` (default: `.bench` beside the manifest). Returns the
/// exit code.
pub fn apply_manifest(
    store: Option<&Path>,
    file: &Path,
    events: Events,
    flags: ApplyFlags<'_>,
) -> Result<u8, Report> {
    let ApplyFlags { verify, strict, .. } = flags;
    crate::timings::mark("start");
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    // `BENCH_NO_NOOP_MEMO=1` takes the full path and leaves the memo alone (to measure that
    // path, or to rule the memo out); so does `--verify`, which reads every blob, and `--rerun`.
    let use_memo =
        std::env::var_os("BENCH_NO_NOOP_MEMO").is_none() && !verify && flags.rerun.is_none();
    let Opened {
        mut m,
        taken,
        rerun,
        store,
        lock,
        mut memo_read,
    } = open_locked(file, store, &flags, use_memo, &command, &events)?;
    crate::timings::mark("store locked, workspaces swept");
    // Without a no-op memo, the records the last apply of this manifest used are read on two
    // threads while the datasets load (a no-op apply without a memo is mostly these reads).
    // With one, this apply most likely has nothing to run: nothing is read ahead unless the
    // memo fails its check (an edit: work will run, and the reads are a small part of it).
    let early = (!use_memo || (memo_read.is_none() && !run::noop::exists(&store, &m.path)))
        .then(|| index_and_prefetch(&store, &m.path));
    crate::timings::mark("manifest index loaded");
    // With a memo, on the local backend (no images to prepare or resolve), directories of local
    // tasks are first matched by their stat signatures: unchanged, their snapshots come from
    // the store without a task read (tasks/dir_stamp.rs).
    if use_memo && early.is_none() && !run::backend_config(&m).uses_images() {
        let memo = run::local_snapshots(&m, &store, &taken)
            .inspect(|_| crate::timings::mark("datasets matched by stat"))
            .and_then(|snapshots| noop_memo(&m, &store, &snapshots, memo_read.take()));
        if let Some(finished) = noop_from_memo(&m, file, &store, memo, &command, &events)? {
            return Ok(noop_finished(finished, lock, strict, &events));
        }
    }
    // Hub datasets are fetched (into the store, under the lock) before anything runs.
    let (datasets, unavailable) =
        run::load_datasets_taken(&m, Some(&store), true, Some(&taken)).map_err(fetch_error)?;
    crate::timings::mark("datasets loaded");
    preflight(&m, &unavailable)?;
    // Missing task images are pulled now, before any node starts (never in a timed phase).
    prepare_images(
        &m,
        &datasets,
        &store,
        run::images::DiskScope::Apply,
        &events,
    )?;
    resolve_images(&mut m, &datasets, &events)?;
    run::images::mark_used(&m, &store).map_err(|e| miette!("{e}"))?;
    crate::timings::mark("images resolved");
    // Nothing changed since an apply that had nothing to run: no graph to build (run/noop.rs).
    let memo = (use_memo && early.is_none())
        .then(|| noop_memo(&m, &store, &run::snapshots_of(&datasets), memo_read.take()))
        .flatten();
    if let Some(finished) = noop_from_memo(&m, file, &store, memo, &command, &events)? {
        return Ok(noop_finished(finished, lock, strict, &events));
    }
    let (index, prefetch) = early.unwrap_or_else(|| index_and_prefetch(&store, &m.path));
    let prefetched = prefetch.join().unwrap_or_default();
    crate::timings::mark("records prefetched");
    let rerun = rerun
        .map(|spec| reruns_selected(&spec, &store, &index, &m, &flags, &events))
        .unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .into_diagnostic()?;
    crate::timings::mark("runtime built");
    let run_id = run::new_run_id();
    let backend = runtime
        .block_on(backend_for(&m, &store, &run_id, &events))
        .map_err(|e| miette!("{e}"))?;
    programs_in_images(&runtime, &m, &datasets, &store, backend.as_ref())?;
    let remote = open_remote(&m, m.cache.push, &events)?;
    let push = m.cache.push;
    let shipped = shipped_runner(&m, &store, remote.as_ref())?;
    let result = runtime
        .block_on(run::apply(
            Arc::new(m),
            store,
            Arc::new(datasets),
            backend,
            run_id,
            ApplyOptions {
                command,
                events: events.clone(),
                prefetched,
                index: Some(index),
                noop_memo: use_memo,
                verify_blobs: verify,
                remote,
                push,
                shipped,
                rerun,
            },
        ))
        .map_err(Report::new)?;
    // Every command's processes were killed when it ended; a blocked output reader (a process
    // that escaped every tag) must not keep bench from exiting.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    crate::timings::mark("applied");
    drop(lock);
    crate::timings::mark("lock released");
    let (mut finished, code) = ending(&result, file, push, &events);
    let code = strictly(&mut finished, code, strict, &events);
    events.emit(crate::events::Event::RunFinished(finished));
    crate::timings::mark("reports printed");
    Ok(code)
}

/// A manifest loaded and its store locked ([`open_locked`]).
struct Opened {
    m: Manifest,
    taken: run::TakenSignatures,
    rerun: Option<run::RerunSpec>,
    store: Store,
    lock: StoreLock,
    /// The no-op memo as read while the manifest loaded ([`lock_early`]), if it was.
    memo_read: Option<run::noop::Read>,
}

/// Loads the manifest, checks what this build cannot run, and locks the store. A store that
/// holds a no-op memo of this manifest is locked, and the memo read and its stats checked,
/// while the manifest loads (both are stat-bound: together they keep the cores busier). Only
/// that: a store that is not there is made after the manifest loads, and a manifest refused is
/// refused with the store unlocked.
fn open_locked(
    file: &Path,
    store: Option<&Path>,
    flags: &ApplyFlags<'_>,
    use_memo: bool,
    command: &str,
    events: &Events,
) -> Result<Opened, Report> {
    let (loaded, taken_early) = std::thread::scope(|s| {
        let early = use_memo.then(|| s.spawn(|| lock_early(file, store, command)));
        let loaded = load_taking_signatures(file, store);
        (loaded, early.and_then(|h| h.join().ok().flatten()))
    });
    let (m, taken) = loaded?;
    crate::timings::mark("manifest loaded");
    let rerun = rerun_spec(&m, flags)?;
    // The local jail's probe (part of local keys) runs while the datasets load; the first key
    // waits for it if it has not finished.
    crate::backend::warm_up(&run::backend_config(&m));
    preflight(&m, &[])?;
    let store_root = store
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_store_path(&m.dir));
    // The store locked early is this apply's store (else its lock is released here).
    let (store, lock, memo_read) = match taken_early.filter(|e| e.root == store_root) {
        Some(e) => {
            let (store, lock) = after_lock(&m, e.store, e.lock, events);
            (store, lock, e.memo)
        }
        None => {
            let (store, lock) = lock_store(&m, &store_root, command, events)?;
            (store, lock, None)
        }
    };
    Ok(Opened {
        m,
        taken,
        rerun,
        store,
        lock,
        memo_read,
    })
}

/// Ends a no-op apply served by its memo: the lock released, the last event emitted. Returns
/// the exit code.
fn noop_finished(
    mut finished: crate::events::RunFinished,
    lock: StoreLock,
    strict: bool,
    events: &Events,
) -> u8 {
    drop(lock);
    let code = strictly(&mut finished, exit_codes::OK, strict, events);
    events.emit(crate::events::Event::RunFinished(finished));
    crate::timings::mark("reports printed");
    code
}

/// Docker: each harness's program looked for in the image its agents run in, before any node
/// (`programs.rs`); every program missing is named, with the fix.
fn programs_in_images(
    runtime: &tokio::runtime::Runtime,
    m: &Manifest,
    datasets: &BTreeMap<String, crate::tasks::TaskSet>,
    store: &Store,
    backend: &dyn crate::backend::Backend,
) -> Result<(), Report> {
    if !run::backend_config(m).uses_images() {
        return Ok(());
    }
    let problems = runtime
        .block_on(run::programs::missing_in_images(
            m, datasets, store, backend,
        ))
        .map_err(|e| miette!(help = "nothing was run", "{e}"))?;
    if problems.is_empty() {
        return Ok(());
    }
    Err(miette!(
        help = "nothing was run",
        "{} cannot run here:\n  - {}",
        m.path.display(),
        problems.join("\n  - ")
    ))
}

/// `bench apply`'s flags beside the manifest.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApplyFlags<'a> {
    /// `--verify`: re-hash every blob a cached result needs.
    pub verify: bool,
    /// `--strict`: a report that measured nothing fails the apply.
    pub strict: bool,
    /// `--rerun`: the stored pairs to run again (`run/rerun.rs`).
    pub rerun: Option<&'a str>,
    /// `--timeout`: the reruns' deadline.
    pub timeout: Option<&'a str>,
}

/// `--rerun` parsed against the manifest; refused where its attempts could not run as asked.
fn rerun_spec(m: &Manifest, flags: &ApplyFlags<'_>) -> Result<Option<run::RerunSpec>, Report> {
    let Some(words) = flags.rerun else {
        return Ok(None);
    };
    let spec = run::RerunSpec::parse(words, flags.timeout, m).map_err(|e| miette!("{e}"))?;
    if spec.timeout.is_some() && !matches!(m.execution, manifest::Execution::Local) {
        return Err(miette!(
            help = "rerun without --timeout, or run the reruns here: remove [execution] for this apply",
            "--timeout cannot reach shipped solves: a worker runs the job its key names, with the stage's timeout"
        ));
    }
    Ok(Some(spec))
}

/// The pairs `--rerun` selects from the last apply's records, said in a note.
fn reruns_selected(
    spec: &run::RerunSpec,
    store: &Store,
    index: &crate::store::Index,
    m: &Manifest,
    flags: &ApplyFlags<'_>,
    events: &Events,
) -> std::collections::HashMap<String, crate::graph::RerunOf> {
    let selected = spec.select(store, index, m);
    let words = flags.rerun.unwrap_or_default();
    if selected.is_empty() {
        events.note(format!(
            "--rerun {words}: no stored pair of {} matches; nothing runs again",
            m.path.display()
        ));
    } else {
        let mut from: BTreeMap<&str, usize> = BTreeMap::new();
        for r in selected.values() {
            *from.entry(r.outcome.as_str()).or_default() += 1;
        }
        let from: Vec<String> = from.iter().map(|(o, n)| format!("{n} {o}")).collect();
        events.note(format!(
            "--rerun {words}: {} pairs run again as a new attempt ({}){}",
            selected.len(),
            from.join(", "),
            spec.timeout
                .map(|t| format!(", with a deadline of {}", humantime::format_duration(t)))
                .unwrap_or_default()
        ));
    }
    selected
}

/// The manifest's index, and the reading of the records it names on two threads.
fn index_and_prefetch(store: &Store, manifest: &Path) -> (crate::store::Index, Prefetch) {
    let index = store.load_index(manifest);
    let mut keys: Vec<String> = index.nodes.values().cloned().collect();
    keys.sort_unstable();
    keys.dedup();
    let store = store.clone();
    (
        index,
        std::thread::spawn(move || store.prefetch_light(keys, 2)),
    )
}

/// Records read ahead, by key.
type Prefetch =
    std::thread::JoinHandle<std::collections::HashMap<String, crate::store::ActionRecord>>;

/// Opens the store and takes its lock (naming a dead holder it took over from), then sweeps
/// what dead runs left: workspaces, and temp files of writes that never finished.
fn lock_store(
    m: &Manifest,
    store_root: &Path,
    command: &str,
    events: &Events,
) -> Result<(Store, StoreLock), Report> {
    let store = Store::open(store_root)
        .map_err(|e| miette!("cannot open the store {}: {e}", store_root.display()))?;
    let lock = StoreLock::acquire(store_root, command).map_err(|e| {
        miette!(
            help = "wait for it to finish, or use another store with --store",
            "{e}"
        )
    })?;
    Ok(after_lock(m, store, lock, events))
}

/// A store locked while the manifest loaded, with its no-op memo read then (`lock_early`).
struct Early {
    root: std::path::PathBuf,
    store: Store,
    lock: StoreLock,
    memo: Option<run::noop::Read>,
}

/// The store of the manifest at `file` locked and its no-op memo read (`run::noop::read`),
/// before the manifest is loaded: only when the store exists and holds a memo of the manifest
/// (the memo's path is the manifest's canonical path's). `None` otherwise, or when its lock is
/// held: the apply then locks after loading the manifest, as ever, and says so there.
fn lock_early(file: &Path, store: Option<&Path>, command: &str) -> Option<Early> {
    let canonical = fs_err::canonicalize(file).ok()?;
    let root = match store {
        Some(s) => s.to_path_buf(),
        None => default_store_path(canonical.parent()?),
    };
    if !run::noop::exists(&Store::open_existing(&root)?, &canonical) {
        return None;
    }
    let lock = StoreLock::acquire(&root, command).ok()?;
    let store = Store::open(&root).ok()?;
    let memo = run::noop::read(&store, &canonical);
    Some(Early {
        root,
        store,
        lock,
        memo,
    })
}

/// What follows taking the store's lock: a note if the last holder died, and the sweep of what
/// dead runs left.
fn after_lock(m: &Manifest, store: Store, lock: StoreLock, events: &Events) -> (Store, StoreLock) {
    if let Some(prev) = &lock.took_over_from {
        events.note(format!(
            "the previous apply (pid {} on {}, since {}) died holding the store; its unfinished work reruns",
            prev.pid, prev.host, prev.since
        ));
    }
    // Holding the lock, anything in tmp/ was left by a dead run (partial dataset downloads in
    // tmp/downloads are kept: the fetch resumes them), and so is any temp file of a write that
    // never finished.
    crate::backend::sweep_workspaces(&store.tmp_dir());
    if lock.took_over_from.is_some() || store.has_dead_runs() {
        // The report directories are written atomically too: a report killed mid-write left
        // its temp files there.
        let reports = m.stages.values().filter_map(|s| match &s.kind {
            StageKind::Report(r) => Some(r.out.as_path()),
            _ => None,
        });
        let n = store.sweep_temp_files()
            + reports
                .map(crate::store::sweep_temp_files_under)
                .sum::<usize>();
        if n > 0 {
            events.note(format!("removed {n} temp files left by a dead writer"));
        }
    }
    (store, lock)
}

/// The manifest at `file`, its local datasets' stat signatures taken as it loads: one matching
/// the stamp an earlier apply stored with a clean verdict spares reading every task.toml again
/// (`run::TakenSignatures`); the no-op memo and the datasets' load reuse them. `store` is
/// `--store` (default: `.bench` beside the manifest, as the apply then opens).
fn load_taking_signatures(
    file: &Path,
    store: Option<&Path>,
) -> Result<(Manifest, run::TakenSignatures), Report> {
    let taken = run::TakenSignatures::new(store.map(Path::to_path_buf).or_else(|| {
        let canonical = fs_err::canonicalize(file).ok()?;
        Some(default_store_path(canonical.parent()?))
    }));
    let m = manifest::load_trusting(file, &|dir| taken.checked(dir)).map_err(Report::new)?;
    Ok((m, taken))
}

/// The exit code of an apply that ended with `code`: under `--strict`, a report that measured
/// nothing (a warning otherwise) makes it an error, said in a note.
fn strictly(
    finished: &mut crate::events::RunFinished,
    code: u8,
    strict: bool,
    events: &Events,
) -> u8 {
    let warned = finished.reports.iter().any(|r| !r.warnings.is_empty());
    if strict && warned && code == exit_codes::OK {
        events.note("--strict: a report measured nothing (its warning says why); exit 1");
        finished.exit_code = exit_codes::ERROR;
        exit_codes::ERROR
    } else {
        code
    }
}

/// The `run_finished` event of a dispatched apply, and its exit code.
fn ending(
    result: &run::ApplyResult,
    file: &Path,
    push: bool,
    events: &Events,
) -> (crate::events::RunFinished, u8) {
    if let Some(r) = &result.remote {
        let computed = result.stages.iter().map(|s| s.done).sum::<u64>();
        remote_notes(r, push && computed > 0, events);
    }
    let (status, code) = if result.interrupted {
        (
            crate::events::RunStatus::Interrupted,
            exit_codes::INTERRUPTED,
        )
    } else if !result.failed.is_empty() {
        (crate::events::RunStatus::Failed, exit_codes::NODES_FAILED)
    } else {
        (crate::events::RunStatus::Complete, exit_codes::OK)
    };
    let finished = run::summary::run_finished(run::summary::Ending {
        run_id: &result.run_id,
        status,
        exit_code: code,
        stages: result.stages.clone(),
        reports: &result.reports,
        failed: &result.failed,
        manifest: file,
        remote: result.remote.as_ref(),
    });
    (finished, code)
}

/// The no-op memo of `m` checked against its inputs now, `snapshots` its datasets' (see
/// run/noop.rs); `None`: no memo, or something changed.
fn noop_memo(
    m: &Manifest,
    store: &Store,
    snapshots: &run::Snapshots,
    read: Option<run::noop::Read>,
) -> Option<run::noop::Checked> {
    let memo = crate::graph::JobBuilder::new(m)
        .ok()
        .and_then(|jobs| run::noop::fingerprint(m, snapshots, &jobs))
        .inspect(|_| crate::timings::mark("no-op fingerprint made"))
        .and_then(|fp| run::noop::check(store, m, &fp, read));
    crate::timings::mark("no-op memo checked");
    memo
}

/// A no-op apply from a checked memo: the reports to print, or `None` (no memo, or its path
/// gave way: the full path runs).
fn noop_from_memo(
    m: &Manifest,
    file: &Path,
    store: &Store,
    memo: Option<run::noop::Checked>,
    command: &str,
    events: &Events,
) -> Result<Option<crate::events::RunFinished>, Report> {
    let Some(memo) = memo else {
        return Ok(None);
    };
    let run_id = run::new_run_id();
    let record = run::new_run_record(m, &run_id, command);
    let done = run::noop::apply(m, store, memo, record, events).map_err(|e| miette!("{e}"))?;
    if done.is_some() {
        crate::timings::mark("no-op applied");
    }
    Ok(done.map(|d| {
        run::summary::run_finished(run::summary::Ending {
            run_id: &run_id,
            status: crate::events::RunStatus::Complete,
            exit_code: exit_codes::OK,
            stages: d.stages,
            reports: &d.reports,
            failed: &[],
            manifest: file,
            remote: None,
        })
    }))
}

/// Refuses, before anything starts, what this build cannot run.
fn preflight(m: &Manifest, unavailable: &[String]) -> Result<(), Report> {
    let mut problems = Vec::new();
    let backend = run::backend_config(m);
    // Rows of SWE-bench-shaped datasets are container-image tasks: grading (and solving) them
    // needs the docker backend; the sample stage and `bench tasks` work without it.
    let grades = m.stages.values().any(|s| {
        matches!(
            s.kind,
            StageKind::Gold(_) | StageKind::Solve(_) | StageKind::Grade(_)
        )
    });
    for (name, d) in &m.datasets {
        if d.format == manifest::DatasetFormat::BrainBench {
            if grades && backend.uses_images() {
                problems.push(format!(
                    "dataset `{name}` holds brain bench tasks, which run on the local backend in this build: set `[backend] kind = \"local\"`"
                ));
            }
            continue;
        }
        if !grades || d.format == manifest::DatasetFormat::Local {
            continue;
        }
        if !backend.uses_images() {
            problems.push(format!(
                "dataset `{name}` holds container-image tasks: solving and grading them needs `[backend] kind = \"docker\"` (`bench tasks` and sample-only manifests work anywhere)"
            ));
        }
    }
    for d in unavailable {
        problems.push(format!("dataset `{d}` could not be loaded"));
    }
    let mut missing_env = BTreeSet::new();
    // harness -> the teams that run it, for the program check
    let mut programs: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for stage in m.stages.values() {
        let StageKind::Solve(s) = &stage.kind else {
            continue;
        };
        for t in &s.teams {
            let team = &m.teams[t];
            for a in team.topology.agents() {
                let h = &m.harnesses[&a.harness];
                programs
                    .entry(a.harness.as_str())
                    .or_default()
                    .insert(t.as_str());
                for v in &h.env {
                    if std::env::var_os(v).is_none() {
                        missing_env.insert(v.clone());
                    }
                }
                if let Some(model) = &a.model
                    && let Some(var) = crate::harness::provider::key_var(h.usage, model)
                    && !h.env.iter().any(|v| v == var)
                {
                    problems.push(format!(
                        "team `{t}` runs `{a}`, which reads its key from {var}, but `[harnesses.{}] env` does not pass it; add `env = [\"{var}\"]` (and the endpoint's variable, e.g. OPENAI_API_BASE)",
                        a.harness
                    ));
                }
                if s.max_cost_usd.is_some()
                    && !s.allow_unpriced
                    && let Some(fix) = super::budget::unpriced_fix(m, a)
                {
                    problems.push(format!(
                        "stage `{}` has a budget, but team `{t}` runs `{a}`, whose cost cannot be priced; {fix}; or set `allow_unpriced = true` on the stage to count priced spend only",
                        stage.name,
                    ));
                }
            }
        }
    }
    for (h, teams) in &programs {
        let teams: Vec<&str> = teams.iter().copied().collect();
        let harness = &m.harnesses[*h];
        problems.extend(crate::harness::preflight::ignored_variables(
            h, harness, &teams,
        ));
        // On the host (no images to install programs into), each harness's program must be there.
        if !backend.uses_images() {
            let missing = crate::harness::preflight::missing_program(h, harness, &teams);
            problems.extend(missing.or_else(|| hidden_in_jail(h, harness, &teams)));
        }
    }
    if !missing_env.is_empty() {
        problems.push(format!(
            "missing environment variables needed by the teams' harnesses: {}",
            missing_env.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        problems.sort();
        problems.dedup();
        Err(miette!(
            help = "nothing was run",
            "{} cannot run here:\n  - {}",
            m.path.display(),
            problems.join("\n  - ")
        ))
    }
}

/// The problem with a harness whose program bench finds under /tmp (directly or through a
/// link) but the local jail, which shows the host's /tmp empty but for the PATH's directories
/// and their prefixes, does not: looked up inside a jail as an agent's sees the host. A
/// program elsewhere is shown as it is: nothing is run for it.
fn hidden_in_jail(name: &str, h: &crate::manifest::Harness, teams: &[&str]) -> Option<String> {
    let program = crate::harness::preflight::program(h)?;
    let found = crate::harness::preflight::host_path(&program)?;
    let real = fs_err::canonicalize(&found).unwrap_or_else(|_| found.clone());
    let under_tmp = |p: &Path| p.starts_with("/tmp") || p.starts_with("/var/tmp");
    if !under_tmp(&found) && !under_tmp(&real) {
        return None;
    }
    let path = std::env::var("PATH").unwrap_or_default();
    match crate::backend::jail::finds(&program, &path) {
        Some(false) => Some(crate::harness::preflight::hidden_program(
            name, teams, &program, &found,
        )),
        _ => None,
    }
}

/// A dataset that could not be fetched; when the network is what failed, the help says what
/// is offline and how to go on.
pub fn fetch_error(e: String) -> Report {
    match offline_help(&e) {
        Some(help) => miette!(code = "bench::offline", help = help, "{e}"),
        None => miette!("{e}"),
    }
}

/// What to do when `message` says a host could not be reached (`None`: it does not).
fn offline_help(message: &str) -> Option<String> {
    const SIGNS: &[&str] = &[
        "failed to lookup address",
        "dns error",
        "Name or service not known",
        "Temporary failure in name resolution",
        "Network is unreachable",
        "Connection refused",
        "No route to host",
        "Connection timed out",
    ];
    if !SIGNS.iter().any(|s| message.contains(s)) {
        return None;
    }
    let host = message
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', ':', ' ']).next().unwrap_or(rest))
        .filter(|h| !h.is_empty());
    let what = match host {
        Some(h) => format!("{h} cannot be reached (is this machine offline?)"),
        None => "the network cannot be reached (is this machine offline?)".to_string(),
    };
    Some(format!(
        "{what}. Hub datasets are fetched once into the store and read from it afterwards; nothing was run. \
         Run again when online (`bench tasks FILE` fetches the datasets alone), set HF_ENDPOINT to a mirror you can reach, \
         or use a store that already holds the dataset (`--store DIR` or BENCH_STORE). \
         Datasets already in the store and `format = \"local\"` datasets need no network."
    ))
}

/// Pulls a docker manifest's missing task images (apply's first step, and `bench pull`),
/// before anything runs; refuses when the daemon's disk lacks the room.
pub fn prepare_images(
    m: &Manifest,
    datasets: &BTreeMap<String, crate::tasks::TaskSet>,
    store: &Store,
    scope: run::images::DiskScope,
    events: &Events,
) -> Result<run::images::Prepared, Report> {
    if !run::backend_config(m).uses_images() {
        return Ok(Default::default());
    }
    let prepared = docker_runtime()?
        .block_on(run::images::prepare(m, datasets, store, scope, events))
        .map_err(|e| {
            let text = e.to_string();
            let help = match e {
                run::images::PrepareError::Disk(_) => {
                    "nothing was run; free disk on the daemon (`bench gc --images --pulled --delete`, `docker image prune`), or lower BENCH_DISK_RESERVE".to_string()
                }
                _ if offline_help(&text).is_some() => {
                    "a registry cannot be reached (is this machine offline?); nothing was run. Pull the task images when online (`bench pull FILE`), or `docker load` them: images already on the daemon need no network".to_string()
                }
                _ => "nothing was run; fix the images or their credentials, then run again".to_string(),
            };
            miette!(help = help, "{}: {text}", m.path.display())
        })?;
    for n in &prepared.notes {
        events.note(n.clone());
    }
    Ok(prepared)
}

/// The backend an apply runs on (`backend::open`), with what a local sandbox must not see:
/// the store (gold patches, other results) and the local datasets (hidden tests, gold
/// patches; brain bench tasks read a git repository that holds their fixes).
async fn backend_for(
    m: &Manifest,
    store: &Store,
    run_id: &str,
    events: &Events,
) -> Result<Arc<dyn crate::backend::Backend>, String> {
    let mut hidden = vec![store.root().to_path_buf()];
    for d in m.datasets.values() {
        if let crate::manifest::DatasetSource::Path(p) = &d.source {
            hidden.push(p.clone());
            if d.format == crate::manifest::DatasetFormat::BrainBench {
                hidden.extend(crate::datasets::brain_bench::repo_paths(p));
            }
        }
    }
    crate::backend::open(crate::backend::OpenSpec {
        config: run::backend_config(m),
        store_root: store.root(),
        tmp: store.tmp_dir(),
        hidden,
        run_id,
        events,
        store_locked: true,
    })
    .await
}

/// A runtime on this thread, for the Docker and registry calls of commands that are not an
/// apply.
pub fn docker_runtime() -> Result<tokio::runtime::Runtime, Report> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .into_diagnostic()
}

/// docker manifests: resolves every task image to its ID (keys use IDs, never tags). Images the
/// daemon does not have are left unresolved; their nodes fail at apply with a clear message.
/// Local manifests: nothing (no Docker needed).
pub fn resolve_images(
    m: &mut Manifest,
    datasets: &BTreeMap<String, crate::tasks::TaskSet>,
    events: &Events,
) -> Result<(), Report> {
    let refs: BTreeSet<String> = datasets
        .values()
        .flat_map(|d| d.tasks.values())
        .flat_map(|t| match &t.base {
            crate::tasks::TaskBase::Image { image, .. } => vec![image.clone()],
            // A build context: the images its Dockerfile starts from.
            crate::tasks::TaskBase::Build { from, .. } => from.clone(),
            crate::tasks::TaskBase::Dir { .. } => vec![],
        })
        .collect();
    if !run::backend_config(m).uses_images() || refs.is_empty() {
        return Ok(());
    }
    let images = docker_runtime()?
        .block_on(crate::backend::resolve_images(
            &run::backend_config(m),
            &refs,
            events,
        ))
        .map_err(|e| miette!("{e}"))?;
    m.backend.images = images;
    Ok(())
}

/// The remote cache of `m` (`None` without `[cache] remote`). With `signing`, this machine's
/// signing key is loaded (a key that is configured but unreadable is an error; none at all
/// only means nothing is uploaded). A remote that cannot even be set up is a note: the
/// command goes on without it.
pub fn open_remote(
    m: &Manifest,
    signing: bool,
    events: &Events,
) -> Result<Option<Arc<dyn RemoteCache>>, Report> {
    match open_remote_or_why(m, signing)? {
        Ok(r) => Ok(r),
        Err(e) => {
            events.note(format!("{e}; going on without the remote cache"));
            Ok(None)
        }
    }
}

/// The runner of `[execution]`: `None` runs every node here.
fn shipped_runner(
    m: &Manifest,
    store: &Store,
    remote: Option<&Arc<dyn RemoteCache>>,
) -> Result<Option<Arc<dyn crate::execution::runner::Runner>>, Report> {
    use crate::execution::slurm_runner::{SlurmPlacement, SlurmRunner};
    let crate::manifest::Execution::Slurm(s) = &m.execution else {
        return Ok(None);
    };
    let (Some(remote), Some(url)) = (remote, &m.cache.remote) else {
        return Err(miette!(
            help = "fix `[cache] remote`: Slurm's jobs read their inputs and send their results through it",
            "`[execution] engine = \"slurm\"` needs the shared cache, which cannot be opened (see the note above)"
        ));
    };
    let bench = match &s.bench {
        Some(b) => b.clone(),
        None => std::env::current_exe().into_diagnostic()?,
    };
    let placement = SlurmPlacement {
        partition: s.partition.clone(),
        account: s.account.clone(),
        qos: s.qos.clone(),
        sbatch: s.sbatch.clone(),
        cpus: s.cpus,
        mem_mb: s.memory_mb,
        time_limit: s.time_limit,
        attempts: s.attempts,
        bench,
        spool: s
            .spool
            .clone()
            .unwrap_or_else(|| store.root().join("slurm")),
        worker_store: s.worker_store.clone(),
        cache_url: url.clone(),
        max_object_bytes: m.cache.max_object_bytes,
        container_cpus: m.backend.cpus,
        poll: std::time::Duration::from_secs(1),
    };
    Ok(Some(Arc::new(SlurmRunner::new(
        crate::execution::slurm::Slurm::new(),
        remote.clone(),
        store.clone(),
        placement,
    ))))
}

/// [`open_remote`] for a command that is about the remote (`bench cache push|pull|status`): a
/// remote that cannot be set up is the error, said once.
pub fn open_remote_required(m: &Manifest, signing: bool) -> Result<Arc<dyn RemoteCache>, Report> {
    match open_remote_or_why(m, signing)? {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err(miette!(
            help = "add `[cache]` with `remote = \"s3://bucket/prefix\"` to the manifest",
            "{} has no remote cache",
            m.path.display()
        )),
        Err(e) => Err(miette!(
            help = "fix `[cache] remote` in the manifest",
            "{e}"
        )),
    }
}

/// The remote, none (no `[cache] remote`), or why it cannot be set up. A signing key that is
/// configured but unreadable is the outer error.
fn open_remote_or_why(
    m: &Manifest,
    signing: bool,
) -> Result<Result<Option<Arc<dyn RemoteCache>>, cache::CacheError>, Report> {
    let Some(url) = &m.cache.remote else {
        return Ok(Ok(None));
    };
    let signer = if signing {
        cache::load_signer()
            .map_err(|e| {
                miette!(
                    help = "fix the key, or unset BENCH_CACHE_KEY / BENCH_CACHE_KEY_FILE",
                    "{e}"
                )
            })?
            .map(Arc::new)
    } else {
        None
    };
    let trust = m
        .cache
        .trust
        .iter()
        .filter_map(|t| PublicKey::parse(t).ok())
        .collect();
    Ok(cache::open(url, trust, signer, m.cache.max_object_bytes)
        .map(|c| Some(Arc::new(c) as Arc<dyn RemoteCache>)))
}

/// What `apply` notes about the remote cache (its counts are in `run_finished`). `push`: it
/// would have uploaded something (pushing is on, and this apply computed a result).
fn remote_notes(r: &RemoteSummary, push: bool, events: &Events) {
    for note in r.notes() {
        events.note(note.strip_prefix("note: ").unwrap_or(&note).to_string());
    }
    if push && !r.signing {
        events.note(
            "no signing key, so nothing computed here was uploaded to the remote cache (`bench cache keygen` makes one)",
        );
    }
    if r.not_uploaded > 0 {
        events.note(format!(
            "{} results were not uploaded to the remote cache; `bench cache push` uploads them later",
            r.not_uploaded
        ));
    }
}
