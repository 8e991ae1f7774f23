//! The event stream of `bench apply --message-format json`: its schema is current, every line
//! of the quickstart's stream validates against it, and the stream holds one event per node
//! start, finish, cache hit and note, in the counts the plan gave; the store's event log holds
//! the same stream.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::*;
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn events_schema_is_up_to_date() {
    let on_disk =
        fs_err::read_to_string(root().join("schemas/events.schema.json")).unwrap_or_default();
    assert!(
        on_disk == bench::events::events_schema_text(),
        "schemas/events.schema.json is stale: run `cargo run -- schema --events > schemas/events.schema.json`"
    );
    let o = bench_in(root(), &["schema", "--events"]);
    assert!(o.status.success());
    assert_eq!(stdout(&o), on_disk);
}

/// The lines of an apply's stdout, each validated against the schema and parsed.
fn stream(o: &std::process::Output) -> Vec<Value> {
    let schema: Value = serde_json::from_str(
        &fs_err::read_to_string(root().join("schemas/events.schema.json")).expect("schema"),
    )
    .expect("schema parses");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let text = stdout(o);
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    for (line, e) in text.lines().zip(&events) {
        let errors: Vec<String> = validator.iter_errors(e).map(|x| x.to_string()).collect();
        assert!(
            errors.is_empty(),
            "{line}\nviolates the schema: {errors:#?}"
        );
    }
    assert!(!events.is_empty(), "no events; stderr:\n{}", stderr(o));
    assert_eq!(events[0]["event"], "run_started", "{text}");
    assert_eq!(events.last().expect("events")["event"], "run_finished");
    events
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

/// Per stage: (started, shared, cache hits, finished) counted from the stream.
fn counts(events: &[Value]) -> BTreeMap<String, [u64; 4]> {
    let mut out: BTreeMap<String, [u64; 4]> = BTreeMap::new();
    for e in events {
        let i = match e["event"].as_str() {
            Some("node_started") => 0,
            Some("node_shared") => 1,
            Some("cache_hit") => 2,
            Some("node_finished") => 3,
            _ => continue,
        };
        out.entry(e["stage"].as_str().expect("stage").to_string())
            .or_default()[i] += 1;
    }
    out
}

/// Every node has exactly one terminal event; a node that finished ran (one `node_started`)
/// or shared a run (one `node_shared`), announced before it finished.
fn one_terminal_event_per_node(events: &[Value]) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut announced: BTreeMap<String, &str> = BTreeMap::new();
    for e in events {
        let kind = e["event"].as_str().expect("kind");
        let Some(address) = e["address"].as_str() else {
            continue;
        };
        match kind {
            "node_started" | "node_shared" => {
                assert!(
                    announced.insert(address.to_string(), kind).is_none(),
                    "{address} announced twice"
                );
            }
            "cache_hit" | "node_finished" => {
                assert!(seen.insert(address.to_string()), "{address} ended twice");
                if kind == "node_finished" {
                    let want = if e["shared_with"].is_null() {
                        "node_started"
                    } else {
                        "node_shared"
                    };
                    assert_eq!(
                        announced.get(address).copied(),
                        Some(want),
                        "{address} finished without {want}"
                    );
                } else {
                    assert!(
                        !announced.contains_key(address),
                        "{address}: hit after start"
                    );
                }
            }
            _ => {}
        }
    }
    seen
}

/// Checks `run_started`'s stages against `bench plan --json`'s, and the stream's counts against
/// the plan's: equal for the stages the plan counts exactly, at most for the estimated ones.
fn matches_plan(plan: &Value, events: &[Value]) {
    let started = &events[0]["stages"];
    let plan_stages = plan["stages"].as_array().expect("plan stages");
    assert_eq!(started.as_array().expect("stages").len(), plan_stages.len());
    let counted = counts(events);
    for (p, s) in plan_stages.iter().zip(started.as_array().expect("stages")) {
        let stage = p["stage"].as_str().expect("stage");
        assert_eq!(s["stage"], stage);
        for field in ["to_run", "shared", "estimated"] {
            assert_eq!(s[field], p[field], "{stage}: {field}");
        }
        assert_eq!(s["cached"], p["cached"].as_u64().unwrap_or(0), "{stage}");
        let [run, shared, hits, _] = counted.get(stage).copied().unwrap_or_default();
        let (to_run, plan_shared, cached) = (
            p["to_run"].as_u64().expect("to_run"),
            p["shared"].as_u64().expect("shared"),
            p["cached"].as_u64().expect("cached"),
        );
        assert_eq!(hits, cached, "{stage}: cache hits");
        if p["estimated"] == true {
            assert!(
                run + shared <= to_run + plan_shared,
                "{stage}: {run} started + {shared} shared, the plan said at most {to_run} + {plan_shared}"
            );
        } else {
            assert_eq!(
                (run, shared),
                (to_run, plan_shared),
                "{stage}: started and shared"
            );
        }
    }
    // The stage summaries are the stream's own counts.
    for f in of_kind(events, "stage_finished") {
        let stage = f["stage"].as_str().expect("stage");
        let [run, shared, hits, finished] = counted.get(stage).copied().unwrap_or_default();
        let total: u64 = [
            "cached",
            "remote",
            "done",
            "shared",
            "failed",
            "not_run",
            "cancelled",
        ]
        .iter()
        .map(|k| f[*k].as_u64().expect("count"))
        .sum();
        assert_eq!(total, hits + finished, "{stage}");
        assert_eq!(f["done"].as_u64(), Some(run), "{stage}");
        assert_eq!(f["shared"].as_u64(), Some(shared), "{stage}");
    }
}

fn plan_json(sb: &Sandbox) -> Value {
    let o = sb.bench(&["plan", "--json", "quickstart.toml"]);
    serde_json::from_slice(&o.stdout).expect("plan JSON")
}

fn apply_json(sb: &Sandbox) -> (std::process::Output, Vec<Value>) {
    let o = sb.bench(&["apply", "--message-format", "json", "quickstart.toml"]);
    let events = stream(&o);
    (o, events)
}

#[test]
fn the_quickstart_stream_validates_and_counts_what_the_plan_counts() {
    let sb = Sandbox::quickstart();
    let plan = plan_json(&sb);
    let (o, events) = apply_json(&sb);
    assert!(o.status.success(), "{}", stderr(&o));
    matches_plan(&plan, &events);
    let ended = one_terminal_event_per_node(&events);
    // Every node the run recorded, and nothing else.
    let runs = files_with_ext(&sb.path(".bench/runs"), "json");
    let run: Value =
        serde_json::from_str(&fs_err::read_to_string(runs.last().expect("a run")).expect("run"))
            .expect("run JSON");
    let recorded: BTreeSet<String> = run["nodes"]
        .as_object()
        .expect("nodes")
        .keys()
        .cloned()
        .collect();
    assert_eq!(ended, recorded);
    // 8 tasks: 1 sample, 8 gold, 24 solves, 24 grades, 1 report.
    assert_eq!(ended.len(), 58, "{ended:?}");
    assert!(of_kind(&events, "cache_hit").is_empty());
    // Grades of a patch another grade runs share that run: the oracle's patches are the gold
    // patches, and the nop's are all empty.
    assert!(!of_kind(&events, "node_shared").is_empty());
    let finished = &events[events.len() - 1];
    assert_eq!(finished["status"], "complete");
    assert_eq!(finished["exit_code"], 0);
    let teams: BTreeMap<&str, (u64, u64)> = finished["reports"][0]["teams"]
        .as_array()
        .expect("teams")
        .iter()
        .map(|t| {
            (
                t["team"].as_str().expect("team"),
                (
                    t["resolved"].as_u64().expect("n"),
                    t["tasks"].as_u64().expect("n"),
                ),
            )
        })
        .collect();
    assert_eq!(
        teams,
        BTreeMap::from([("fixer", (3, 8)), ("nop", (0, 8)), ("oracle", (8, 8))])
    );
    // JSON on stdout only: nothing for people there.
    assert!(!stdout(&o).contains("report: "));

    // A record that fails verification: a note names it, its node runs again, every other
    // node is a cache hit, and the counts are the ones apply planned.
    let store = bench::store::Store::open_existing(&sb.path(".bench")).expect("store");
    let manifest = fs_err::canonicalize(sb.manifest()).expect("manifest");
    let key = store.load_index(&manifest).nodes["sample"].clone();
    let record = sb.path(&format!(".bench/actions/{}/{}.json", &key[..2], &key[2..]));
    assert!(record.is_file(), "{}", record.display());
    fs_err::write(&record, b"{ not a record").expect("corrupt");
    let (o, events) = apply_json(&sb);
    assert!(o.status.success(), "{}", stderr(&o));
    // (A machine without bubblewrap adds a warning.)
    let notes: Vec<&Value> = of_kind(&events, "note")
        .into_iter()
        .filter(|n| n["level"] == "note")
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("is not valid") && m.contains(&key[2..])),
        "{notes:?}"
    );
    let started: Vec<&str> = of_kind(&events, "node_started")
        .iter()
        .map(|e| e["address"].as_str().expect("address"))
        .collect();
    assert_eq!(started, ["sample"]);
    assert_eq!(one_terminal_event_per_node(&events), recorded);
    assert_eq!(of_kind(&events, "cache_hit").len(), 57);
    let planned: u64 = events[0]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["cached"].as_u64().expect("cached"))
        .sum();
    assert_eq!(
        planned, 57,
        "run_started counts the record that was removed as to run"
    );

    // Nothing to run: a full apply (it writes the no-op memo), then one from the memo; both
    // give a cache hit per node.
    for _ in 0..2 {
        let (o, events) = apply_json(&sb);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(one_terminal_event_per_node(&events), recorded);
        assert_eq!(of_kind(&events, "cache_hit").len(), 58);
        matches_plan(&plan_json(&sb), &events);
    }
}

/// The store's event log holds the apply's stream as `--message-format json` prints it (from
/// `run_started`), and a human apply writes the same kind of log: the next apply's replaces it.
#[test]
fn the_event_log_in_the_store_is_the_stream() {
    let sb = Sandbox::quickstart();
    let (o, events) = apply_json(&sb);
    assert!(o.status.success(), "{}", stderr(&o));
    let store = bench::store::Store::open_existing(&sb.path(".bench")).expect("store");
    let manifest = fs_err::canonicalize(sb.manifest()).expect("manifest");
    let path = bench::run::event_log_path(&store, &manifest);
    let logged: Vec<Value> = fs_err::read_to_string(&path)
        .expect("the event log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(logged, events);

    let o = sb.bench(&["apply", "-q", "quickstart.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let again = bench::run::read_event_log(&path)
        .expect("readable")
        .expect("a log");
    let first = |e: &bench::events::Event| match e {
        bench::events::Event::RunStarted(s) => Some(s.run_id.clone()),
        _ => None,
    };
    assert!(first(&again[0]).is_some_and(|id| id != events[0]["run_id"]));
    assert!(matches!(
        again.last(),
        Some(bench::events::Event::RunFinished(_))
    ));
    // Nothing ran: a cache hit per node.
    assert_eq!(
        again
            .iter()
            .filter(|e| matches!(e, bench::events::Event::CacheHit(_)))
            .count(),
        58
    );
}
