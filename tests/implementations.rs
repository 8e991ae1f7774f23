//! Implementation versions cannot be forgotten: each implementation whose version enters keys
//! (built-in parsers, the parser-script runner, the grading protocols, the harness adapters'
//! usage readers, the sampler, the report renderer) is run on its own fixtures here, and the
//! digest of its output is compared with `tests/golden/implementations.json`. An output that
//! changed while the version did not fails: bump the version (so cached results it served
//! rerun), then rewrite the golden file with `BENCH_UPDATE_GOLDEN=1 cargo nextest run --test
//! implementations`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bench::jobs::{GradeJob, GradingTask, PatchInput, ProtocolId, versions};
use bench::manifest::UsageFormat;

#[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug, Clone)]
struct Entry {
    version: u32,
    digest: String,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn parsers(out: &mut BTreeMap<String, Entry>) {
    let logs = root().join("tests/fixtures/logs");
    for name in bench::parsers::builtin_parser_names() {
        let mut cases: Vec<_> = fs_err::read_dir(logs.join(name))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        cases.sort();
        let mut all = String::new();
        for c in cases {
            let log = String::from_utf8_lossy(&fs_err::read(&c).unwrap()).into_owned();
            let statuses = bench::parsers::parse_log(name, &log).unwrap();
            all.push_str(&format!(
                "{}\n{}\n",
                c.file_name().unwrap().to_string_lossy(),
                bench::parsers::statuses_to_json(&statuses)
            ));
        }
        out.insert(
            format!("parser/{name}"),
            Entry {
                version: bench::parsers::parser_version(name),
                digest: bench::key::digest(all.as_bytes()),
            },
        );
    }
    let script = "def parser(log):\n    return {l.split()[0]: l.split()[1] for l in log.splitlines() if ' ' in l}\n";
    let raw = bench::parsers::run_script_parser(
        script,
        "a PASSED\nb FAILED\nc ERROR\nd skip\n",
        &Default::default(),
    )
    .unwrap();
    let statuses: bench::parsers::Statuses = raw
        .iter()
        .map(|(k, v)| (k.clone(), bench::protocols::script_status(v)))
        .collect();
    out.insert(
        "parser/script".into(),
        Entry {
            version: bench::parsers::SCRIPT_RUNNER_VERSION,
            digest: bench::key::digest(bench::parsers::statuses_to_json(&statuses).as_bytes()),
        },
    );
}

fn protocols(out: &mut BTreeMap<String, Entry>) {
    let sb = common::Sandbox::quickstart();
    let m = bench::manifest::load(&sb.manifest()).unwrap();
    let (sets, _) = bench::run::load_datasets(&m, None, false).unwrap();
    let task: Arc<bench::tasks::Task> = sets["quick"].tasks["quickstart__roman-1"].clone();
    let tmp = tempfile::tempdir().unwrap();
    let backend = bench::backend::LocalBackend::new(tmp.path().to_path_buf(), vec![]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The swe-bench protocol reads the quickstart's unittest log with SWE-bench's django parser
    // (the same `name (module.Class.name) ... ok` lines).
    let swe_task = Arc::new(bench::tasks::Task {
        log_parser: "swebench-django".into(),
        ..(*task).clone()
    });
    // brain bench's protocol: a setup, then the task's tests as `verify` (exit 0 passes).
    let brain_task = Arc::new(bench::tasks::Task {
        log_parser: "exit-code".into(),
        setup_cmds: vec!["echo ready > .setup-done".into()],
        test_cmds: vec![format!("test -f .setup-done && {}", task.test_cmds[0])],
        fail_to_pass: vec![],
        pass_to_pass: vec![],
        ..(*task).clone()
    });
    for protocol in [
        ProtocolId::Local,
        ProtocolId::SweBenchLive,
        ProtocolId::SweBench,
        ProtocolId::BrainBench,
    ] {
        let task = match protocol {
            ProtocolId::SweBench => swe_task.clone(),
            ProtocolId::BrainBench => brain_task.clone(),
            _ => task.clone(),
        };
        let mut all = String::new();
        for patch in [
            PatchInput::Gold(bench::jobs::GoldPatch::new(&task)),
            PatchInput::Empty,
        ] {
            let gold = matches!(patch, PatchInput::Gold(_));
            let bytes = match &patch {
                PatchInput::Gold(g) => g.text().as_bytes().to_vec(),
                _ => Vec::new(),
            };
            let job = GradeJob::new(
                protocol,
                m.backend.facts(&task.base),
                GradingTask::new(&task),
                patch,
                Duration::from_secs(120),
                bench::manifest::AuditMode::Flag,
            );
            let graded = rt.block_on(async {
                use bench::backend::Backend;
                let cancel = tokio_util::sync::CancellationToken::new();
                let spec = bench::backend::SandboxSpec {
                    phase: bench::backend::Phase::Grade,
                    base: &task.base,
                    network: bench::backend::Network::None,
                    image: None,
                    address: "golden",
                    key: "golden",
                    repo_dir: None,
                    hardening: None,
                    stripped: None,
                    before_strip: None,
                    task_env: None,
                };
                let s = backend.create(&spec, &cancel).await.unwrap();
                let g = bench::protocols::grade(&job, &bytes, s.as_ref(), None, &cancel)
                    .await
                    .unwrap();
                s.destroy().await.unwrap();
                g
            });
            if protocol == ProtocolId::BrainBench {
                assert_eq!(graded.output.resolved, gold, "{:?}", graded.output);
                assert_eq!(graded.output.test_exit_code, Some(if gold { 0 } else { 1 }));
            }
            if protocol == ProtocolId::SweBench {
                assert_eq!(graded.output.resolved, gold, "{:?}", graded.output);
                let want = if gold {
                    bench::jobs::Resolution::Full
                } else {
                    bench::jobs::Resolution::No
                };
                assert_eq!(graded.output.resolution, Some(want));
            }
            let mut o = serde_json::to_value(&graded.output).unwrap();
            o["duration_ms"] = 0.into();
            o["nonce"] = "".into();
            all.push_str(&format!(
                "{o}\n{}\n",
                bench::parsers::statuses_to_json(&graded.statuses)
            ));
        }
        out.insert(
            format!("protocol/{}", protocol.name()),
            Entry {
                version: bench::protocols::version(protocol),
                digest: bench::key::digest(all.as_bytes()),
            },
        );
    }
    // The sampler, on the quickstart's tasks.
    let bench::manifest::StageKind::Sample(s) = &m.stages["sample"].kind else {
        panic!("sample stage")
    };
    let mut all = Vec::new();
    for seed in [1, 7, 42] {
        let mut f = s.filters.clone();
        f.seed = seed;
        all.push(bench::tasks::sample(&sets["quick"], &f));
    }
    out.insert(
        "sampler".into(),
        Entry {
            version: versions::SAMPLE,
            digest: bench::key::digest_of(&all),
        },
    );
}

fn adapters(out: &mut BTreeMap<String, Entry>) {
    let cases: &[(UsageFormat, &str)] = &[
        (
            UsageFormat::ClaudeJson,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"APPROVE","total_cost_usd":0.0421,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":300}}"#,
        ),
        (
            UsageFormat::CodexJsonl,
            "{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"PICK: 2\"}}\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":1000,\"cached_input_tokens\":500,\"output_tokens\":100}}\n",
        ),
        (
            UsageFormat::Aider,
            "Tokens: 2.3k sent, 150 received. Cost: $0.01 message, $0.01 session.\nTokens: 1k sent, 50 received. Cost: $0.02 message, $0.03 session.\n",
        ),
        (
            UsageFormat::MiniSweAgent,
            "{\n \"info\": {\"model_stats\": {\"instance_cost\": 0.12, \"api_calls\": 7}, \"submission\": \"done\"}, \"messages\": []}\n",
        ),
    ];
    for (format, text) in cases {
        let u = bench::harness::usage::parse_usage(*format, text, &[]);
        let name = serde_json::to_value(format).unwrap();
        out.insert(
            format!("harness/{}", name.as_str().unwrap()),
            Entry {
                version: format.version(),
                digest: bench::key::digest(format!("{u:?}").as_bytes()),
            },
        );
    }
}

/// The harbor protocol's reading of verifier runs (its docker steps run in `tests/harbor.rs`).
fn harbor(out: &mut BTreeMap<String, Entry>) {
    use bench::protocols::harbor::{VerifierRun, grade_of};
    let run = |txt: Option<&str>, json: Option<&str>, timed_out: bool| VerifierRun {
        mode: "fresh".into(),
        exit_code: Some(1),
        timed_out,
        duration_ms: 5,
        network: false,
        reward_txt: txt.map(String::from),
        reward_json: json.map(String::from),
        stdout: "ok\n".into(),
        error: None,
    };
    let mut all = Vec::new();
    for r in [
        run(Some("1\n"), None, false),
        run(Some("0.25"), Some("{\"reward\": 1}"), false),
        run(
            None,
            Some("{\"reward\": 0.5, \"acc\": 0.9, \"ok\": true, \"s\": {\"a\": 1}}"),
            false,
        ),
        run(None, None, true),
        run(None, None, false),
        run(Some(""), None, false),
    ] {
        let g = grade_of("t", &r).map_err(|e| e.to_string());
        all.extend(serde_json::to_vec(&g.map(|g| serde_json::to_value(g).unwrap())).unwrap());
    }
    out.insert(
        "protocol/harbor".into(),
        Entry {
            version: bench::protocols::version(ProtocolId::Harbor),
            digest: bench::key::digest(&all),
        },
    );
}

fn renderer(out: &mut BTreeMap<String, Entry>) {
    let inputs: bench::stages::ReportInputs = serde_json::from_slice(
        &fs_err::read(root().join("tests/golden/report-inputs.json")).unwrap(),
    )
    .unwrap();
    let fake_blob = |d: &str| Ok(format!("blob {d}\n").into_bytes());
    let r = bench::stages::render_report(&inputs, &fake_blob).unwrap();
    let mut all = Vec::new();
    for (name, bytes) in &r.files {
        all.extend_from_slice(name.as_bytes());
        all.extend_from_slice(&bench::key::digest(bytes).into_bytes());
    }
    out.insert(
        "report".into(),
        Entry {
            version: versions::REPORT,
            digest: bench::key::digest(&all),
        },
    );
}

/// The grading view of a task (its digest is in every gold check's and grade's key), and what a
/// `command` harness gets beside its script (the files of its directory, in its solve key).
fn task_views_and_command_files(out: &mut BTreeMap<String, Entry>) {
    let sb = common::Sandbox::quickstart();
    fs_err::write(sb.path("quickstart/agents/helper.py"), "WORD = 'x'\n").unwrap();
    let m = bench::manifest::load(&sb.manifest()).unwrap();
    let (sets, _) = bench::run::load_datasets(&m, None, false).unwrap();
    let mut digests = Vec::new();
    for t in sets["quick"].tasks.values() {
        let mut shuffled = (**t).clone();
        shuffled.pass_to_pass.reverse();
        shuffled.fail_to_pass.reverse();
        assert_eq!(
            shuffled.grading_digest(),
            t.grading_digest(),
            "lists are sets"
        );
        digests.push(t.grading_digest());
    }
    out.insert(
        "task/grading-view".into(),
        Entry {
            version: versions::GRADING_VIEW,
            digest: bench::key::digest_of(&digests),
        },
    );
    let jobs = bench::graph::JobBuilder::new(&m).unwrap();
    let fixer = &jobs.team("fixer").unwrap().get().harnesses["fixer"];
    let files: Vec<(&str, u32, &str)> = fixer
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.mode, f.content.digest()))
        .collect();
    out.insert(
        "harness/command".into(),
        Entry {
            version: fixer.adapter_version,
            digest: bench::key::digest_of(&(files, &fixer.script.as_ref().unwrap().name)),
        },
    );
}

#[test]
fn every_implementation_version_covers_its_output() {
    let mut now = BTreeMap::new();
    parsers(&mut now);
    task_views_and_command_files(&mut now);
    protocols(&mut now);
    adapters(&mut now);
    harbor(&mut now);
    renderer(&mut now);
    let path = root().join("tests/golden/implementations.json");
    if std::env::var_os("BENCH_UPDATE_GOLDEN").is_some() {
        let mut text = serde_json::to_string_pretty(&now).unwrap();
        text.push('\n');
        fs_err::write(&path, text).unwrap();
        return;
    }
    let golden: BTreeMap<String, Entry> =
        serde_json::from_slice(&fs_err::read(&path).expect("golden file")).unwrap();
    let mut problems = Vec::new();
    for (name, e) in &now {
        match golden.get(name) {
            None => problems.push(format!("{name}: not in the golden file")),
            Some(g) if g.version == e.version && g.digest != e.digest => problems.push(format!(
                "{name}: its output changed but its version ({}) did not: bump it",
                e.version
            )),
            Some(g) if g != e => problems.push(format!(
                "{name}: version {} -> {}: rewrite the golden file",
                g.version, e.version
            )),
            _ => {}
        }
    }
    for name in golden.keys().filter(|n| !now.contains_key(*n)) {
        problems.push(format!("{name}: in the golden file but not measured"));
    }
    assert!(
        problems.is_empty(),
        "{}\n(rewrite with BENCH_UPDATE_GOLDEN=1 after bumping)",
        problems.join("\n")
    );
}
