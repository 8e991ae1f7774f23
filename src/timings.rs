//! Phase timings for profiling: with `BENCH_TIMINGS=1` in the environment, [`mark`] prints the
//! milliseconds since the process's first mark and since the previous mark, and the process's
//! resident memory then, to stderr. Without it, a mark costs one relaxed load.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn start() -> Option<&'static Instant> {
    static START: OnceLock<Option<Instant>> = OnceLock::new();
    START
        .get_or_init(|| std::env::var_os("BENCH_TIMINGS").map(|_| Instant::now()))
        .as_ref()
}

/// Prints `phase` with the time since the first mark and since the last one, and the resident
/// memory (when enabled).
pub fn mark(phase: &str) {
    static LAST_US: AtomicU64 = AtomicU64::new(0);
    let Some(start) = start() else { return };
    let now = start.elapsed().as_micros() as u64;
    let last = LAST_US.swap(now, Ordering::Relaxed);
    eprintln!(
        "timing: {:>8.1} ms (+{:>7.1}) [rss {:>4} MiB] {phase}",
        now as f64 / 1000.0,
        (now - last) as f64 / 1000.0,
        resident_mib(),
    );
}

/// This process's resident memory in MiB (`/proc/self/status`'s `VmRSS`), or 0 where that
/// cannot be read.
fn resident_mib() -> u64 {
    let status = fs_err::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib / 1024)
}

/// Prints bench's own CPU time and peak memory so far (this process, all its threads; not its
/// children: the jails, shells and tests it ran), when enabled: what `scripts/bench-fill.sh`
/// reads per task.
pub fn usage() {
    use nix::sys::resource::{UsageWho, getrusage};
    if start().is_none() {
        return;
    }
    if let Ok(u) = getrusage(UsageWho::RUSAGE_SELF) {
        let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        eprintln!(
            "usage: user {:.3} s, sys {:.3} s, max RSS {} KiB",
            secs(u.user_time()),
            secs(u.system_time()),
            u.max_rss()
        );
    }
}

/// Whether marks print (to skip building a phase name nobody reads).
pub fn enabled() -> bool {
    start().is_some()
}
