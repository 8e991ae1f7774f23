//! One test per key field: changing it changes the key; speed and location settings do not.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bench::graph::JobBuilder;
use bench::jobs::{DatasetFacts, Job, PatchInput, ProtocolId, SampleJob};
use bench::manifest::{Agent, BackendKind, Topology};
use common::Sandbox;

struct Keyed {
    key: String,
    inputs: serde_json::Value,
}

fn solve_key(
    m: &bench::manifest::Manifest,
    task: &bench::tasks::Task,
    team: &bench::manifest::Team,
    timeout_s: u64,
    rep: u32,
) -> Keyed {
    let mut m = m.clone();
    m.teams.insert(team.name.clone(), team.clone());
    let job = JobBuilder::new(&m)
        .unwrap()
        .solve(
            &Arc::new(task.clone()),
            &team.name,
            Duration::from_secs(timeout_s),
            rep,
        )
        .unwrap();
    Keyed {
        key: job.key(),
        inputs: job.explain(),
    }
}

fn grade_key(
    m: &bench::manifest::Manifest,
    task: &bench::tasks::Task,
    patch: &str,
    timeout_s: u64,
) -> Keyed {
    let job = JobBuilder::new(m).unwrap().grade(
        ProtocolId::Local,
        &Arc::new(task.clone()),
        PatchInput::Stored(patch.into()),
        Duration::from_secs(timeout_s),
        bench::manifest::AuditMode::Flag,
        false,
    );
    Keyed {
        key: job.key(),
        inputs: job.explain(),
    }
}

fn sample_key(format: &str, snapshot: &str, f: &bench::manifest::SampleFilters) -> Keyed {
    let job = SampleJob::new(
        DatasetFacts {
            format: format.into(),
            snapshot: snapshot.into(),
        },
        f.clone(),
    );
    Keyed {
        key: job.key(),
        inputs: job.explain(),
    }
}

fn setup() -> (Sandbox, bench::manifest::Manifest, bench::tasks::Task) {
    let sb = Sandbox::quickstart();
    let m = bench::manifest::load(&sb.manifest()).unwrap();
    let (sets, _) = bench::run::load_datasets(&m, None, false).unwrap();
    let task = (*sets["quick"].tasks["quickstart__roman-1"]).clone();
    (sb, m, task)
}

#[test]
fn solve_key_fields() {
    let (_sb, m, task) = setup();
    let team = m.teams["fixer"].clone();
    let base = solve_key(&m, &task, &team, 120, 0).key;
    assert_eq!(
        base,
        solve_key(&m, &task, &team, 120, 0).key,
        "deterministic"
    );

    assert_ne!(base, solve_key(&m, &task, &team, 121, 0).key, "timeout");
    assert_ne!(base, solve_key(&m, &task, &team, 120, 1).key, "replicate");

    let mut t2 = team.clone();
    t2.topology = Topology::Solo {
        worker: Agent {
            harness: "fixer".into(),
            model: Some("m2".into()),
        },
    };
    assert_ne!(base, solve_key(&m, &task, &t2, 120, 0).key, "model");

    let mut m2 = m.clone();
    m2.harnesses.get_mut("fixer").unwrap().command = Some("python3 {{script}} -v".into());
    assert_ne!(
        base,
        solve_key(&m2, &task, &team, 120, 0).key,
        "harness command"
    );

    let mut m2 = m.clone();
    m2.harnesses.get_mut("fixer").unwrap().env = vec!["FOO".into()];
    assert_ne!(
        base,
        solve_key(&m2, &task, &team, 120, 0).key,
        "harness env"
    );

    let mut m2 = m.clone();
    let script = m2.harnesses["fixer"].script.clone().unwrap();
    // In a directory of its own: a file beside the fixer's script is in the fixer's key.
    let other = script.parent().unwrap().join("other/other.py");
    fs_err::create_dir_all(other.parent().unwrap()).unwrap();
    fs_err::write(&other, "print('other')\n").unwrap();
    m2.harnesses.get_mut("fixer").unwrap().script = Some(other);
    assert_ne!(
        base,
        solve_key(&m2, &task, &team, 120, 0).key,
        "script content"
    );

    let mut m2 = m.clone();
    m2.prompts.instruction.push_str("Be brief.\n");
    assert_ne!(base, solve_key(&m2, &task, &team, 120, 0).key, "prompt");

    let mut m2 = m.clone();
    m2.backend.kind = BackendKind::Docker;
    assert_ne!(base, solve_key(&m2, &task, &team, 120, 0).key, "backend");

    let mut t3 = task.clone();
    t3.problem_statement.push('!');
    assert_ne!(
        base,
        solve_key(&m, &t3, &team, 120, 0).key,
        "problem statement"
    );

    // What the agent cannot see does not change its key (the gold patch is read by the
    // oracle only).
    let mut t4 = task.clone();
    t4.test_patch.push('\n');
    t4.gold_patch.push('\n');
    t4.fail_to_pass.push("x".into());
    assert_eq!(base, solve_key(&m, &t4, &team, 120, 0).key, "hidden fields");

    // Speed and location settings are not in keys.
    let mut m5 = m.clone();
    m5.limits.jobs = 17;
    m5.limits.agents = 9;
    m5.backend.cpus = 1.0;
    // The remote cache is placement: where results are shared, never what they are.
    m5.cache.remote = Some("s3://bucket/elsewhere".into());
    m5.cache.trust = vec!["ed25519:ks7I-_j-oZWGH5HhrstSdAdSAyI68Fh-wVNlX7LrpKw".into()];
    m5.cache.push = false;
    m5.path = "/elsewhere/quickstart.toml".into();
    m5.dir = "/elsewhere".into();
    for s in m5.stages.values_mut() {
        match &mut s.kind {
            bench::manifest::StageKind::Solve(s) => s.concurrency = Some(1),
            bench::manifest::StageKind::Report(r) => r.out = "/elsewhere/out".into(),
            _ => {}
        }
    }
    assert_eq!(
        base,
        solve_key(&m5, &task, &team, 120, 0).key,
        "speed and location"
    );

    // The oracle reads the gold patch: editing it changes the oracle's key.
    let oracle = m.teams["oracle"].clone();
    let mut t6 = task.clone();
    t6.gold_patch.push('\n');
    assert_ne!(
        solve_key(&m, &task, &oracle, 120, 0).key,
        solve_key(&m, &t6, &oracle, 120, 0).key,
        "gold patch (oracle)"
    );

    // Outcome-changing limits enter docker keys.
    let mut d = m.clone();
    d.backend.kind = BackendKind::Docker;
    let mut d2 = d.clone();
    d2.backend.memory_bytes += 1;
    let mut d3 = d.clone();
    d3.backend.pids += 1;
    let dk = solve_key(&d, &task, &team, 120, 0).key;
    assert_ne!(dk, solve_key(&d2, &task, &team, 120, 0).key, "memory");
    assert_ne!(dk, solve_key(&d3, &task, &team, 120, 0).key, "pids");

    // The prompt does not matter to harnesses that do not read it.
    let oracle = m.teams["oracle"].clone();
    let mut m6 = m.clone();
    m6.prompts.instruction.push_str("Be brief.\n");
    assert_eq!(
        solve_key(&m, &task, &oracle, 120, 0).key,
        solve_key(&m6, &task, &oracle, 120, 0).key
    );
}

#[test]
fn grade_key_fields() {
    let (_sb, m, task) = setup();
    let base = grade_key(&m, &task, "p1", 120).key;
    assert_ne!(base, grade_key(&m, &task, "p2", 120).key, "patch");
    assert_ne!(base, grade_key(&m, &task, "p1", 121).key, "timeout");
    for (name, edit) in [
        (
            "test patch",
            Box::new(|t: &mut bench::tasks::Task| t.test_patch.push('\n'))
                as Box<dyn Fn(&mut bench::tasks::Task)>,
        ),
        (
            "test command",
            Box::new(|t: &mut bench::tasks::Task| t.test_cmds[0].push_str(" -q")),
        ),
        (
            "parser",
            Box::new(|t: &mut bench::tasks::Task| t.log_parser = "pytest".into()),
        ),
        (
            "F2P",
            Box::new(|t: &mut bench::tasks::Task| t.fail_to_pass.pop().map(|_| ()).unwrap_or(())),
        ),
        (
            "P2P",
            Box::new(|t: &mut bench::tasks::Task| t.pass_to_pass.push("x".into())),
        ),
    ] {
        let mut t = task.clone();
        edit(&mut t);
        assert_ne!(base, grade_key(&m, &t, "p1", 120).key, "{name}");
    }
    // The problem statement and the gold patch are not read by grading.
    let mut t = task.clone();
    t.problem_statement.push('!');
    t.gold_patch.push('\n');
    assert_eq!(base, grade_key(&m, &t, "p1", 120).key);
}

#[test]
fn sample_key_fields() {
    let (_sb, m, _task) = setup();
    let bench::manifest::StageKind::Sample(s) = &m.stages["sample"].kind else {
        panic!("sample stage")
    };
    let base = sample_key("local", "snap", &s.filters).key;
    assert_ne!(
        base,
        sample_key("local", "snap2", &s.filters).key,
        "snapshot"
    );
    assert_ne!(
        base,
        sample_key("swe-bench", "snap", &s.filters).key,
        "format"
    );
    type Edit = Box<dyn Fn(&mut bench::manifest::SampleFilters)>;
    let variants: Vec<(&str, Edit)> = vec![
        ("seed", Box::new(|f| f.seed += 1)),
        ("limit", Box::new(|f| f.limit = Some(3))),
        (
            "since",
            Box::new(|f| f.since = Some("2026-08-01T00:00:00Z".into())),
        ),
        (
            "until",
            Box::new(|f| f.until = Some("2026-09-01T00:00:00Z".into())),
        ),
        (
            "repos",
            Box::new(|f| {
                f.repos.insert("a/b".into());
            }),
        ),
        (
            "languages",
            Box::new(|f| {
                f.languages.insert("rust".into());
            }),
        ),
        (
            "instance_ids",
            Box::new(|f| {
                f.instance_ids.insert("x".into());
            }),
        ),
    ];
    for (name, edit) in variants {
        let mut f = s.filters.clone();
        edit(&mut f);
        assert_ne!(base, sample_key("local", "snap", &f).key, "{name}");
    }
}

#[test]
fn sample_is_prefix_stable() {
    let (_sb, m, _task) = setup();
    let (sets, _) = bench::run::load_datasets(&m, None, false).unwrap();
    let bench::manifest::StageKind::Sample(s) = &m.stages["sample"].kind else {
        panic!("sample stage")
    };
    let all = bench::tasks::sample(&sets["quick"], &s.filters);
    assert_eq!(all.len(), 8);
    for limit in 0..=8 {
        let mut f = s.filters.clone();
        f.limit = Some(limit);
        assert_eq!(
            bench::tasks::sample(&sets["quick"], &f),
            all[..limit as usize]
        );
    }
    let mut f = s.filters.clone();
    f.seed = 8;
    assert_ne!(
        bench::tasks::sample(&sets["quick"], &f),
        all,
        "another seed, another order"
    );
}

#[test]
fn image_id_enters_docker_keys_not_the_tag() {
    let (_sb, mut m, mut task) = setup();
    let team = m.teams["fixer"].clone();
    task.base = bench::tasks::TaskBase::Image {
        image: "example/task:latest".into(),
        base_commit: "abc".into(),
    };
    m.backend.kind = BackendKind::Docker;
    m.backend
        .images
        .insert("example/task:latest".into(), "sha256:a".into());
    let grade = grade_key(&m, &task, "p1", 120);
    let solve = solve_key(&m, &task, &team, 120, 0).key;
    assert_eq!(grade.inputs["backend"]["image"], "sha256:a");
    let _ = &grade.inputs;
    // Rebuilt under the same tag: new ID, new keys.
    m.backend
        .images
        .insert("example/task:latest".into(), "sha256:b".into());
    assert_ne!(grade.key, grade_key(&m, &task, "p1", 120).key, "grade");
    assert_ne!(solve, solve_key(&m, &task, &team, 120, 0).key, "solve");
    // Local manifests carry no image field (their keys are unchanged by the docker backend).
    let (_sb2, m2, task2) = setup();
    let local = grade_key(&m2, &task2, "p1", 120);
    assert!(local.inputs["backend"]["image"].is_null());
}

#[test]
fn test_lists_are_sets_in_grade_keys() {
    let (_sb, m, task) = setup();
    let base = grade_key(&m, &task, "p1", 120).key;
    let mut t = task.clone();
    t.pass_to_pass.reverse();
    t.fail_to_pass.reverse();
    let dup = t.fail_to_pass[0].clone();
    t.fail_to_pass.push(dup);
    assert_eq!(base, grade_key(&m, &t, "p1", 120).key, "order and repeats");
    // What the executor reads is the same set: a task set sorts and deduplicates.
    t.normalize_test_lists();
    let mut sorted = task.clone();
    sorted.normalize_test_lists();
    assert_eq!(t.fail_to_pass, sorted.fail_to_pass);
    assert_eq!(t.pass_to_pass, sorted.pass_to_pass);
    // A test moved from one list to the other is another task.
    let mut moved = task.clone();
    let p = moved.pass_to_pass.pop().unwrap();
    moved.fail_to_pass.push(p);
    assert_ne!(base, grade_key(&m, &moved, "p1", 120).key);
}

#[test]
fn the_files_beside_a_harness_script_or_its_declared_files_are_in_solve_keys() {
    let (sb, m, task) = setup();
    let team = m.teams["fixer"].clone();
    let base = solve_key(&m, &task, &team, 120, 0).key;
    // A module beside the script.
    fs_err::write(sb.path("quickstart/agents/helper.py"), "X = 1\n").unwrap();
    let with_helper = solve_key(&m, &task, &team, 120, 0).key;
    assert_ne!(base, with_helper, "a file added beside the script");
    fs_err::write(sb.path("quickstart/agents/helper.py"), "X = 2\n").unwrap();
    assert_ne!(
        with_helper,
        solve_key(&m, &task, &team, 120, 0).key,
        "its content"
    );
    // Hidden files and subdirectories are not beside it.
    fs_err::create_dir_all(sb.path("quickstart/agents/sub")).unwrap();
    fs_err::write(sb.path("quickstart/agents/sub/x.py"), "").unwrap();
    fs_err::write(sb.path("quickstart/agents/.swp"), "").unwrap();
    let now = solve_key(&m, &task, &team, 120, 0).key;
    fs_err::write(sb.path("quickstart/agents/sub/x.py"), "edited").unwrap();
    fs_err::write(sb.path("quickstart/agents/.swp"), "edited").unwrap();
    assert_eq!(now, solve_key(&m, &task, &team, 120, 0).key);
    // Declared files replace the directory: only they are keyed.
    let mut m2 = m.clone();
    fs_err::write(sb.path("lib.py"), "Y = 1\n").unwrap();
    m2.harnesses.get_mut("fixer").unwrap().files = Some(vec![sb.path("lib.py")]);
    let declared = solve_key(&m2, &task, &team, 120, 0).key;
    fs_err::write(sb.path("quickstart/agents/helper.py"), "X = 3\n").unwrap();
    assert_eq!(declared, solve_key(&m2, &task, &team, 120, 0).key);
    fs_err::write(sb.path("lib.py"), "Y = 2\n").unwrap();
    assert_ne!(declared, solve_key(&m2, &task, &team, 120, 0).key);
    // A script beside the manifest keys itself alone (the manifest is not its module).
    let mut m3 = m.clone();
    fs_err::write(sb.path("top.py"), "print()\n").unwrap();
    m3.harnesses.get_mut("fixer").unwrap().script = Some(sb.path("top.py"));
    let top = solve_key(&m3, &task, &team, 120, 0).key;
    fs_err::write(sb.path("lib.py"), "Y = 3\n").unwrap();
    sb.edit("quickstart.toml", "seed = 7", "seed = 8");
    assert_eq!(top, solve_key(&m3, &task, &team, 120, 0).key);
}
