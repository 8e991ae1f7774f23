//! The `swe-bench-pro` protocol end to end: the real `bench` CLI on the docker backend, on a
//! fixture Pro dataset (rows shaped like `ScaleAI/SWE-bench_Pro`'s, Python-literal list cells,
//! a test name with quotes, an instance id with `-vnan`), a fixture SWE-bench_Pro-os checkout
//! (`run_scripts/<id>/{run_script.sh, parser.py, instance_info.txt}` in upstream's shape) and
//! the task image `bench-test-pro:1` (repository at /app, history holding the fixes), tagged
//! with the names upstream's `image_uri.py` gives the two tasks.
//!
//! Under CI=true a missing daemon or image fails; elsewhere the docker tests print a note and
//! pass. The dataset-reading tests need no docker.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bench_in, stderr, stdout};

const IMAGE: &str = "bench-test-pro:1";
const ID_A: &str = "instance_bench__calcpro-1111111111111111111111111111111111111111-vnan";
const ID_B: &str = "instance_bench__calcpro-2222222222222222222222222222222222222222-v0123456789abcdef0123456789abcdef01234567";
const REPO: &str = "bench/calcpro";
/// The tags upstream's `get_dockerhub_image_uri` gives them (-vnan stripped, other suffixes
/// kept).
const TAG_A: &str = "bench.calcpro-bench__calcpro-1111111111111111111111111111111111111111";
const TAG_B: &str = "bench.calcpro-bench__calcpro-2222222222222222222222222222222222222222-v0123456789abcdef0123456789abcdef01234567";

const QUOTED: &str = r#"tests/test_add.py | add keeps "it's" sum"#;

fn docker_ready() -> bool {
    common::docker_ready(&[IMAGE])
}

fn cat(path: &str) -> String {
    let out = Command::new("docker")
        .args(["run", "--rm", "--entrypoint", "cat", IMAGE, path])
        .output()
        .expect("docker run");
    assert!(out.status.success(), "cat {path}: {}", stderr_of(&out));
    String::from_utf8(out.stdout).expect("utf-8")
}

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A Python string literal as `repr` writes it (single quotes unless the text has one and no
/// double quote).
fn py_repr(s: &str) -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(repr(sys.argv[1]))", s])
        .output()
        .expect("python3");
    String::from_utf8(out.stdout)
        .unwrap()
        .trim_end()
        .to_string()
}

fn py_list(items: &[&str]) -> String {
    let inner: Vec<String> = items.iter().map(|s| py_repr(s)).collect();
    format!("[{}]", inner.join(", "))
}

/// The fixture: dataset rows, harness checkout and manifest in a temp dir.
struct Fixture {
    dir: tempfile::TempDir,
    shas: std::collections::BTreeMap<String, String>,
}

impl Fixture {
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn manifest(&self) -> PathBuf {
        self.path("pro.toml")
    }
}

/// Rows shaped like the real ones. `shas`: base, fix_a, fix_b.
fn rows(shas: &std::collections::BTreeMap<String, String>, patches: &[(String, String)]) -> String {
    let base = &shas["base"];
    let before = |fix: &str, files: &str| {
        format!(
            "git reset --hard {base}\ngit clean -fd \ngit checkout {base} \ngit checkout {fix} -- {files}"
        )
    };
    let a = serde_json::json!({
        "repo": REPO,
        "instance_id": ID_A,
        "base_commit": base,
        "patch": patches[0].0,
        "test_patch": patches[0].1,
        "problem_statement": "add() subtracts.",
        "requirements": "- `add(a, b)` must return the sum.",
        "interface": "No new interfaces are introduced.",
        "repo_language": "python",
        "fail_to_pass": py_list(&["tests/test_add.py | T.test_add", QUOTED]),
        "pass_to_pass": py_list(&["tests/test_calc.py | T.test_mul"]),
        "issue_specificity": "[\"major_bug\"]",
        "issue_categories": "[\"core_feat\"]",
        "before_repo_set_cmd": before(&shas["fix_a"], "tests/test_add.py"),
        "selected_test_files_to_run": "['tests/test_add.py', 'tests/test_calc.py', ]",
        "dockerhub_tag": TAG_A,
    });
    let b = serde_json::json!({
        "repo": REPO,
        "instance_id": ID_B,
        "base_commit": base,
        "patch": patches[1].0,
        "test_patch": patches[1].1,
        "problem_statement": "greet() is not polite.",
        "requirements": "- `greet(name)` returns `Hello, Name`.",
        "interface": "No new interfaces are introduced.",
        "repo_language": "python",
        "fail_to_pass": "[\"tests/test_calc.py | T.test_greet\", 'tests/test_calc.py | T.test_greet_plain']",
        "pass_to_pass": "['tests/test_calc.py | T.test_mul']",
        "issue_specificity": "[\"minor_bug\"]",
        "issue_categories": "[\"ui_ux_feat\"]",
        "before_repo_set_cmd": before(&shas["fix_b"], "tests/test_calc.py"),
        "selected_test_files_to_run": "[\"tests/test_calc.py\"]",
        "dockerhub_tag": TAG_B,
    });
    format!("{a}\n{b}\n")
}

const CALC_BASE: &str = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n\n\ndef greet(name):\n    return \"hello \" + name\n";

/// A patch against the base's calc.py: `edits` are (path, new content or None to delete,
/// binary), diffed by git on the host (`--binary`, as agents' patches are).
fn make_patch(edits: &[(&str, &[u8])]) -> String {
    let d = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", stderr_of(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    git(&["init", "-q"]);
    fs_err::write(d.path().join("calc.py"), CALC_BASE).unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-qm", "base"]);
    for (path, content) in edits {
        let p = d.path().join(path);
        fs_err::create_dir_all(p.parent().unwrap()).unwrap();
        fs_err::write(p, content).unwrap();
    }
    git(&["add", "-A"]);
    git(&["diff", "--cached", "--binary"])
}

fn fixture(teams: &[(&str, Vec<(&str, String)>)]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let shas: std::collections::BTreeMap<String, String> = cat("/fixture/shas")
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    // The image is the one both tasks' upstream names point at.
    for tag in [TAG_A, TAG_B] {
        let st = Command::new("docker")
            .args(["tag", IMAGE, &format!("jefzda/sweap-images:{tag}")])
            .status()
            .unwrap();
        assert!(st.success());
    }
    let patches = vec![
        (cat("/fixture/gold-a.patch"), cat("/fixture/test-a.patch")),
        (cat("/fixture/gold-b.patch"), cat("/fixture/test-b.patch")),
    ];
    fs_err::create_dir_all(dir.path().join("data")).unwrap();
    fs_err::write(dir.path().join("data/test.jsonl"), rows(&shas, &patches)).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/swe_bench_pro");
    for (id, tests) in [
        (ID_A, "[\"tests/test_add.py\", \"tests/test_calc.py\"]"),
        (ID_B, "[\"tests/test_calc.py\"]"),
    ] {
        let d = dir.path().join("harness/run_scripts").join(id);
        fs_err::create_dir_all(&d).unwrap();
        for f in ["run_script.sh", "parser.py"] {
            fs_err::copy(fixtures.join(f), d.join(f)).unwrap();
        }
        fs_err::write(
            d.join("instance_info.txt"),
            format!(
                "Instance ID: {id}\nRepository: {REPO}\nBase Commit: {}\nTest Files: {tests}\n",
                shas["base"]
            ),
        )
        .unwrap();
    }
    let mut team_names = vec!["oracle".to_string(), "nop".to_string()];
    let mut extra = String::new();
    for (name, preds) in teams {
        let lines: Vec<String> = preds
            .iter()
            .map(|(id, patch)| {
                serde_json::json!({"instance_id": id, "model_name_or_path": name, "model_patch": patch})
                    .to_string()
            })
            .collect();
        fs_err::write(dir.path().join(format!("{name}.jsonl")), lines.join("\n")).unwrap();
        extra.push_str(&format!(
            "\n[harnesses.{name}]\nkind = \"predictions\"\npath = \"{name}.jsonl\"\n\n[teams.{name}]\ntopology = \"solo\"\nworker = \"{name}\"\n"
        ));
        team_names.push(name.to_string());
    }
    let manifest = format!(
        r#"version = 1
name = "pro"

[backend]
kind = "docker"
cpus = 1
memory = "1GiB"
pids = 128

[limits]
containers = 2

[datasets.pro]
format = "swe-bench-pro"
path = "data"
run_scripts = "harness"

[stages.sample]
kind = "sample"
dataset = "pro"

[stages.gold]
kind = "gold"
needs = ["sample"]
timeout = "5m"
empty = true

[stages.solve]
kind = "solve"
needs = ["gold"]
teams = {teams:?}
timeout = "5m"

[stages.grade]
kind = "grade"
needs = ["solve"]
timeout = "5m"

[stages.report]
kind = "report"
needs = ["grade"]
baseline = "nop"

[teams.oracle]
topology = "solo"
worker = "oracle"

[teams.nop]
topology = "solo"
worker = "nop"
{extra}"#,
        teams = team_names
    );
    fs_err::write(dir.path().join("pro.toml"), manifest).unwrap();
    Fixture { dir, shas }
}

/// Every stored grade (gold, empty and agents' patches) of the manifest: (address, record).
fn grades(fx: &Fixture) -> Vec<(String, bench::store::ActionRecord)> {
    let store = bench::store::Store::open_existing(&fx.path(".bench")).expect("a store");
    let manifest = fs_err::canonicalize(fx.manifest()).unwrap();
    let mut out = Vec::new();
    for (address, key) in store.load_index(&manifest).nodes {
        if let bench::store::Lookup::Hit(rec) = store.get_action(&key)
            && rec.grade().is_some()
        {
            out.push((address, *rec));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn blob(fx: &Fixture, rec: &bench::store::ActionRecord, name: &str) -> Vec<u8> {
    let store = bench::store::Store::open_existing(&fx.path(".bench")).unwrap();
    store
        .get_blob(
            &bench::types::Digest::parse(
                rec.blobs
                    .get(name)
                    .unwrap_or_else(|| panic!("no blob {name}")),
            )
            .unwrap(),
        )
        .unwrap()
}

fn team_resolved(report: &serde_json::Value, team: &str) -> u64 {
    report["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == team)
        .unwrap_or_else(|| panic!("no team {team}"))["resolved"]
        .as_u64()
        .unwrap()
}

#[test]
fn pro_tasks_grade_as_upstream_grades_them_and_hostile_patches_do_not_pass() {
    if !docker_ready() {
        return;
    }
    // A candidate that does not fix `add` but, when the tests import it, forges output.json
    // and replaces parser.py and run_script.sh in every directory bench might use, and ships
    // its own copies in the repository.
    let forged_names = format!(
        "[\"tests/test_add.py | T.test_add\", {}, \"tests/test_calc.py | T.test_mul\"]",
        serde_json::to_string(QUOTED).unwrap()
    );
    let forge_code = format!(
        "import glob as _g, json as _j, os as _o\n_FAKE = {{'tests': [{{'name': n, 'status': 'PASSED'}} for n in {forged_names}]}}\nfor _d in _g.glob('/tmp/bench/*') + ['/workspace', '/app']:\n    try:\n        _o.makedirs(_d, exist_ok=True)\n        open(_o.path.join(_d, 'output.json'), 'w').write(_j.dumps(_FAKE))\n        open(_o.path.join(_d, 'parser.py'), 'w').write('import json, sys\\njson.dump(' + repr(_FAKE) + ', open(sys.argv[3], \"w\"))\\n')\n        open(_o.path.join(_d, 'run_script.sh'), 'w').write('echo forged\\n')\n    except OSError:\n        pass\n\n"
    );
    let forge = make_patch(&[
        ("calc.py", format!("{forge_code}{CALC_BASE}").as_bytes()),
        ("output.json", b"{\"tests\": []}\n"),
        ("parser.py", b"print('not the grader')\n"),
        ("run_script.sh", b"echo not the grader\n"),
    ]);
    // The gold fix of task A plus a binary file: the binary section is stripped, the text
    // hunks still apply.
    let fixed_a = CALC_BASE.replace("return a - b", "return a + b");
    let binary = make_patch(&[
        ("calc.py", fixed_a.as_bytes()),
        ("logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\xff\0binary"),
    ]);
    assert!(binary.contains("GIT binary patch"), "{binary}");
    // The gold fix of task B, printing its process status and how many processes it can
    // start when the tests import it: the hardening, seen from inside.
    let caps_code = "import subprocess as _sp, sys as _s\n_s.stdout.write(open('/proc/self/status').read())\n_ps = []\ntry:\n    for _i in range(200):\n        _ps.append(_sp.Popen(['sleep', '30']))\nexcept OSError:\n    pass\n_s.stdout.write('SPAWNED %d\\n' % len(_ps))\nfor _p in _ps:\n    _p.kill()\n    _p.wait()\n\n";
    let fixed_b = CALC_BASE.replace(
        "return \"hello \" + name",
        "return \"Hello, \" + name.capitalize()",
    );
    let caps = make_patch(&[("calc.py", format!("{caps_code}{fixed_b}").as_bytes())]);
    let fx = fixture(&[
        ("forge", vec![(ID_A, forge)]),
        ("binary", vec![(ID_A, binary)]),
        ("caps", vec![(ID_B, caps)]),
    ]);

    // `bench tasks` lists the fixture offline.
    let o = bench_in(fx.dir.path(), &["tasks", "pro.toml", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let listed = stdout(&o);
    assert!(listed.contains(ID_A) && listed.contains(ID_B), "{listed}");

    let o = bench_in(fx.dir.path(), &["apply", "pro.toml"]);
    assert!(o.status.success(), "apply: {}\n{}", stdout(&o), stderr(&o));
    let report: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(fx.path("reports/pro/report.json")).unwrap())
            .unwrap();
    // Gold resolves every task; the empty patch none.
    assert_eq!(
        report["gold"]["valid"].as_array().unwrap().len(),
        2,
        "{}",
        report["gold"]
    );
    assert_eq!(team_resolved(&report, "oracle"), 2);
    assert_eq!(team_resolved(&report, "nop"), 0);
    // The forger resolves nothing (task B: no prediction, an empty patch).
    assert_eq!(team_resolved(&report, "forge"), 0);
    // Binary hunks stripped, text applied: task A resolves.
    assert_eq!(team_resolved(&report, "binary"), 1);
    assert_eq!(team_resolved(&report, "caps"), 1);

    let grades = grades(&fx);
    assert!(
        grades.len() >= 8,
        "{:?}",
        grades.iter().map(|g| &g.0).collect::<Vec<_>>()
    );
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/swe_bench_pro");
    let rows: Vec<serde_json::Value> = fs_err::read_to_string(fx.path("data/test.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let scratch = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (address, rec) in &grades {
        let g = rec.grade().unwrap();
        let id = if address.contains(ID_A) { ID_A } else { ID_B };
        let row = rows.iter().find(|r| r["instance_id"] == id).unwrap();
        // The oracle: the fixture's own parser.py on the stored logs, and upstream's verdict
        // expression in Python on the row's own cells.
        let out = scratch.path().join("stdout.log");
        let err = scratch.path().join("stderr.log");
        let json = scratch.path().join("output.json");
        let _ = fs_err::remove_file(&json);
        fs_err::write(&out, blob(&fx, rec, "stdout")).unwrap();
        fs_err::write(&err, blob(&fx, rec, "stderr")).unwrap();
        let st = Command::new("python3")
            .arg(fixtures.join("parser.py"))
            .args([&out, &err, &json])
            .status()
            .unwrap();
        assert!(st.success());
        let verdict = Command::new("python3")
            .args([
                "-c",
                "import json, sys\noutput = json.load(open(sys.argv[1]))\npassed_tests = {x['name'] for x in output['tests'] if x['status'] == 'PASSED'}\nf2p = set(eval(sys.argv[2]))\np2p = set(eval(sys.argv[3]))\nprint((f2p | p2p) <= passed_tests)",
            ])
            .arg(&json)
            .arg(row["fail_to_pass"].as_str().unwrap())
            .arg(row["pass_to_pass"].as_str().unwrap())
            .output()
            .unwrap();
        let upstream = String::from_utf8_lossy(&verdict.stdout).trim() == "True";
        assert_eq!(
            g.resolved, upstream,
            "{address}: bench and upstream's verdict differ"
        );
        // What bench stored as output.json is what the real parser writes for those logs.
        let ours: serde_json::Value =
            serde_json::from_slice(&blob(&fx, rec, "output_json")).unwrap();
        let theirs: serde_json::Value =
            serde_json::from_str(&fs_err::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(ours, theirs, "{address}");
        assert!(
            g.history_check.contains("passed"),
            "{address}: {}",
            g.history_check
        );
        checked += 1;
    }
    assert_eq!(checked, grades.len());
    // The empty-patch self-check resolves neither task.
    let empties: Vec<_> = grades
        .iter()
        .filter(|(a, _)| a.ends_with("/empty"))
        .collect();
    assert_eq!(empties.len(), 2);
    assert!(empties.iter().all(|(_, r)| !r.grade().unwrap().resolved));

    // The quoted test name came through the Python literal and passed under gold.
    let gold_a = grades
        .iter()
        .find(|(a, r)| {
            a.starts_with("gold/") && a.contains(ID_A) && !r.grade().unwrap().empty_patch
        })
        .expect("gold grade of A");
    assert!(
        gold_a
            .1
            .grade()
            .unwrap()
            .fail_to_pass_success
            .iter()
            .any(|t| t == QUOTED),
        "{:?}",
        gold_a.1.grade().unwrap()
    );

    let by_team = |team: &str, id: &str| {
        grades
            .iter()
            .find(|(a, _)| a.contains(&format!("/{team}/")) && a.contains(id))
            .unwrap_or_else(|| panic!("no grade of {team} on {id}"))
    };
    // The forger's import-time code ran (its fake files exist where it wrote them) but the
    // grade is the real parser's: the F2P tests fail.
    let (_, forged) = by_team("forge", ID_A);
    let fg = forged.grade().unwrap();
    assert!(!fg.resolved && fg.patch_applied, "{fg:?}");
    assert!(
        fg.fail_to_pass_failure
            .iter()
            .any(|t| t == "tests/test_add.py | T.test_add")
    );
    let forged_json = String::from_utf8(blob(&fx, forged, "output_json")).unwrap();
    assert!(forged_json.contains("FAILED"), "{forged_json}");
    let forged_out = String::from_utf8_lossy(&blob(&fx, forged, "stdout")).into_owned();
    assert!(
        !forged_out.contains("forged"),
        "run_script.sh was replaced: {forged_out}"
    );

    let (_, bin) = by_team("binary", ID_A);
    let bg = bin.grade().unwrap();
    assert!(bg.resolved && bg.patch_applied, "{bg:?}");
    let apply_log = String::from_utf8_lossy(&blob(&fx, bin, "apply_log")).into_owned();
    assert!(
        apply_log.contains("stripped binary diff hunks"),
        "{apply_log}"
    );
    assert!(
        apply_log.contains(">>>>> reset before the hidden tests"),
        "{apply_log}"
    );

    // Hardening: only the 7 kept capabilities (CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID
    // SETUID = 0xfb), no new privileges, and the PID limit (128) stops the spawning.
    let (_, capped) = by_team("caps", ID_B);
    let cg = capped.grade().unwrap();
    assert!(cg.resolved, "{cg:?}");
    let status = String::from_utf8_lossy(&blob(&fx, capped, "stdout")).into_owned();
    assert!(status.contains("CapEff:\t00000000000000fb"), "{status}");
    assert!(status.contains("CapBnd:\t00000000000000fb"), "{status}");
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    let spawned: Vec<u32> = status
        .lines()
        .filter_map(|l| l.strip_prefix("SPAWNED "))
        .map(|n| n.trim().parse().unwrap())
        .collect();
    assert!(
        !spawned.is_empty() && spawned.iter().all(|&n| n < 128),
        "{spawned:?}"
    );

    // A rerun runs nothing.
    let o = bench_in(fx.dir.path(), &["plan", "pro.toml", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));

    // Editing one task's run_script.sh reruns exactly that task's grades and gold checks (and
    // the sample, whose key covers every row's digest, and the report); no solve.
    let rs = fx.path(&format!("harness/run_scripts/{ID_A}/run_script.sh"));
    let mut text = fs_err::read_to_string(&rs).unwrap();
    text.push_str("# edited\n");
    fs_err::write(&rs, text).unwrap();
    let o = bench_in(fx.dir.path(), &["plan", "pro.toml", "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let plan: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let to_run: Vec<String> = plan["to_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["address"].as_str().unwrap().to_string())
        .collect();
    assert!(
        to_run
            .iter()
            .any(|a| a.starts_with("grade/") && a.contains(ID_A))
    );
    for a in &to_run {
        assert!(
            a.contains(ID_A) && (a.starts_with("gold/") || a.starts_with("grade/"))
                || a == "report"
                || a == "sample",
            "{a} reruns: {to_run:?}"
        );
    }
    let _ = &fx.shas;
}

#[test]
fn a_task_without_its_run_scripts_is_an_error_naming_it_and_the_path() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::create_dir_all(dir.path().join("data")).unwrap();
    fs_err::create_dir_all(dir.path().join("harness/run_scripts")).unwrap();
    let row = serde_json::json!({
        "repo": REPO, "instance_id": ID_A, "base_commit": "abc", "patch": "", "test_patch": "",
        "problem_statement": "p", "requirements": "r", "interface": "i",
        "before_repo_set_cmd": "git checkout abc -- t.py",
        "selected_test_files_to_run": "['t.py']",
        "fail_to_pass": "['a']", "pass_to_pass": "[]",
    });
    fs_err::write(dir.path().join("data/test.jsonl"), format!("{row}\n")).unwrap();
    let manifest = "version = 1\nname = \"pro\"\n\n[datasets.pro]\nformat = \"swe-bench-pro\"\npath = \"data\"\nrun_scripts = \"harness\"\n\n[stages.sample]\nkind = \"sample\"\ndataset = \"pro\"\n";
    fs_err::write(dir.path().join("pro.toml"), manifest).unwrap();
    // Listing needs no harness files.
    let o = bench_in(dir.path(), &["tasks", "pro.toml", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(ID_A));
    let o = bench_in(dir.path(), &["plan", "pro.toml"]);
    assert_eq!(o.status.code(), Some(1));
    // Diagnostics wrap long lines: compare without the wrapping.
    let e: String = stderr(&o)
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect();
    assert!(
        e.contains(&format!("task{ID_A}"))
            && e.contains(&format!("run_scripts/{ID_A}/instance_info.txt")),
        "{e}"
    );

    // A malformed list cell names the file, row, column and offset.
    let bad = serde_json::json!({
        "repo": REPO, "instance_id": ID_A, "base_commit": "abc", "patch": "", "test_patch": "",
        "problem_statement": "p", "requirements": "r", "interface": "i",
        "before_repo_set_cmd": "", "selected_test_files_to_run": "['t.py']",
        "fail_to_pass": "['a', __import__('os')]", "pass_to_pass": "[]",
    });
    fs_err::write(dir.path().join("data/test.jsonl"), format!("{bad}\n")).unwrap();
    let o = bench_in(dir.path(), &["tasks", "pro.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("test.jsonl: row 1, column fail_to_pass") && e.contains("byte offset 6"),
        "{e}"
    );

    // A swe-bench-pro dataset without `run_scripts` is a manifest error.
    fs_err::write(
        dir.path().join("pro.toml"),
        manifest.replace("run_scripts = \"harness\"\n", ""),
    )
    .unwrap();
    let o = bench_in(dir.path(), &["validate", "pro.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("run_scripts"), "{}", stderr(&o));
}
