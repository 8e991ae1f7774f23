//! bench's ports of the official SWE-bench log parsers agree with the official ones, status
//! word by status word: every fixture log in `tests/fixtures/logs/swebench-<name>/` is parsed
//! by bench's `swebench-<name>` and by upstream's `parse_log_<name>` (the `swebench` package,
//! 5.0.2, through `tests/oracle/swebench_parse.py`), and the two maps must be equal, in the
//! same insertion order (upstream's truncated-id matching depends on it). Upstream's
//! per-instance parsers (`parse_log_jekyll`, `parse_log_immutable_js`) are run on the
//! fixtures of the parsers they pick, for every instance id they know and one they do not.
//!
//! Also: `src/protocols/swe_bench/specs.toml` is exactly what `scripts/swebench-specs.py`
//! writes from the swebench 4.1.0 wheel named by `BENCH_SWEBENCH_4_WHEEL` (`.ci/run` downloads
//! it).
//!
//! Under CI=true a missing `swebench` package or wheel fails; elsewhere the tests print a note
//! and pass.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bench::parsers::swebench::{for_instance, raw_parser, upstream_name, version_picking};

fn oracle_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import swebench.harness.log_parsers"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if common::ci() {
            panic!("CI=true but python package swebench is missing: pip install swebench==5.0.2");
        }
        eprintln!("note: skipping: python package swebench missing");
    }
    ok
}

fn logs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs")
}

/// (bench parser, log) of every `swebench-*` fixture.
fn fixtures() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for d in fs_err::read_dir(logs()).unwrap().flatten() {
        let name = d.file_name().to_string_lossy().into_owned();
        if !name.starts_with("swebench-") {
            continue;
        }
        for f in fs_err::read_dir(d.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "log") {
                out.push((name.clone(), f.path()));
            }
        }
    }
    out.sort();
    out
}

/// One case for the oracle: upstream's parser, the log, the instance id.
struct Case {
    bench: String,
    upstream: String,
    log: PathBuf,
    instance_id: String,
    /// The row's version (upstream's by-version dispatchers read it).
    version: String,
}

fn run_oracle(cases: &[Case]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let input: Vec<serde_json::Value> = cases
        .iter()
        .map(|c| {
            serde_json::json!({
                "parser": c.upstream, "log_path": c.log, "instance_id": c.instance_id,
                "version": c.version,
            })
        })
        .collect();
    let path = dir.path().join("cases.json");
    fs_err::write(&path, serde_json::to_vec(&input).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/swebench_parse.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn compare(cases: &[Case], verdicts: &[serde_json::Value]) -> usize {
    let mut compared = 0;
    for (c, v) in cases.iter().zip(verdicts) {
        let what = format!("{} on {}", c.bench, c.log.display());
        let want = v["statuses"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: upstream raised: {}", v["error"]));
        let log = String::from_utf8_lossy(&fs_err::read(&c.log).unwrap()).into_owned();
        let parse = raw_parser(&c.bench).unwrap_or_else(|| panic!("{what}: no bench parser"));
        let mine: Vec<serde_json::Value> = parse(&log)
            .iter()
            .map(|(k, w)| serde_json::json!([k, w]))
            .collect();
        assert_eq!(&mine, want, "{what}: status words (in order)");
        compared += want.len();
    }
    compared
}

#[test]
fn every_swebench_parser_agrees_with_the_official_one_on_its_fixtures() {
    if !oracle_ready() {
        return;
    }
    let cases: Vec<Case> = fixtures()
        .into_iter()
        .map(|(bench, log)| Case {
            upstream: upstream_name(&bench)
                .unwrap_or_else(|| panic!("{bench}: no upstream name"))
                .to_string(),
            version: version_picking(&bench).unwrap_or_default().to_string(),
            bench,
            log,
            instance_id: String::new(),
        })
        .collect();
    // Every upstream-compatible parser has a fixture.
    for name in bench::parsers::builtin_parser_names() {
        if name.starts_with("swebench-") {
            assert!(cases.iter().any(|c| c.bench == *name), "{name}: no fixture");
        }
    }
    let verdicts = run_oracle(&cases);
    assert_eq!(verdicts.len(), cases.len());
    let statuses = compare(&cases, &verdicts);
    assert!(statuses > 200, "only {statuses} statuses compared");
}

#[test]
fn per_instance_parsers_pick_as_upstream_does() {
    if !oracle_ready() {
        return;
    }
    let mut cases = Vec::new();
    let mut unknown = Vec::new();
    for (dispatch, upstream, ids) in [
        (
            "swebench-jekyll",
            "parse_log_jekyll",
            &[
                "jekyll__jekyll-9141",
                "jekyll__jekyll-8047",
                "jekyll__jekyll-8167",
                "jekyll__jekyll-8761",
                "jekyll__jekyll-8771",
                "jekyll__jekyll-9999",
            ][..],
        ),
        (
            "swebench-immutable-js",
            "parse_log_immutable_js",
            &[
                "immutable-js__immutable-js-2006",
                "immutable-js__immutable-js-2005",
                "immutable-js__immutable-js-1999",
            ][..],
        ),
    ] {
        for id in ids {
            match for_instance(dispatch, id) {
                Ok(bench) => {
                    for (b, log) in fixtures().into_iter().filter(|(b, _)| *b == bench) {
                        cases.push(Case {
                            bench: b,
                            upstream: upstream.to_string(),
                            log,
                            instance_id: id.to_string(),
                            version: String::new(),
                        });
                    }
                }
                Err(why) => {
                    assert!(why.contains(upstream), "{why}");
                    unknown.push(Case {
                        bench: dispatch.to_string(),
                        upstream: upstream.to_string(),
                        log: fixtures()[0].1.clone(),
                        instance_id: id.to_string(),
                        version: String::new(),
                    });
                }
            }
        }
    }
    assert_eq!(unknown.len(), 2);
    let verdicts = run_oracle(&cases);
    compare(&cases, &verdicts);
    // Where bench knows no parser, upstream raises.
    for v in run_oracle(&unknown) {
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.contains("Unknown instance id")),
            "{v}"
        );
    }
}

#[test]
fn specs_toml_is_what_the_generator_writes_from_the_wheel() {
    // `.ci/run` downloads the wheel there and sets the variable.
    let default = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/ci-wheels/swebench-4.1.0-py3-none-any.whl");
    let wheel = std::env::var_os("BENCH_SWEBENCH_4_WHEEL")
        .or_else(|| default.is_file().then(|| default.clone().into_os_string()));
    let Some(wheel) = wheel else {
        if common::ci() {
            panic!(
                "CI=true but BENCH_SWEBENCH_4_WHEEL is unset: pip download --no-deps swebench==4.1.0"
            );
        }
        eprintln!("note: skipping: BENCH_SWEBENCH_4_WHEEL unset");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg(root.join("scripts/swebench-specs.py"))
        .arg(&wheel)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let on_disk = fs_err::read(root.join("src/protocols/swe_bench/specs.toml")).unwrap();
    assert!(
        out.stdout == on_disk,
        "src/protocols/swe_bench/specs.toml is stale: run scripts/swebench-specs.py {} > src/protocols/swe_bench/specs.toml",
        Path::new(&wheel).display()
    );
}
