//! Times `parse_log` on a log file: `parse_log_bench <parser> <log-file> [runs]`.
//! Prints one line: parser, tests found, per-status counts and the best parse time.

use std::time::Instant;

use bench::parsers::{TestStatus, parse_log};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: parse_log_bench <parser> <log-file> [runs]");
        std::process::exit(2);
    }
    let log = fs_err::read_to_string(&args[2]).unwrap_or_else(|e| {
        eprintln!("cannot read {}: {e}", args[2]);
        std::process::exit(1);
    });
    let runs: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(5);
    let mut best = f64::INFINITY;
    let mut result = bench::parsers::Statuses::default();
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let parsed = parse_log(&args[1], &log).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1);
        });
        best = best.min(start.elapsed().as_secs_f64());
        // Drop the previous result outside the timed region.
        result = parsed;
    }
    let count = |s: TestStatus| result.values().filter(|v| *v == s).count();
    println!(
        "rust   parser={} bytes={} tests={} pass={} fail={} skip={} best_parse_ms={:.1}",
        args[1],
        log.len(),
        result.len(),
        count(TestStatus::Pass),
        count(TestStatus::Fail),
        count(TestStatus::Skip),
        best * 1e3
    );
}
