//! Every manifest in the repository validates; the checked-in schema is what the types produce.

mod common;

use common::*;

#[test]
fn checked_in_schema_is_current() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/manifest.schema.json");
    let on_disk = std::fs::read_to_string(&path).expect("schemas/manifest.schema.json exists");
    assert!(
        on_disk == bench::manifest::manifest_schema_text(),
        "schemas/manifest.schema.json is stale: run `cargo run -- schema > schemas/manifest.schema.json`"
    );
    let o = bench_in(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        &["schema"],
    );
    assert_eq!(stdout(&o), on_disk);
}

#[test]
fn every_example_and_pipeline_validates_and_plans() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for dir in ["examples", "pipelines"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "toml") {
                n += 1;
                let o = bench_in(root, &["validate", p.to_str().unwrap()]);
                assert!(o.status.success(), "{}: {}", p.display(), stderr(&o));
                let store = tempfile::tempdir().unwrap();
                let o = bench_in(
                    root,
                    &[
                        "--store",
                        store.path().to_str().unwrap(),
                        "plan",
                        p.to_str().unwrap(),
                    ],
                );
                assert!(
                    matches!(o.status.code(), Some(0 | 2)),
                    "{}: {}",
                    p.display(),
                    stderr(&o)
                );
            }
        }
    }
    assert!(n >= 3);
}

#[test]
fn extends_merges_and_reports_errors_in_the_right_file() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.toml");
    std::fs::write(
        &base,
        "version = 1\nname = \"base\"\n[stages.s]\nkind = \"sample\"\ndataset = \"d\"\nlimt = 3\n",
    )
    .unwrap();
    let child = dir.path().join("child.toml");
    std::fs::write(&child, "version = 1\nextends = \"base.toml\"\n").unwrap();
    let o = bench_in(dir.path(), &["validate", "child.toml"]);
    let err = stderr(&o);
    assert!(err.contains("base.toml:6:1: unknown key `limt`"), "{err}");

    std::fs::write(&child, "version = 1\nextends = \"nope.toml\"\n").unwrap();
    let err = stderr(&bench_in(dir.path(), &["validate", "child.toml"]));
    assert!(err.contains("child.toml:2:11: extended manifest"), "{err}");

    std::fs::write(&base, "version = 1\nextends = \"child.toml\"\n").unwrap();
    std::fs::write(&child, "version = 1\nextends = \"base.toml\"\n").unwrap();
    let err = stderr(&bench_in(dir.path(), &["validate", "child.toml"]));
    assert!(err.contains("`extends` chain loops"), "{err}");
}

#[test]
fn cycles_and_bad_references_are_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("m.toml"),
        r#"version = 1
[stages.a]
kind = "grade"
needs = ["b"]
[stages.b]
kind = "solve"
needs = ["a"]
teams = ["t"]
[stages.r]
kind = "report"
needs = ["a"]
baseline = "nobody"
[teams.t]
topology = "solo"
worker = "nop"
"#,
    )
    .unwrap();
    let err = stderr(&bench_in(dir.path(), &["validate", "m.toml"]));
    assert!(err.contains("stages form a cycle: a -> b"), "{err}");
    assert!(
        err.contains("report `r` compares against unknown team `nobody`"),
        "{err}"
    );
    assert!(
        err.contains("solve stage `b` cannot need grade stage `a`"),
        "{err}"
    );
}

#[test]
fn missing_install_files_are_named_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("claude"), "#!/bin/sh\n").unwrap();
    std::fs::write(
        dir.path().join("m.toml"),
        r#"version = 1
[harnesses.claude-code]
install_files = ["claude", "tools/missing"]
install = ["install -m 0755 claude /usr/local/bin/claude"]
"#,
    )
    .unwrap();
    let o = bench_in(dir.path(), &["validate", "m.toml"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("m.toml:3:28"), "{err}");
    assert!(err.contains("tools/missing does not exist"), "{err}");
    assert!(!err.contains("claude does not exist"), "{err}");
}
