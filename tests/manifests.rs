//! Every manifest in the repository validates; the checked-in schema is what the types produce.

mod common;

use common::*;

#[test]
fn checked_in_schema_is_current() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/manifest.schema.json");
    let on_disk = fs_err::read_to_string(&path).expect("schemas/manifest.schema.json exists");
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
        for e in fs_err::read_dir(root.join(dir)).unwrap().flatten() {
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

/// Before anything is drawn (a Hub dataset not fetched yet), `bench plan`'s power is for the
/// tasks the manifest's `limit`s ask for, said as such, not "no tasks known yet".
#[test]
fn plan_power_before_any_task_is_drawn_uses_the_manifests_limits() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let store = tempfile::tempdir().unwrap();
    let o = bench_in(
        root,
        &[
            "--store",
            store.path().to_str().unwrap(),
            "plan",
            "pipelines/pilot-cheap.toml",
        ],
    );
    let out = format!("{}{}", stdout(&o), stderr(&o));
    assert!(!out.contains("no tasks known yet"), "{out}");
    assert!(
        out.contains("(50 paired tasks as the manifest's `limit` asks (none drawn yet)"),
        "{out}"
    );
    assert!(
        out.contains("smallest detectable difference +28.7 pts"),
        "{out}"
    );
}

#[test]
fn extends_merges_and_reports_errors_in_the_right_file() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.toml");
    fs_err::write(
        &base,
        "version = 1\nname = \"base\"\n[stages.s]\nkind = \"sample\"\ndataset = \"d\"\nlimt = 3\n",
    )
    .unwrap();
    let child = dir.path().join("child.toml");
    fs_err::write(&child, "version = 1\nextends = \"base.toml\"\n").unwrap();
    let o = bench_in(dir.path(), &["validate", "child.toml"]);
    let err = stderr(&o);
    assert!(err.contains("base.toml:6:1: unknown key `limt`"), "{err}");

    fs_err::write(&child, "version = 1\nextends = \"nope.toml\"\n").unwrap();
    let err = stderr(&bench_in(dir.path(), &["validate", "child.toml"]));
    assert!(err.contains("child.toml:2:11: extended manifest"), "{err}");

    fs_err::write(&base, "version = 1\nextends = \"child.toml\"\n").unwrap();
    fs_err::write(&child, "version = 1\nextends = \"base.toml\"\n").unwrap();
    let err = stderr(&bench_in(dir.path(), &["validate", "child.toml"]));
    assert!(err.contains("`extends` chain loops"), "{err}");
}

#[test]
fn cycles_and_bad_references_are_named() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
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

/// A report without `needs` gets that error alone: not also "compares against unknown team",
/// which would send its reader after the wrong problem.
#[test]
fn a_report_without_needs_has_one_error_not_a_cascade() {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "kind = \"report\"\nneeds = [\"grade\"]\n",
        "kind = \"report\"\n",
    );
    let o = sb.bench(&["validate", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("stage `report` must need at least one grade stage"),
        "{err}"
    );
    assert!(!err.contains("compares against unknown team"), "{err}");
    assert!(!err.contains("problems"), "one problem: {err}");
}

#[test]
fn missing_install_files_are_named_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("claude"), "#!/bin/sh\n").unwrap();
    fs_err::write(
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

/// Long enough for a debug build on a loaded machine; a blocked read would never finish.
const HANG: std::time::Duration = std::time::Duration::from_secs(30);

/// Writes `m.toml` extending `target` and validates it, with a timeout; stderr is [`flat`].
fn validate_extending(dir: &std::path::Path, target: &str) -> (std::process::Output, String) {
    fs_err::write(
        dir.join("m.toml"),
        format!("version = 1\nextends = \"{target}\"\n"),
    )
    .unwrap();
    let o = bench_timed(dir, &["validate", "m.toml"], HANG);
    let err = flat(&stderr(&o));
    (o, err)
}

#[test]
fn extends_of_a_fifo_is_an_error_and_never_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("base.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let started = std::time::Instant::now();
    let (o, err) = validate_extending(dir.path(), "base.toml");
    assert!(started.elapsed() < HANG, "bench hung on the FIFO");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("m.toml:2:11: extended manifest")
            && err.contains("base.toml is a FIFO, not a regular file"),
        "{err}"
    );
    assert!(err.contains("never read"), "{err}");

    // The top-level manifest follows the same rule.
    let o = bench_timed(dir.path(), &["validate", "base.toml"], HANG);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(flat(&stderr(&o)).contains("is a FIFO, not a regular file"));
}

#[test]
fn extends_of_dev_zero_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (o, err) = validate_extending(dir.path(), "/dev/zero");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("m.toml:2:11: extended manifest /dev/zero is a character device"),
        "{err}"
    );
}

#[test]
fn extends_of_a_file_over_the_size_limit_says_by_how_much() {
    let dir = tempfile::tempdir().unwrap();
    let big = fs_err::File::create(dir.path().join("big.toml")).unwrap();
    big.set_len(bench::manifest::MAX_MANIFEST_BYTES + 100)
        .unwrap();
    let (o, err) = validate_extending(dir.path(), "big.toml");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("m.toml:2:11: extended manifest"), "{err}");
    assert!(err.contains("100 bytes over the limit"), "{err}");
}

#[test]
fn a_file_that_is_not_a_manifest_is_named_but_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    let secret_lines = [
        "root:$6$Zq1hunter2Secret$9xVbq0:19800:0:99999:7:::",
        "deploy:$6$ANOTHERsecretHASH$77:19800:0:99999:7:::",
    ];
    fs_err::write(dir.path().join("shadow"), secret_lines.join("\n") + "\n").unwrap();
    // Valid TOML, but not a bench manifest.
    fs_err::write(
        dir.path().join("creds.toml"),
        "[default]\naws_secret_access_key = \"wJalrXUtnFEMI-K7MDENG\"\n",
    )
    .unwrap();
    for (target, reason) in [
        ("shadow", "is not valid TOML (at line 1, column"),
        ("creds.toml", "has no top-level `version` key"),
    ] {
        let (o, err) = validate_extending(dir.path(), target);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("m.toml:2:11: extended manifest"), "{err}");
        assert!(err.contains(target) && err.contains(reason), "{err}");
        for secret in [
            "hunter2",
            "Secret",
            "secret",
            "wJalrXUtnFEMI",
            "deploy",
            "root:",
        ] {
            assert!(
                !err.contains(secret),
                "{target}: stderr shows {secret:?}:\n{err}"
            );
        }
        // Named on the command line, it is not printed either.
        let err = flat(&stderr(&bench_timed(
            dir.path(),
            &["validate", target],
            HANG,
        )));
        assert!(err.contains(reason), "{err}");
        for secret in ["hunter2", "wJalrXUtnFEMI", "deploy"] {
            assert!(
                !err.contains(secret),
                "{target}: stderr shows {secret:?}:\n{err}"
            );
        }
    }

    // A syntax error in a real manifest still shows its snippet.
    fs_err::write(dir.path().join("base.toml"), "version = 1\nname = \"x\n").unwrap();
    let (_, err) = validate_extending(dir.path(), "base.toml");
    assert!(err.contains("base.toml:2:10: invalid TOML"), "{err}");
    assert!(err.contains("1 version = 1 2 name = \"x"), "{err}");
}

#[test]
fn an_out_of_range_integer_is_reported_at_the_value() {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "seed = 7",
        "seed = 7\nlimit = 5000000000",
    );
    let line = sb
        .read("quickstart.toml")
        .lines()
        .position(|l| l == "limit = 5000000000")
        .unwrap()
        + 1;
    let o = sb.bench(&["validate", "quickstart.toml"]);
    let err = flat(&stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "quickstart.toml:{line}:9: `limit` must be at most 4294967295, found 5000000000"
        )),
        "{err}"
    );
    assert!(!err.contains(":1:1:"), "{err}");
}

#[test]
fn thousands_of_identical_problems_are_folded_and_output_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let head = "version = 1\n[datasets.d]\nformat = \"local\"\npath = \".\"\n\
                [stages.s]\nkind = \"sample\"\ndataset = \"d\"\n\
                [teams.t]\ntopology = \"solo\"\nworker = \"nop\"\n";
    // 5,000 duplicate team entries on one line: a snippet per problem would print that line
    // 5,000 times.
    let teams = vec!["\"t\""; 5001].join(", ");
    let duplicates =
        format!("{head}[stages.v]\nkind = \"solve\"\nneeds = [\"s\"]\nteams = [{teams}]\n");
    // 5,000 unknown keys of the same name in an array of tables.
    let mut unknown = format!("{head}[teams.b]\ntopology = \"best-of\"\njudge = \"nop\"\n");
    for _ in 0..5000 {
        unknown.push_str("[[teams.b.workers]]\nharness = \"nop\"\nbogus = 1\n");
    }
    for (text, folded) in [
        (
            duplicates,
            "… and 4997 more like this: team `t` is listed twice",
        ),
        (
            unknown,
            "… and 4997 more like this: unknown key `bogus` in item 4 of `workers`",
        ),
    ] {
        fs_err::write(dir.path().join("m.toml"), text).unwrap();
        let o = bench_timed(dir.path(), &["validate", "m.toml"], HANG);
        assert!(
            o.stderr.len() < 64 * 1024,
            "{} bytes of stderr",
            o.stderr.len()
        );
        let err = flat(&stderr(&o));
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("m.toml has 5000 problems"), "{err}");
        assert!(err.contains(folded), "{err}");
    }
}

/// Issue 30: the baseline's help tells the truth when something else is wrong. A report whose
/// `needs` names no stage is told that (not "there are none defined" while teams exist), and a
/// solve stage's unknown teams are never offered as "known".
#[test]
fn baseline_help_names_the_real_problem() {
    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "needs = [\"grade\"]",
        "needs = [\"grad\"]",
    );
    sb.edit(
        "quickstart.toml",
        "baseline = \"nop\"",
        "baseline = \"none\"",
    );
    let o = sb.bench(&["validate", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let err = flat(&stderr(&o));
    assert!(
        err.contains("stage `report` needs unknown stage `grad`"),
        "{err}"
    );
    assert!(
        err.contains(
            "this report's `needs` do not reach a solve stage: `grad` is unknown or invalid"
        ),
        "{err}"
    );
    assert!(!err.contains("there are none defined"), "{err}");

    let sb = Sandbox::quickstart();
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"oracle\", \"nop\", \"fixer\", \"ghost\", \"phantom\"]",
    );
    sb.edit(
        "quickstart.toml",
        "baseline = \"nop\"",
        "baseline = \"nope\"",
    );
    let o = sb.bench(&["validate", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let err = flat(&stderr(&o));
    assert!(
        err.contains("stage `solve` runs unknown team `ghost`"),
        "{err}"
    );
    assert!(
        err.contains("did you mean `nop`? known: fixer, nop, oracle"),
        "{err}"
    );
    assert!(!err.contains("known: fixer, ghost"), "{err}");
}

#[test]
fn two_report_stages_writing_to_one_directory_are_an_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::create_dir(dir.path().join("tasks")).unwrap();
    let manifest = |second_out: &str| {
        format!(
            r#"version = 1
name = "twice"
[datasets.d]
format = "local"
path = "tasks"
[teams.n]
topology = "solo"
worker = "nop"
[stages.s]
kind = "sample"
dataset = "d"
[stages.solve]
kind = "solve"
needs = ["s"]
teams = ["n"]
[stages.grade]
kind = "grade"
needs = ["solve"]
[stages.main]
kind = "report"
needs = ["grade"]
[stages.other]
kind = "report"
needs = ["grade"]
{second_out}
"#
        )
    };
    // Neither sets `out`: both are reports/twice.
    fs_err::write(dir.path().join("m.toml"), manifest("")).unwrap();
    let o = bench_in(dir.path(), &["validate", "m.toml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = flat(&stderr(&o));
    assert!(
        err.contains("report stages `main` (")
            && err.contains("m.toml:19:1) and `other` (")
            && err.contains("m.toml:22:1) both write to")
            && err.contains("reports/twice (neither sets `out`"),
        "{err}"
    );
    assert!(err.contains("out = \"reports/other\""), "{err}");
    // An `out` that resolves to the default directory all the same.
    fs_err::write(
        dir.path().join("m.toml"),
        manifest("out = \"./reports/../reports/twice/\""),
    )
    .unwrap();
    let err = flat(&stderr(&bench_in(dir.path(), &["validate", "m.toml"])));
    assert!(
        err.contains("m.toml:25:7) both write to") && !err.contains("neither sets"),
        "{err}"
    );
    // Its own directory: no error about report directories.
    fs_err::write(
        dir.path().join("m.toml"),
        manifest("out = \"reports/other\""),
    )
    .unwrap();
    let o = bench_in(dir.path(), &["validate", "m.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
}
