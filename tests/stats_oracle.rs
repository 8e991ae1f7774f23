//! The statistics' oracle, run at test time: `scripts/stats_reference.py` recomputes every
//! reference value with statsmodels, scipy and numpy (the versions `.ci/run` pins), and its
//! output must equal the checked-in `tests/fixtures/stats/reference.json` that the unit tests
//! of `src/report/{stats,inference,power}.rs` compare the Rust code with to 1e-9. So a change
//! of the Rust code, of the script or of the libraries that breaks the agreement fails here or
//! there. Without python3 and the libraries the test fails under `CI=true` and skips with a
//! note elsewhere.

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Whether python3 can import the oracle's libraries; under CI=true their absence fails.
fn oracle_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import numpy, scipy, statsmodels"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "python3 with numpy, scipy and statsmodels is required under CI=true (.ci/run installs them)"
        );
        eprintln!("note: python3 with numpy, scipy and statsmodels not found; skipping the oracle");
    }
    ok
}

#[test]
fn the_reference_values_are_what_statsmodels_and_scipy_compute_now() {
    if !oracle_available() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let fresh = dir.path().join("reference.json");
    let o = Command::new("python3")
        .arg(root().join("scripts/stats_reference.py"))
        .arg(&fresh)
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "scripts/stats_reference.py failed (its own cross-checks against statsmodels, scipy and enumeration included):\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let read = |p: &Path| -> Value {
        let text = fs_err::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    };
    let mut now = read(&fresh);
    let mut checked_in = read(&root().join("tests/fixtures/stats/reference.json"));
    // Which versions computed it is information, not a value.
    for v in [&mut now, &mut checked_in] {
        v.as_object_mut().map(|o| o.remove("versions"));
    }
    let mut errors = Vec::new();
    // 1e-12: the same libraries on another machine may round a last bit differently.
    common::compare_json("reference", &now, &checked_in, 1e-12, &mut errors);
    assert!(
        errors.is_empty(),
        "tests/fixtures/stats/reference.json drifted from what the oracle computes now ({} differences; rerun `python3 scripts/stats_reference.py` and check why):\n{}",
        errors.len(),
        errors
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
