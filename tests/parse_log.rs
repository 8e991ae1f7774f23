//! `bench parse-log`: built-in parsers and isolated parser scripts, through the real binary.

mod common;

use common::*;

#[test]
fn builtin_parser_prints_sorted_json() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("test.log");
    fs_err::write(
        &log,
        "tests/test_a.py::test_b PASSED\ntests/test_a.py::test_a[x y] FAILED\n\x1b[32mPASSED\x1b[0m tests/test_a.py::test_c\r\n",
    )
    .unwrap();
    let o = bench_in(dir.path(), &["parse-log", "--parser", "pytest", "test.log"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "tests/test_a.py::test_a[x y]": "fail",
            "tests/test_a.py::test_b": "pass",
            "tests/test_a.py::test_c": "pass",
        })
    );
    let text = stdout(&o);
    let keys: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().split('"').nth(1))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);

    let o = bench_in(dir.path(), &["parse-log", "--parser", "pytset", "test.log"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("did you mean `pytest`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn script_parser_runs_isolated() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("test.log"), "ok a\nbad b\nskipped c\n").unwrap();
    fs_err::write(
        dir.path().join("parser.py"),
        "import os\ndef parser(log):\n    out = {}\n    for line in log.splitlines():\n        status, name = line.split()\n        out[name] = {'ok': 'PASSED', 'bad': 'failed', 'skipped': 'skip'}[status]\n    out['env'] = 'pass' if not os.environ.get('SECRET_TOKEN') else 'fail'\n    return out\n",
    )
    .unwrap();
    let o = std::process::Command::new(bench_bin())
        .args(["parse-log", "--script", "parser.py", "test.log"])
        .current_dir(dir.path())
        .env("SECRET_TOKEN", "leak")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"a": "pass", "b": "fail", "c": "skip", "env": "pass"})
    );

    fs_err::write(
        dir.path().join("broken.py"),
        "def parser(log):\n    raise ValueError('boom')\n",
    )
    .unwrap();
    let o = bench_in(
        dir.path(),
        &["parse-log", "--script", "broken.py", "test.log"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("ValueError"), "{}", stderr(&o));
}

/// `node-test` is accepted by the binary (spec output, read whole), and an unknown name's
/// error lists the built-in parsers.
#[test]
fn node_test_parser_and_the_list_of_parsers() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("spec.log"),
        "▶ suite\n  ✔ inner (0.1ms)\n  ✖ broken (0.2ms)\n✖ suite (1ms)\n✖ failing tests:\n\n✖ broken (0.2ms)\n",
    )
    .unwrap();
    let o = bench_in(
        dir.path(),
        &["parse-log", "--parser", "node-test", "spec.log"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"suite": "fail", "suite > broken": "fail", "suite > inner": "pass"})
    );

    let o = bench_in(dir.path(), &["parse-log", "--parser", "node", "spec.log"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("did you mean `node-test`"), "{err}");
    assert!(err.contains("node-test, pytest"), "{err}");
}
