//! SWE-bench Multimodal rows (`SWE-bench/SWE-bench_Multimodal`: JavaScript repositories whose
//! issues show screenshots; parquet or JSON lines), in the shape swebench 5.x publishes: the
//! SWE-bench fields, each row's own `eval_script`, `image` and `log_parser` (read as for
//! `swe-bench` rows, `swe_bench.rs`; the parsers are `parsers/swebench/multimodal.rs`), and
//! `image_assets`: a JSON object (or a JSON string of one, or a parquet struct) whose
//! `problem_statement` list holds the image URLs (already linked from the problem
//! statement's text, which the agent reads) and whose `test_patch` / `patch` lists hold binary
//! files (`{"path", "url"}`) upstream's `run_evaluation` downloads and copies into the tree
//! after the test patch. bench's grading sandboxes have no network and its tasks carry no
//! asset bytes yet, so a row with such files is refused with its file, row and paths (upstream
//! publishes none: its one such instance is deprecated). The task's language is `js`.
//!
//! Not here: grading (the swe-bench protocol, `protocols/swe_bench.rs`).

use crate::tasks::Task;

use super::common::COMMON_COLUMNS;
use super::error::{CellProblem, DatasetError};
use super::swe_bench;
use super::table::Table;

const ASSETS: &str = "image_assets";

pub fn columns() -> Vec<&'static str> {
    let mut c = swe_bench::columns();
    c.push(ASSETS);
    c
}

pub fn required() -> Vec<&'static str> {
    let mut c = COMMON_COLUMNS.to_vec();
    c.extend(["eval_script", "log_parser"]);
    c
}

/// Checks one `image_assets` value: `Ok` when grading needs nothing from it; the error says
/// what is wrong and how to fix it.
fn check_assets(v: &serde_json::Value) -> Result<(), String> {
    let obj = match v {
        serde_json::Value::Null => return Ok(()),
        serde_json::Value::Object(o) => o,
        other => {
            return Err(format!(
                "expected a JSON object with `problem_statement`, `patch` and `test_patch` lists, found {other}"
            ));
        }
    };
    let mut files = Vec::new();
    for (key, list) in obj {
        let items = match list {
            serde_json::Value::Null => continue,
            serde_json::Value::Array(a) => a,
            other => return Err(format!("`{key}` must be a list, found {other}")),
        };
        match key.as_str() {
            "problem_statement" => {
                if let Some(bad) = items.iter().find(|i| !i.is_string() && !i.is_object()) {
                    return Err(format!(
                        "`problem_statement` must list image URLs, found {bad}"
                    ));
                }
            }
            "patch" | "test_patch" => {
                for item in items {
                    let path = item.get("path").and_then(|p| p.as_str()).ok_or_else(|| {
                        format!(
                            "each `{key}` asset must be an object with a `path` and a `url`, found {item}"
                        )
                    })?;
                    files.push(format!("{key}: {path}"));
                }
            }
            other => {
                return Err(format!(
                    "unknown key `{other}` (expected `problem_statement`, `patch`, `test_patch`)"
                ));
            }
        }
    }
    if files.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the row needs binary files staged after its test patch ({}), which bench cannot fetch or stage yet (grading has no network): drop the row",
            files.join(", ")
        ))
    }
}

pub fn rows(t: &mut Table) -> Result<Vec<Task>, DatasetError> {
    t.require(&required())?;
    let mut tasks = swe_bench::rows(t)?;
    for (row, task) in tasks.iter_mut().enumerate() {
        if let Some(v) = t.take_json(row, ASSETS)? {
            check_assets(&v).map_err(|m| t.cell_error(row, ASSETS, CellProblem::Invalid(m)))?;
        }
        task.language = Some("js".into());
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DatasetFormat;

    fn row(assets: serde_json::Value) -> serde_json::Value {
        let script = "#!/bin/bash\nset -uxo pipefail\ncd /testbed\ngit checkout abc test/a.test.js\ngit apply --verbose --reject - <<'EOF_1'\n+x\nEOF_1\n: '>>>>> Start Test Output'\nnpx jest --verbose test/a.test.js\n: '>>>>> End Test Output'\ngit checkout abc test/a.test.js\n";
        serde_json::json!({
            "instance_id": "diegomura__react-pdf-1285", "repo": "diegomura/react-pdf",
            "base_commit": "abc", "patch": "p", "test_patch": "t",
            "problem_statement": "It renders wrong: ![img](https://example.invalid/a.png)",
            "created_at": "2021-05-01T00:00:00Z", "version": "2.0",
            "FAIL_TO_PASS": "[\"packages/a.test.js\"]", "PASS_TO_PASS": "[]",
            "eval_script": script, "image": "swebench/sweb.eval.x86_64.x:latest",
            "log_parser": "parse_log_react_pdf", "eval_type": "pass_and_fail",
            "image_assets": assets
        })
    }

    fn read(rows: &[serde_json::Value]) -> Result<Vec<Task>, DatasetError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mm.jsonl");
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        fs_err::write(&p, text).unwrap();
        super::super::read_file(DatasetFormat::SweBenchMultimodal, &p, "mm.jsonl")
    }

    #[test]
    fn rows_read_with_their_script_parser_and_screenshots() {
        let string = serde_json::json!(
            serde_json::json!({"problem_statement": ["https://example.invalid/a.png"], "patch": [], "test_patch": []})
                .to_string()
        );
        let mut dict = row(serde_json::json!({"problem_statement": [], "test_patch": null}));
        dict["instance_id"] = "diegomura__react-pdf-1286".into();
        let mut none = row(serde_json::Value::Null);
        none["instance_id"] = "diegomura__react-pdf-1287".into();
        let tasks = read(&[row(string), dict, none]).unwrap();
        for t in &tasks {
            assert_eq!(t.language.as_deref(), Some("js"));
            assert_eq!(t.log_parser, "swebench-react-pdf");
            assert_eq!(t.test_cmds, ["npx jest --verbose test/a.test.js"]);
            assert_eq!(t.rebuild_cmds, ["cd /testbed"]);
        }
    }

    #[test]
    fn by_version_parsers_resolve_from_the_rows_version() {
        let mut rows = Vec::new();
        for (i, (parser, version)) in [
            ("parse_log_lighthouse", "10.0"),
            ("parse_log_lighthouse", "5.1"),
            ("parse_log_lighthouse", "2.0"),
            ("parse_log_lighthouse", "v9"),
            ("parse_log_next", "1.27"),
            ("parse_log_next", "1.19"),
        ]
        .into_iter()
        .enumerate()
        {
            let mut r = row(serde_json::Value::Null);
            r["instance_id"] = format!("o__r-{i}").into();
            r["log_parser"] = parser.into();
            r["version"] = version.into();
            rows.push(r);
        }
        let parsers: Vec<String> = read(&rows)
            .unwrap()
            .into_iter()
            .map(|t| t.log_parser)
            .collect();
        assert_eq!(
            parsers,
            [
                "swebench-lighthouse-mocha",
                "swebench-carbon",
                "swebench-lighthouse-json",
                // Upstream raises on a version that is not a number: kept, grading names it.
                "parse_log_lighthouse",
                "swebench-next-v2",
                "swebench-next-v1",
            ]
        );
    }

    #[test]
    fn bad_assets_and_rows_needing_files_are_named() {
        for (assets, want) in [
            (
                serde_json::json!({"test_patch": [{"path": "test/expected.png", "url": "https://x/e.png"}]}),
                "test_patch: test/expected.png",
            ),
            (serde_json::json!({"patch": ["https://x/e.png"]}), "`path`"),
            (serde_json::json!({"test_patch": "x"}), "must be a list"),
            (serde_json::json!({"screenshots": []}), "unknown key"),
            (serde_json::json!(["https://x/e.png"]), "JSON object"),
            (serde_json::json!("{not json"), "JSON"),
        ] {
            let e = read(&[row(assets.clone())]).unwrap_err().to_string();
            assert!(
                e.contains("mm.jsonl: row 1, column image_assets") && e.contains(want),
                "{assets}: {e}"
            );
        }
        // A row without its own eval script: the column is required.
        let mut r = row(serde_json::Value::Null);
        r.as_object_mut().unwrap().remove("eval_script");
        let e = read(&[r]).unwrap_err().to_string();
        assert!(e.contains("eval_script"), "{e}");
    }
}
