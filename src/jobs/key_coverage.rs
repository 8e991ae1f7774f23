//! Proof, derived from the job types, that every field of every job is in its key: a fully
//! populated fixture of each job round-trips through its encoding unchanged (so no field is
//! skipped), has no empty or null part (so every nested field is exercised), and changing any
//! one leaf of its encoding (and reading it back as the job) changes the key. No list of fields
//! is kept by hand: a new field is covered as soon as the fixture sets it, and a struct literal
//! does not compile until it does.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::*;
use crate::report::results::NodeRow;
use crate::report::stats::{PairOutcome, PairState};
use crate::types::{Agent, HarnessKind, Price, Promote, SampleFilters, Topology, UsageFormat};

use crate::tasks::{Task, TaskBase};

/// Values a string leaf may take when appending to it does not parse (enum variants).
const ALTERNATIVES: &[&str] = &[
    "flag",
    "in-place",
    "fresh",
    "strict",
    "docker",
    "local",
    "swe-bench-live",
    "command",
    "oracle",
    "nop",
    "predictions",
    "claude-json",
    "codex-jsonl",
    "aider",
    "resolved",
    "not_run",
    "RESOLVED_FULL",
    "RESOLVED_NO",
];

/// Tags of internally tagged enums.
const TAGS: &[&str] = &["topology"];

fn leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            assert!(!m.is_empty(), "empty object at {}", path.join("."));
            for (k, x) in m {
                path.push(k.clone());
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            assert!(
                !a.is_empty(),
                "empty list at {}: set it in the fixture",
                path.join(".")
            );
            for (i, x) in a.iter().enumerate() {
                path.push(i.to_string());
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Null => panic!("null at {}: set it in the fixture", path.join(".")),
        _ => out.push(path.clone()),
    }
}

fn at<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
    path.iter().fold(v, |v, p| match v {
        Value::Object(m) => m.get_mut(p).expect("path exists"),
        Value::Array(a) => &mut a[p.parse::<usize>().expect("index")],
        _ => unreachable!("leaves are below containers"),
    })
}

fn mutations(leaf: &Value) -> Vec<Value> {
    match leaf {
        Value::Bool(b) => vec![Value::Bool(!b)],
        Value::Number(n) if n.is_u64() => vec![Value::from(n.as_u64().unwrap() + 1)],
        Value::Number(n) if n.is_i64() => vec![Value::from(n.as_i64().unwrap() + 1)],
        Value::Number(n) => vec![Value::from(n.as_f64().unwrap() + 0.5)],
        Value::String(s) => std::iter::once(Value::String(format!("{s}x")))
            .chain(
                ALTERNATIVES
                    .iter()
                    .filter(|a| *a != s)
                    .map(|a| Value::String(a.to_string())),
            )
            .collect(),
        _ => unreachable!("leaves are scalars"),
    }
}

/// Every leaf of `fixture`'s encoding is in `key`.
fn assert_every_field_keys<T>(fixture: &T, key: impl Fn(&T) -> String)
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let v = serde_json::to_value(fixture).unwrap();
    let back: T = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(
        &back, fixture,
        "a field does not round-trip: it is not in the key"
    );
    let base = key(fixture);
    let mut paths = Vec::new();
    leaves(&v, &mut Vec::new(), &mut paths);
    for path in paths {
        let mut changed = false;
        for m in mutations(at(&mut v.clone(), &path)) {
            let mut w = v.clone();
            *at(&mut w, &path) = m;
            if let Ok(t) = serde_json::from_value::<T>(w) {
                assert_ne!(
                    key(&t),
                    base,
                    "changing {} does not change the key",
                    path.join(".")
                );
                changed = true;
                break;
            }
        }
        // An enum's tag cannot change alone (the variant decides the other fields), and a change
        // of variant changes those fields too.
        let is_tag = path.last().is_some_and(|l| TAGS.contains(&l.as_str()));
        assert!(
            changed || is_tag,
            "no mutation of {} parses; extend ALTERNATIVES",
            path.join(".")
        );
    }
}

pub(crate) fn task() -> Arc<Task> {
    Arc::new(Task {
        instance_id: "o__r-1".into(),
        repo: "o/r".into(),
        language: Some("python".into()),
        created_at: "2026-07-01T00:00:00Z".into(),
        problem_statement: "bug".into(),
        base: TaskBase::Image {
            image: "img".into(),
            base_commit: "abc".into(),
        },
        gold_patch: "gold".into(),
        test_patch: "tests".into(),
        rebuild_cmds: vec!["make".into()],
        test_cmds: vec!["make test".into()],
        print_cmds: vec!["cat log".into()],
        log_parser: "pytest".into(),
        fail_to_pass: vec!["a".into()],
        pass_to_pass: vec!["b".into()],
        repo_dir: Some("/app".into()),
        pro: Some(crate::tasks::ProSpec {
            before_repo_set_cmd: "git checkout fix -- t.py".into(),
            instance_info: "Instance ID: o__r-1".into(),
            parser_py: "import json".into(),
            run_script: "python -m unittest".into(),
            selected_test_files: vec!["t.py".into()],
        }),
        setup_cmds: vec!["make setup".into()],
        harbor: None,
        digests: Default::default(),
    })
}

pub(crate) fn facts() -> BackendFacts {
    BackendFacts {
        kind: crate::types::BackendKind::Docker,
        image: Some("sha256:1".into()),
        memory_bytes: Some(1 << 30),
        pids: Some(512),
        isolation: "container".into(),
    }
}

fn filters() -> SampleFilters {
    SampleFilters {
        since: Some("2026-01-01T00:00:00Z".into()),
        until: Some("2027-01-01T00:00:00Z".into()),
        repos: ["o/r".to_string()].into(),
        languages: ["python".to_string()].into(),
        instance_ids: ["o__r-1".to_string()].into(),
        limit: Some(5),
        seed: 7,
    }
}

fn agent(h: &str) -> Agent {
    Agent {
        harness: h.into(),
        model: Some("m".into()),
    }
}

pub(crate) fn team() -> TeamSpec {
    TeamSpec {
        topology: Topology::Review {
            coder: agent("cli"),
            reviewer: agent("cli"),
            rounds: 2,
        },
        harnesses: BTreeMap::from([(
            "cli".to_string(),
            HarnessSpec {
                kind: HarnessKind::Command,
                adapter_version: 1,
                command: Some("run".into()),
                script: Some(ScriptSpec {
                    name: "a.py".into(),
                    content: Blob::new(b"print()".to_vec()),
                }),
                files: vec![InstallFile {
                    path: "helper.py".into(),
                    mode: 0o644,
                    content: Blob::new(b"X = 1".to_vec()),
                }],
                env: vec!["KEY".into()],
                usage: Some(UsageFormat::CodexJsonl),
                version: Some("1.0".into()),
                own_files: vec![".aider*".into()],
                install: Some(InstallSpec {
                    runtime: Some(crate::types::Runtime {
                        name: "node".into(),
                        url: "http://x/node.tar.gz".into(),
                        sha256: "ab".into(),
                    }),
                    commands: vec!["pip install x".into()],
                    files: vec![InstallFile {
                        path: "x".into(),
                        mode: 0o755,
                        content: Blob::new(b"x".to_vec()),
                    }],
                }),
                egress: Some(vec!["api.example.com:443".into()]),
                base_url: Some("http://127.0.0.1:4000/v1".into()),
                caches: vec![".codex/skills/**".into()],
            },
        )]),
        prompts: PromptSet {
            instruction: Some("i".into()),
            review: Some("r".into()),
            fix: Some("f".into()),
            judge: Some("j".into()),
        },
    }
}

#[test]
fn sample_job() {
    let j = SampleJob::new(
        DatasetFacts {
            format: "local".into(),
            snapshot: "s".into(),
        },
        filters(),
    );
    assert_every_field_keys(&j, Job::key);
}

#[test]
fn grade_job() {
    let t = task();
    for patch in [
        PatchInput::Stored("d".into()),
        PatchInput::Gold(GoldPatch::new(&t)),
    ] {
        let mut j = GradeJob::new(
            ProtocolId::SweBenchLive,
            facts(),
            GradingTask::new(&t),
            patch,
            std::time::Duration::from_millis(120_900),
            crate::types::AuditMode::Strict,
        );
        j.hardening = Some(crate::backend::Hardening::grading());
        j.network = true;
        j.confirm = Some(false);
        j.harbor = Some(crate::types::HarborVerifier::Fresh);
        assert_every_field_keys(&j, Job::key);
    }
}

#[test]
fn solve_job_and_team_spec() {
    let t = task();
    let mut j = SolveJob::new(
        facts(),
        SolverTask::new(&t),
        Digested::new(team()),
        Some(GoldPatch::new(&t)),
        BTreeMap::from([("preds".to_string(), Some(Blob::new(b"diff".to_vec())))]),
        std::time::Duration::from_millis(1500),
        1,
    );
    let mut check = GradeJob::new(
        ProtocolId::SweBenchLive,
        facts(),
        GradingTask::new(&t),
        PatchInput::Stored("d".into()),
        std::time::Duration::from_millis(120_900),
        crate::types::AuditMode::Strict,
    );
    check.hardening = Some(crate::backend::Hardening::grading());
    check.network = true;
    check.confirm = Some(true);
    j.confirm = Some(Box::new(check));
    j.harbor = Some(crate::jobs::HarborTrialJob {
        protocol: 1,
        task: GradingTask::new(&t),
    });
    assert_every_field_keys(&j, Job::key);
    // The team enters the solve key by its digest: every field of the team is in that digest.
    assert_every_field_keys(&team(), crate::key::digest_of);
}

/// The report job, every field populated. It is longer than 120 lines because it is one struct
/// literal of every field of the report's inputs, which is what makes a new field fail to compile
/// until the fixture sets it.
#[test]
fn report_job() {
    let inputs = ReportInputs {
        manifest: "m".into(),
        description: Some("d".into()),
        bench_version: "0.1.0".into(),
        backend: "local".into(),
        network: BTreeMap::from([("agent".to_string(), "x".to_string())]),
        datasets: vec!["o/d@rev".into()],
        filters: vec![filters()],
        since: Some("2026-01-01T00:00:00Z".into()),
        teams: vec!["solo".into()],
        baseline: Some("solo".into()),
        count_errors_as_failures: true,
        gold: BTreeMap::from([("o__r-1".to_string(), Some(true))]),
        gold_reasons: BTreeMap::from([("o__r-1".to_string(), "why".to_string())]),
        pairs: vec![PairOutcome {
            task: "o__r-1".into(),
            team: "solo".into(),
            replicate: 1,
            state: PairState::Unresolved { timed_out: true },
            cost_usd: Some(0.5),
            wall_time_s: Some(2.0),
            language: Some("python".into()),
            repo: Some("o/r".into()),
            score: Some(0.25),
            correctness: Some(0.5),
            cost_basis: {
                let mut basis = crate::report::stats::BasisCounts::default();
                basis.add("table", 1);
                basis
            },
        }],
        rows: vec![NodeRow {
            node: "grade".into(),
            address: "grade/x".into(),
            key: Some("k".into()),
            task: "o__r-1".into(),
            repo: Some("o/r".into()),
            language: Some("python".into()),
            team: "solo".into(),
            replicate: 1,
            status: "ok".into(),
            resolved: Some(true),
            timed_out: Some(false),
            errored: true,
            error: Some("e".into()),
            patch_applied: Some(true),
            resolution: Some("RESOLVED_FULL".into()),
            cost_usd: Some(0.1),
            input_tokens: Some(10),
            output_tokens: Some(5),
            patch_bytes: Some(3),
            duration_s: Some(1.5),
            reward: Some(0.5),
            score: Some(0.25),
            verifier: Some("fresh".into()),
        }],
        artifacts: vec![PairArtifacts {
            task: "o__r-1".into(),
            team: "solo".into(),
            replicate: 1,
            patch: Some("p".into()),
            trajectory: Some("t".into()),
            log: Some("l".into()),
        }],
        promote: Some(Promote {
            candidate: "a".into(),
            baseline: "b".into(),
            max_drop_points: 1.0,
            min_cost_saving_percent: 2.0,
        }),
        usage: vec![PairUsage {
            task: "o__r-1".into(),
            team: "solo".into(),
            replicate: 1,
            runs: vec![RunUsage {
                role: "worker".into(),
                harness: "cli".into(),
                model: Some("m".into()),
                tokens: Some(Tokens {
                    input: 1,
                    cached_input: 2,
                    cache_write: 3,
                    output: 4,
                }),
                reported_cost_usd: Some(0.5),
                reported_exact: true,
                no_model: true,
                timed_out: true,
            }],
        }],
        pricing: BTreeMap::from([(
            "m".to_string(),
            Price {
                input: 1.0,
                cached_input: 0.5,
                cache_write: 1.5,
                output: 2.0,
            },
        )]),
        audit: vec![crate::report::AuditedPair {
            task: "t".into(),
            team: "a".into(),
            replicate: 0,
            flags: vec![crate::types::AuditFlag {
                path: "run_tests.sh".into(),
                reason: "r".into(),
            }],
        }],
        resolutions: vec![crate::report::PairResolution {
            task: "t".into(),
            team: "a".into(),
            replicate: 0,
            resolution: crate::jobs::Resolution::Partial,
        }],
        scores: vec![crate::report::document::PairScore {
            task: "t".into(),
            team: "a".into(),
            replicate: 1,
            verifier: "fresh".into(),
            reward: Some(BTreeMap::from([("reward".to_string(), 0.5)])),
            score: Some(0.5),
            correctness: Some(0.25),
        }],
        scorer: Some("reward".into()),
        attempts: vec![crate::report::document::PairAttempts {
            task: "t".into(),
            team: "a".into(),
            replicate: 1,
            attempts: vec![crate::report::document::AttemptSummary {
                attempt: 1,
                outcome: Some("timed out".into()),
                deadline_s: 3.0,
                selected_by: Some("timed-out".into()),
                run_id: Some("r".into()),
            }],
        }],
    };
    let j = ReportJob::new(inputs, "/tmp/out".into());
    assert_every_field_keys(&j, Job::key);
}

#[test]
fn durations_keep_their_milliseconds() {
    let t = task();
    let k = |ms| {
        GradeJob::new(
            ProtocolId::Local,
            facts(),
            GradingTask::new(&t),
            PatchInput::Empty,
            std::time::Duration::from_millis(ms),
            crate::types::AuditMode::Flag,
        )
        .key()
    };
    assert_ne!(k(120_000), k(120_900));
}
