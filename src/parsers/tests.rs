//! Tests of the parsers against real (or, where the framework cannot run here, documented
//! hand-written) logs in `tests/fixtures/logs/<parser>/<case>.log`, whose expected results
//! `<case>.expected.json` were derived from the test runner's own machine-readable output;
//! plus unit tests of cleaning, last-wins, status mappings, name suggestions and the
//! Python script runner.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::*;

/// `tests/fixtures/logs` of the crate that contains this file. `file!()` is
/// `src/parsers/tests.rs` relative to the crate root when compiled in the main crate (tests
/// run with the crate root as working directory) and an absolute path when compiled through
/// `#[path]` from elsewhere; `BENCH_PARSER_FIXTURES` overrides both.
fn fixture_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("BENCH_PARSER_FIXTURES") {
        return PathBuf::from(dir);
    }
    let from_file = Path::new(file!())
        .ancestors()
        .nth(3)
        .unwrap_or(Path::new(""))
        .join("tests/fixtures/logs");
    if from_file.is_dir() {
        return from_file;
    }
    match std::env::var_os("CARGO_MANIFEST_DIR") {
        Some(root) => Path::new(&root).join("tests/fixtures/logs"),
        None => from_file,
    }
}

/// What a hand matcher's unit test holds it to its regex on (beside the glued lines it uses,
/// so the SWE-bench ports' tests can use it too).
pub(super) use super::swebench::hand_matcher_lines;

fn map(pairs: &[(&str, TestStatus)]) -> BTreeMap<String, TestStatus> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

use TestStatus::{Fail, Pass, Skip};

#[test]
fn every_fixture_parses_to_its_expected_result() {
    let root = fixture_root();
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut parsers_seen = std::collections::BTreeSet::new();
    let mut dirs: Vec<_> = fs_err::read_dir(&root)
        .unwrap_or_else(|e| panic!("cannot read fixture dir {}: {e}", root.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let parser = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let mut logs: Vec<_> = fs_err::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        logs.sort();
        for log_path in logs {
            let expected_path = log_path.with_extension("expected.json");
            let log = fs_err::read_to_string(&log_path)
                .unwrap_or_else(|e| panic!("{}: {e}", log_path.display()));
            let expected: BTreeMap<String, TestStatus> = serde_json::from_str(
                &fs_err::read_to_string(&expected_path)
                    .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display())),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
            // An upstream-compatible parser may find nothing in a real log (cucumber's
            // progress format names no test): its expectation is upstream's, checked against
            // the official parser by tests/swebench_parsers.rs.
            assert!(
                !expected.is_empty() || parser.starts_with("swebench-"),
                "{} is empty",
                expected_path.display()
            );
            let actual =
                parse_log(&parser, &log).unwrap_or_else(|e| panic!("{}: {e}", log_path.display()));
            if actual != expected {
                let mut diff = String::new();
                for (name, status) in &expected {
                    match actual.get(name) {
                        Some(got) if got == *status => {}
                        got => {
                            diff.push_str(&format!("  {name:?}: expected {status}, got {got:?}\n"))
                        }
                    }
                }
                for (name, status) in actual.sorted() {
                    if !expected.contains_key(name) {
                        diff.push_str(&format!("  {name:?}: unexpected {status}\n"));
                    }
                }
                failures.push(format!("{} ({parser}):\n{diff}", log_path.display()));
            }
            parsers_seen.insert(parser.clone());
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "fixture mismatches:\n{}",
        failures.join("\n")
    );
    let missing: Vec<_> = builtin_parser_names()
        .iter()
        .filter(|n| !parsers_seen.contains(**n))
        .collect();
    assert!(missing.is_empty(), "parsers without fixtures: {missing:?}");
    assert!(
        checked >= builtin_parser_names().len(),
        "only {checked} fixtures checked"
    );
}

#[test]
fn ansi_codes_and_carriage_returns_are_stripped() {
    let log = "\x1b[32mPASSED\x1b[0m t.py::a\r\n\x1b]8;;file:///x\x07FAILED\x1b]8;;\x07 t.py::b - x\r\n\x1b(B\x1b[mSKIPPED t.py::c\n";
    assert_eq!(
        parse_log("pytest", log).unwrap(),
        map(&[("t.py::a", Pass), ("t.py::b", Fail), ("t.py::c", Skip)])
    );
    let go = "\x1b[1m--- PASS: TestA (0.00s)\x1b[0m\r\n";
    assert_eq!(parse_log("go", go).unwrap(), map(&[("TestA", Pass)]));
}

#[test]
fn last_occurrence_wins() {
    let log = "t.py::a PASSED [50%]\nt.py::a ERROR [50%]\nFAILED t.py::b\nPASSED t.py::b\n";
    assert_eq!(
        parse_log("pytest", log).unwrap(),
        map(&[("t.py::a", Fail), ("t.py::b", Pass)])
    );
    let go = "--- FAIL: TestA (0.00s)\n--- PASS: TestA (0.01s)\n--- PASS: TestB (0.00s)\n--- SKIP: TestB (0.00s)\n";
    assert_eq!(
        parse_log("go", go).unwrap(),
        map(&[("TestA", Pass), ("TestB", Skip)])
    );
}

#[test]
fn pytest_mappings() {
    let log = "PASSED t.py::p\nFAILED t.py::f - assert 0\nERROR t.py::e - boom\nSKIPPED t.py::s\nXFAIL t.py::xf - why\nXPASS t.py::xp\nSKIPPED [1] t.py:3: no id\n";
    assert_eq!(
        parse_log("pytest", log).unwrap(),
        map(&[
            ("t.py::p", Pass),
            ("t.py::f", Fail),
            ("t.py::e", Fail),
            ("t.py::s", Skip),
            ("t.py::xf", Fail),
            ("t.py::xp", Pass),
        ])
    );
    assert_eq!(
        parse_log("pytest-swebench", log).unwrap(),
        map(&[
            ("t.py::p", Pass),
            ("t.py::f", Fail),
            ("t.py::e", Fail),
            ("t.py::s", Skip),
            ("t.py::xf", Pass),
            ("t.py::xp", Skip),
        ])
    );
}

#[test]
fn unittest_mappings_and_late_status() {
    let log = "\
test_a (m.T.test_a) ... ok
test_b (m.T.test_b) ... FAIL
test_c (m.T.test_c) ... ERROR
test_d (m.T.test_d) ... skipped 'later'
test_e (m.T.test_e) ... expected failure
test_f (m.T.test_f) ... unexpected success
test_g (m.T.test_g) ... printing something
more output
ok
test_h (m.T.test_h) ...
FAIL
======================================================================
ERROR: test_i (m.T.test_i)
----------------------------------------------------------------------
";
    assert_eq!(
        parse_log("unittest", log).unwrap(),
        map(&[
            ("test_a (m.T.test_a)", Pass),
            ("test_b (m.T.test_b)", Fail),
            ("test_c (m.T.test_c)", Fail),
            ("test_d (m.T.test_d)", Skip),
            // bench's mapping (docs/parsers.md): what the body did.
            ("test_e (m.T.test_e)", Fail),
            ("test_f (m.T.test_f)", Pass),
            ("test_g (m.T.test_g)", Pass),
            ("test_h (m.T.test_h)", Fail),
            ("test_i (m.T.test_i)", Fail),
        ])
    );
}

/// Docstrings name nothing, subtests belong to their parent (Python 3.11 output).
#[test]
fn unittest_docstrings_and_subtests() {
    let log = "\
test_doc (m.T.test_doc)
Does a thing ... and more. ... ok
test_doc_late (m.T.test_doc_late)
Prints first. ... some output
ok
test_sub (m.T.test_sub) ... 
  test_sub (m.T.test_sub) (i=1) ... FAIL
  test_sub (m.T.test_sub) (i=2) ... skipped 'later'
test_sub_doc (m.T.test_sub_doc)
Doc. ... 
  test_sub_doc (m.T.test_sub_doc) [msg] (k='v')
Doc. ... ERROR
test_skip_only (m.T.test_skip_only) ... 
  test_skip_only (m.T.test_skip_only) (<subtest>) ... skipped 'odd'
test_sub_ok (m.T.test_sub_ok) ... ok
looks (like.an.id)
test_after_output (m.T.test_after_output) ... ok
======================================================================
FAIL: test_other (m.T.test_other) (i=3)
A docstring line after the header.
----------------------------------------------------------------------
";
    assert_eq!(
        parse_log("unittest", log).unwrap(),
        map(&[
            ("test_doc (m.T.test_doc)", Pass),
            ("test_doc_late (m.T.test_doc_late)", Pass),
            ("test_sub (m.T.test_sub)", Fail),
            ("test_sub_doc (m.T.test_sub_doc)", Fail),
            ("test_skip_only (m.T.test_skip_only)", Skip),
            ("test_sub_ok (m.T.test_sub_ok)", Pass),
            ("test_after_output (m.T.test_after_output)", Pass),
            ("test_other (m.T.test_other)", Fail),
        ])
    );
}

/// A TAP group's line is a test point too, with its own result.
#[test]
fn tap_groups_are_tests_with_their_own_result() {
    let log = "\
# Subtest: suite
    # Subtest: inner
    ok 1 - inner
    # Subtest: deeper
        not ok 1 - deepest
    not ok 2 - deeper
not ok 1 - suite
# Subtest: parent
    ok 1 - child
not ok 2 - parent
";
    let orphan = "    ok 1 - orphan\nok 3 - group of orphan\n";
    assert_eq!(
        parse_log("tap", &format!("{log}{orphan}")).unwrap(),
        map(&[
            ("suite", Fail),
            ("inner", Pass),
            ("deeper", Fail),
            ("deepest", Fail),
            ("child", Pass),
            ("parent", Fail),
            ("orphan", Pass),
            ("group of orphan", Pass),
        ])
    );
    assert_eq!(
        parse_log("node-test", &format!("TAP version 13\n{log}")).unwrap(),
        map(&[
            ("suite", Fail),
            ("suite > inner", Pass),
            ("suite > deeper", Fail),
            ("suite > deeper > deepest", Fail),
            ("parent > child", Pass),
            ("parent", Fail),
        ])
    );
}

/// node:test's spec reporter: nesting, todo and skip directives, the "failing tests" list
/// (not counted again) and a second run after it.
#[test]
fn node_test_spec() {
    let log = "\
ok 9 - printed by a test, not a result
▶ outer
  ▶ inner
    ✖ fails (1.5ms)
      Error: no
    ✔ passes (0.2ms)
  ✖ inner (2ms)
  ✔ todo # with hash (0.1ms) # TODO
  ✖ todo failing (0.1ms) # TODO
  ﹣ skipped (0.1ms) # not now
✖ outer (3ms)
▶ parent
  ✔ child (0.1ms)
✖ parent (0.5ms)
  Error: its own failure
ℹ tests 5
✖ failing tests:

test at a.test.mjs:3:5
✖ fails (1.5ms)
  Error: no
✖ todo failing (0.1ms) # TODO
✖ parent (0.5ms)
✖ second run fails (1ms)
✔ second run passes (1ms)
";
    assert_eq!(
        parse_log("node-test", log).unwrap(),
        map(&[
            ("outer", Fail),
            ("outer > inner", Fail),
            ("outer > inner > fails", Fail),
            ("outer > inner > passes", Pass),
            ("outer > todo # with hash", Skip),
            ("outer > todo failing", Skip),
            ("outer > skipped", Skip),
            ("parent > child", Pass),
            ("parent", Fail),
            ("second run fails", Fail),
            ("second run passes", Pass),
        ])
    );
}

#[test]
fn cargo_mappings() {
    let log = "     Running unittests src/lib.rs (target/debug/deps/a-1)\ntest t::ok ... ok\ntest t::bad ... FAILED\ntest t::ign ... ignored, slow\ntest t::p - should panic ... ok\ntest t::b ... bench:  10 ns/iter (+/- 1)\n";
    assert_eq!(
        parse_log("cargo", log).unwrap(),
        map(&[
            ("unittests src/lib.rs (target/debug/deps/a-1)::t::bad", Fail),
            ("unittests src/lib.rs (target/debug/deps/a-1)::t::ign", Skip),
            ("unittests src/lib.rs (target/debug/deps/a-1)::t::ok", Pass),
            ("unittests src/lib.rs (target/debug/deps/a-1)::t::p", Pass),
        ])
    );
    let json = "{ \"type\": \"test\", \"event\": \"started\", \"name\": \"a\" }\n{ \"type\": \"test\", \"event\": \"started\", \"name\": \"b\" }\n{ \"type\": \"test\", \"name\": \"b\", \"event\": \"ok\" }\n{ \"type\": \"test\", \"name\": \"c\", \"event\": \"ignored\" }\n";
    assert_eq!(
        parse_log("cargo-json", json).unwrap(),
        map(&[("a", Fail), ("b", Pass), ("c", Skip)])
    );
}

#[test]
fn other_mappings() {
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, TestStatus)]);
    let cases: &[Case<'_>] = &[
        (
            "go-json",
            "{\"Action\":\"pass\",\"Test\":\"A\"}\n{\"Action\":\"fail\",\"Test\":\"B/x\"}\n{\"Action\":\"skip\",\"Test\":\"C\"}\n{\"Action\":\"fail\",\"Package\":\"p\"}\n",
            &[("A", Pass), ("B/x", Fail), ("C", Skip)],
        ),
        (
            "jest",
            "    ✓ adds (2 ms)\n    ✕ fails (3 ms)\n    ○ skipped later\n    ✎ todo someday\n",
            &[
                ("adds", Pass),
                ("fails", Fail),
                ("later", Skip),
                ("someday", Skip),
            ],
        ),
        (
            "vitest",
            " ✓ a.test.ts > s > adds 1ms\n × a.test.ts > s > fails 3ms\n ↓ a.test.ts > s > later\n ✓ a.test.ts (3 tests | 1 skipped) 5ms\n ✓ a.test.ts > s > flaky 12ms (retry x2)\n ✓ a.test.ts > s > old (retry x1) 1204ms\n ✓ a.test.ts > s > heavy 3ms (repeat x2) 20 MB heap used\n ✓ a.test.ts > s > waits 100ms 102ms\n ✓ a.test.ts > s > slow 1.2s\n ✓ |p| a.test.ts (3 tests) 5ms\n",
            &[
                ("a.test.ts > s > adds", Pass),
                ("a.test.ts > s > fails", Fail),
                ("a.test.ts > s > later", Skip),
                ("a.test.ts > s > flaky", Pass),
                ("a.test.ts > s > old", Pass),
                ("a.test.ts > s > heavy", Pass),
                ("a.test.ts > s > waits 100ms", Pass),
                ("a.test.ts > s > slow", Pass),
            ],
        ),
        (
            "tap",
            "ok 1 - adds\nnot ok 2 - broken\nok 3 - later # SKIP\nnot ok 4 - todo \\# one # TODO x\n    ok 1 nested\n",
            &[
                ("adds", Pass),
                ("broken", Fail),
                ("later", Skip),
                ("todo # one", Skip),
                ("nested", Pass),
            ],
        ),
        (
            "ctest",
            "1/4 Test #1: a .....   Passed    0.01 sec\n2/4 Test #2: b .....***Failed    0.01 sec\n3/4 Test #3: c .....***Skipped   0.00 sec\n4/4 Test #4: d .....***Exception: SegFault  0.00 sec\n",
            &[("a", Pass), ("b", Fail), ("c", Skip), ("d", Fail)],
        ),
        (
            "dotnet",
            "  Passed A.B.Adds [2 ms]\n  Failed A.B.Broken [5 ms]\n  Skipped A.B.Later [1 ms]\n",
            &[
                ("A.B.Adds", Pass),
                ("A.B.Broken", Fail),
                ("A.B.Later", Skip),
            ],
        ),
        (
            "maven",
            "[INFO] a.B.ok -- Time elapsed: 0.001 s\n[ERROR] a.B.f -- Time elapsed: 0.01 s <<< FAILURE!\n[ERROR] a.B.e -- Time elapsed: 0.01 s <<< ERROR!\n[WARNING] a.B.s -- Time elapsed: 0 s <<< SKIPPED!\nold(a.C)  Time elapsed: 0.01 sec  <<< FAILURE!\n",
            &[
                ("a.B.ok", Pass),
                ("a.B.f", Fail),
                ("a.B.e", Fail),
                ("a.B.s", Skip),
                ("a.C.old", Fail),
            ],
        ),
        (
            "junit-xml",
            "$ cat *.xml\n<?xml version=\"1.0\"?>\n<testsuite name=\"s\"><testcase classname=\"a.B\" name=\"ok\"/><testcase classname=\"a.B\" name=\"f\"><failure message=\"x\"/></testcase><testcase classname=\"a.B\" name=\"e\"><error/></testcase><testcase classname=\"a.B\" name=\"s\"><skipped/></testcase></testsuite>\n<?xml version=\"1.0\"?>\n<testsuites><testsuite><testcase name=\"n &amp; m\" classname=\"\"><system-out>hi</system-out></testcase></testsuite></testsuites>\n",
            &[
                ("a.B.ok", Pass),
                ("a.B.f", Fail),
                ("a.B.e", Fail),
                ("a.B.s", Skip),
                ("n & m", Pass),
            ],
        ),
    ];
    for (parser, log, expected) in cases {
        assert_eq!(
            parse_log(parser, log).unwrap(),
            map(expected),
            "parser {parser}"
        );
    }
}

#[test]
fn unknown_parser_suggests_closest_name() {
    let err = parse_log("pytset", "").unwrap_err();
    assert_eq!(
        err,
        ParserError::Unknown {
            name: "pytset".into(),
            suggestion: Some("pytest".into())
        }
    );
    assert_eq!(
        err.to_string(),
        "unknown log parser `pytset`; did you mean `pytest`?"
    );
    let err = parse_log("junit_xml", "").unwrap_err();
    assert!(
        err.to_string().ends_with("did you mean `junit-xml`?"),
        "{err}"
    );
    let err = parse_log("django", "").unwrap_err();
    assert!(
        err.to_string().ends_with("did you mean `unittest`?"),
        "{err}"
    );
    let err = parse_log("rspec-but-very-different", "").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown log parser `rspec-but-very-different`"
    );
}

#[test]
fn names_are_sorted_and_all_parse() {
    let names = builtin_parser_names();
    assert!(names.windows(2).all(|w| w[0] < w[1]));
    for name in names {
        assert_eq!(parse_log(name, "").unwrap(), BTreeMap::new());
    }
}

#[test]
fn live_normalisation_and_json() {
    assert_eq!(normalize_live_status("PASSED"), Pass);
    assert_eq!(normalize_live_status("xpass"), Pass);
    assert_eq!(normalize_live_status("Skipped"), Skip);
    assert_eq!(normalize_live_status("fail"), Fail);
    assert_eq!(normalize_live_status("ERROR"), Fail);
    assert_eq!(normalize_live_status("xfail"), Fail);
    assert_eq!(normalize_live_status(""), Fail);
    let json = statuses_to_json(
        &map(&[("b", Skip), ("a", Pass), ("c", Fail)])
            .into_iter()
            .collect(),
    );
    assert_eq!(
        json,
        "{\n  \"a\": \"pass\",\n  \"b\": \"skip\",\n  \"c\": \"fail\"\n}"
    );
    let back: BTreeMap<String, TestStatus> = serde_json::from_str(&json).unwrap();
    assert_eq!(back.len(), 3);
}

fn quick() -> ScriptLimits {
    ScriptLimits {
        timeout: Duration::from_secs(20),
        memory_bytes: 1 << 30,
    }
}

#[test]
fn script_good() {
    let script = r#"
import re
def parser(log):
    print("noise on stdout")
    out = {}
    for m in re.finditer(r"^(\S+) (PASS|FAIL)$", log, re.M):
        out[m.group(1)] = m.group(2).lower()
    out["unicode ✓"] = "pass"
    out[3] = None
    return out
"#;
    let got = run_script_parser(script, "a PASS\nb FAIL\n", &quick()).unwrap();
    let want: BTreeMap<String, String> = [
        ("a", "pass"),
        ("b", "fail"),
        ("unicode ✓", "pass"),
        ("3", "None"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn script_that_raises_reports_traceback() {
    let script = "def helper():\n    return 1 / 0\n\ndef parser(log):\n    return helper()\n";
    match run_script_parser(script, "x", &quick()) {
        Err(ScriptError::Raised { traceback }) => {
            assert!(traceback.contains("ZeroDivisionError"), "{traceback}");
            assert!(traceback.contains("return 1 / 0"), "{traceback}");
        }
        other => panic!("expected Raised, got {other:?}"),
    }
    for script in [
        "x = 1\n",
        "def parser(log):\n    return [1]\n",
        "def parser(:\n",
    ] {
        assert!(
            matches!(
                run_script_parser(script, "x", &quick()),
                Err(ScriptError::Raised { .. })
            ),
            "{script}"
        );
    }
    let exit = run_script_parser("import os\nos._exit(3)\n", "x", &quick());
    assert!(matches!(exit, Err(ScriptError::Crashed { .. })), "{exit:?}");
}

#[test]
fn script_that_hangs_is_killed_with_its_children() {
    // The grandchild is found by a marker in its command line (in a bwrap jail it is in another
    // PID namespace and cannot write outside its directory).
    let marker = format!("600.{}", std::process::id());
    let script = format!(
        "import subprocess, sys, time\n\
         child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep({marker})'])\n\
         def parser(log):\n    time.sleep(600)\n"
    );
    let limits = ScriptLimits {
        timeout: Duration::from_secs(2),
        memory_bytes: 1 << 30,
    };
    let started = Instant::now();
    let result = run_script_parser(&script, "x", &limits);
    let elapsed = started.elapsed();
    assert!(
        matches!(result, Err(ScriptError::TimedOut { after }) if after == limits.timeout),
        "{result:?}"
    );
    assert!(elapsed < Duration::from_secs(6), "took {elapsed:?}");
    let alive = || -> Vec<String> {
        let mut v = Vec::new();
        for e in fs_err::read_dir("/proc").into_iter().flatten().flatten() {
            let stat = fs_err::read_to_string(e.path().join("stat")).unwrap_or_default();
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .chars()
                .next();
            let cmd = fs_err::read(e.path().join("cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(&format!("time.sleep({marker})"))
                && !cmd.contains("bwrap")
                && !matches!(state, Some('Z') | Some('X'))
            {
                v.push(cmd);
            }
        }
        v
    };
    // The grandchild must be gone (or a zombie awaiting its reaper) shortly after.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = alive();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "grandchild still alive: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn script_sees_no_environment() {
    assert!(std::env::var_os("HOME").is_some() || std::env::var_os("PATH").is_some());
    let script = "import os\ndef parser(log):\n    return {k: v for k, v in os.environ.items()} | {'HOME?': str(os.environ.get('HOME')), 'cwd_files': ','.join(sorted(os.listdir('.')))}\n";
    let got = run_script_parser(script, "x", &quick()).unwrap();
    assert_eq!(got.get("HOME?").map(String::as_str), Some("None"));
    let env_keys: Vec<&String> = got
        .keys()
        .filter(|k| !matches!(k.as_str(), "HOME?" | "cwd_files" | "LC_CTYPE"))
        .collect();
    assert!(env_keys.is_empty(), "child saw environment: {env_keys:?}");
    assert_eq!(
        got.get("cwd_files").map(String::as_str),
        Some("log.txt,log_parser.py,stderr.txt,stdout.json,wrapper.py")
    );
}

#[test]
fn script_over_memory_limit_fails_cleanly() {
    let script =
        "def parser(log):\n    blob = bytearray(4 << 30)\n    return {'n': str(len(blob))}\n";
    let limits = ScriptLimits {
        timeout: Duration::from_secs(30),
        memory_bytes: 512 << 20,
    };
    match run_script_parser(script, "x", &limits) {
        Err(ScriptError::Raised { traceback }) => {
            assert!(traceback.contains("MemoryError"), "{traceback}")
        }
        Err(ScriptError::Crashed { .. }) => {}
        other => panic!("expected a clean failure, got {other:?}"),
    }
}

#[test]
fn script_limits_default() {
    let d = ScriptLimits::default();
    assert_eq!(d.timeout, Duration::from_secs(120));
    assert_eq!(d.memory_bytes, 2 * 1024 * 1024 * 1024);
}
