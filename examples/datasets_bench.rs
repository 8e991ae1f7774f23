//! Times loading and filtering a MultiLang-shaped parquet file:
//! `datasets_bench [rows] [runs]` (default 100000 rows, 5 runs), or
//! `datasets_bench --file PATH [runs]` for an existing file.
//!
//! Writes `rows` rows (8 languages' worth of ids, dates over 2025-2026, snappy) to a temp file
//! with the test fixtures' writer (or takes the given file), then times, best of `runs`: reading the file into tasks
//! (`read_file`), building the task set (every task's digest and the snapshot), and the seeded
//! sample with since/until/languages filters and a limit. Prints one Markdown table.

use std::time::Instant;

use bench::datasets::fixtures::{Row, Shape, write_parquet};
use bench::datasets::read_file;
use bench::manifest::{DatasetFormat, SampleFilters};
use bench::tasks::{TaskSet, sample};

fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let v = f();
        best = best.min(start.elapsed().as_secs_f64());
        out = Some(v);
    }
    (best, out.expect("at least one run"))
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let given = (args.get(1).map(String::as_str) == Some("--file")).then(|| {
        let path = std::path::PathBuf::from(&args[2]);
        args.drain(1..3);
        path
    });
    let arg = |i: usize| args.get(i).and_then(|a| a.parse().ok());
    let (n, runs): (usize, usize) = match given {
        Some(_) => (0, arg(1).unwrap_or(5)),
        None => (arg(1).unwrap_or(100_000), arg(2).unwrap_or(5)),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = given
        .clone()
        .unwrap_or_else(|| dir.path().join("rust-00000-of-00001.parquet"));
    let langs = ["c", "cpp", "cs", "go", "java", "js", "rust", "ts"];
    let rows: Vec<Row> = (0..n)
        .map(|i| {
            let mut r = Row::new(
                &format!("{}-org__repo{}-{}", langs[i % 8], i % 500, i),
                &format!(
                    "{}-{:02}-{:02}T{:02}:00:00Z",
                    2025 + (i / 7) % 2,
                    1 + (i / 3) % 12,
                    1 + i % 28,
                    i % 24
                ),
            );
            r.fail_to_pass = (0..3).map(|k| format!("tests::case_{i}_{k}")).collect();
            r
        })
        .collect();
    if given.is_none() {
        write_parquet(&path, Shape::MultiLang, &rows).expect("write parquet");
    }
    drop(rows);
    let size = fs_err::metadata(&path).map_or(0, |m| m.len());

    let (t_read, tasks) = best(runs, || {
        read_file(
            DatasetFormat::SweBenchLive,
            &path,
            "data/rust-00000-of-00001.parquet",
        )
        .expect("read")
    });
    let count = tasks.len();
    // The clone for each run is made outside the timed region.
    let mut t_set = f64::INFINITY;
    let mut set = None;
    for _ in 0..runs.max(1) {
        let input = tasks.clone();
        let start = Instant::now();
        let s = TaskSet::new(input);
        t_set = t_set.min(start.elapsed().as_secs_f64());
        set = Some(s);
    }
    let set = set.expect("one run");
    let filters = SampleFilters {
        since: Some("2025-07-01T00:00:00Z".into()),
        until: Some("2026-01-01T00:00:00Z".into()),
        repos: Default::default(),
        languages: ["rust".to_string()].into(),
        instance_ids: Default::default(),
        limit: Some(50),
        seed: 7,
    };
    let (t_sample, ids) = best(runs, || sample(&set, &filters));
    let unfiltered = SampleFilters {
        languages: Default::default(),
        since: None,
        until: None,
        limit: None,
        ..filters.clone()
    };
    let (t_all, all) = best(runs, || sample(&set, &unfiltered));

    println!(
        "| measure ({count} rows, {:.1} MB parquet, best of {runs}) | seconds |",
        size as f64 / 1e6
    );
    println!("|---|---|");
    println!("| read parquet -> tasks | {t_read:.3} |");
    println!("| task set (digests + snapshot) | {t_set:.3} |");
    println!(
        "| sample: since/until/language filters, limit 50 ({} tasks) | {t_sample:.3} |",
        ids.len()
    );
    println!(
        "| sample: no filter, full order ({} tasks) | {t_all:.3} |",
        all.len()
    );
    println!(
        "| **load + filter (read + set + filtered sample)** | **{:.3}** |",
        t_read + t_set + t_sample
    );
}
