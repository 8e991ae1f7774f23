//! SWE-rebench V2 rows (`nebius/SWE-rebench-V2`, about 32k tasks in 20 languages; parquet or
//! JSON lines): the SWE-bench fields plus `language`, `image_name` (the task's prebuilt image,
//! `docker.io/swerebenchv2/<repo>:<pr>-base`) and `install_config` (a JSON object, or a JSON
//! string of one) whose `test_cmd` (a string or a list, run as written, one line each: V2 adds
//! no test directives) and `log_parser` (upstream's function name, `parse_log_gotest`, mapped
//! to bench's port) grade the task. The repository is at `/{repo name}` in the image (the
//! task's `repo_dir`), and the eval script's setup is `make_eval_script_list_common`'s `cd` and
//! `git config ... safe.directory` there. Keys of `install_config` that build images
//! (`install`, `base_image_name`, `docker_specs`, ...) are not read: the image is built. `meta`
//! (LLM annotations: `meta.llm_metadata.difficulty`) is not read either: no sample filter
//! reads it.
//!
//! Not here: grading (the swe-rebench-v2 protocol, `protocols/swe_rebench_v2.rs`).

use crate::parsers::swebench as parsers;
use crate::tasks::{Task, TaskBase};

use super::common::{COMMON_COLUMNS, Common};
use super::error::{CellProblem, DatasetError};
use super::table::Table;

const CONFIG: &str = "install_config";
const IMAGE: &str = "image_name";

pub fn columns() -> Vec<&'static str> {
    let mut c = COMMON_COLUMNS.to_vec();
    c.extend([CONFIG, IMAGE, "language"]);
    c
}

pub fn required() -> Vec<&'static str> {
    let mut c = COMMON_COLUMNS.to_vec();
    c.extend([CONFIG, IMAGE]);
    c
}

/// What grading takes from one V2 `install_config`.
#[derive(Debug, PartialEq)]
struct Config {
    test_cmd: Vec<String>,
    log_parser: &'static str,
}

/// Reads an `install_config` value; the error says what is wrong and how to fix it.
fn config(v: &serde_json::Value) -> Result<Config, String> {
    let obj = v.as_object().ok_or_else(|| {
        format!("expected a JSON object with `test_cmd` and `log_parser`, found {v}")
    })?;
    let test_cmd: Vec<String> = match obj.get("test_cmd") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(String::from)
                    .ok_or_else(|| format!("`test_cmd` must hold strings, found {x}"))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!(
                "`test_cmd` must be a string or a list of strings, found {other}"
            ));
        }
    };
    let test_cmd: Vec<String> = test_cmd
        .into_iter()
        .filter(|c| !c.trim().is_empty())
        .collect();
    if test_cmd.is_empty() {
        return Err("has no `test_cmd`: the row cannot be graded (add the test command)".into());
    }
    let name = match obj.get("log_parser") {
        Some(serde_json::Value::String(s)) => s.trim().to_string(),
        None | Some(serde_json::Value::Null) => {
            return Err(format!(
                "has no `log_parser`: name one of upstream's parsers ({})",
                parsers::upstream_names().join(", ")
            ));
        }
        Some(other) => return Err(format!("`log_parser` must be a string, found {other}")),
    };
    if name.contains('\n') || name.contains("def ") {
        return Err(format!(
            "`log_parser` holds source code, not a parser's name: bench grades V2 rows with the SWE-bench parsers it ports ({}); drop the row or name one",
            parsers::upstream_names().join(", ")
        ));
    }
    let log_parser = parsers::from_upstream(&name).ok_or_else(|| {
        format!(
            "log_parser `{name}` is not one of the SWE-bench parsers bench ports ({})",
            parsers::upstream_names().join(", ")
        )
    })?;
    Ok(Config {
        test_cmd,
        log_parser,
    })
}

/// The directory V2 images hold the repository in: `/{name}` of `owner/name`.
fn workdir(repo: &str) -> Result<String, String> {
    match repo.split_once('/') {
        Some((owner, name))
            if !owner.is_empty()
                && !name.is_empty()
                && !name.contains('/')
                && name != "."
                && name != ".." =>
        {
            Ok(format!("/{name}"))
        }
        _ => Err(format!(
            "expected `owner/name` (the repository is at `/name` in the image), found {repo:?}"
        )),
    }
}

pub fn rows(t: &mut Table) -> Result<Vec<Task>, DatasetError> {
    t.require(&required())?;
    (0..t.rows)
        .map(|row| {
            let c = Common::take(t, row)?;
            let dir =
                workdir(&c.repo).map_err(|m| t.cell_error(row, "repo", CellProblem::Invalid(m)))?;
            let raw = t
                .take_json(row, CONFIG)?
                .ok_or_else(|| t.cell_error(row, CONFIG, CellProblem::Null))?;
            let cfg =
                config(&raw).map_err(|m| t.cell_error(row, CONFIG, CellProblem::Invalid(m)))?;
            let image = match t.take_str(row, IMAGE)? {
                Some(i) if !i.trim().is_empty() => i.trim().to_string(),
                _ => {
                    return Err(t.cell_error(
                        row,
                        IMAGE,
                        CellProblem::Invalid(
                            "is empty: a V2 row names its prebuilt image (`docker.io/swerebenchv2/<repo>:<pr>-base`)".into(),
                        ),
                    ));
                }
            };
            let language = t
                .take_str(row, "language")?
                .map(|l| l.trim().to_lowercase())
                .filter(|l| !l.is_empty());
            let log_parser = parsers::for_instance(cfg.log_parser, &c.instance_id)
                .unwrap_or(cfg.log_parser.to_string());
            let base = TaskBase::Image {
                image,
                base_commit: c.base_commit,
            };
            Ok(Task {
                repo: c.repo,
                language,
                created_at: c.created_at,
                problem_statement: c.problem_statement,
                gold_patch: c.patch,
                test_patch: c.test_patch,
                rebuild_cmds: vec![
                    format!("cd {dir}"),
                    format!("git config --global --add safe.directory {dir}"),
                    format!("cd {dir}"),
                ],
                test_cmds: vec![cfg.test_cmd.join("\n")],
                log_parser,
                fail_to_pass: c.fail_to_pass,
                pass_to_pass: c.pass_to_pass,
                repo_dir: Some(dir),
                ..Task::blank(c.instance_id, base)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_gives_the_commands_and_parser() {
        let v = serde_json::json!({
            "install": ["go mod download"], "base_image_name": "golang:1.22",
            "docker_specs": {"go_version": "1.22"},
            "test_cmd": ["go build ./...", "go test -v ./..."], "log_parser": "parse_log_gotest"
        });
        let c = config(&v).unwrap();
        assert_eq!(c.test_cmd, ["go build ./...", "go test -v ./..."]);
        assert_eq!(c.log_parser, "swebench-gotest");
        // A string command; blank lines of a list dropped.
        let v =
            serde_json::json!({"test_cmd": ["pytest -rA", " "], "log_parser": "parse_log_pytest"});
        assert_eq!(config(&v).unwrap().test_cmd, ["pytest -rA"]);
    }

    #[test]
    fn bad_configs_say_what_to_fix() {
        for (v, want) in [
            (
                serde_json::json!({"log_parser": "parse_log_pytest"}),
                "test_cmd",
            ),
            (
                serde_json::json!({"test_cmd": [], "log_parser": "parse_log_pytest"}),
                "test_cmd",
            ),
            (
                serde_json::json!({"test_cmd": 3, "log_parser": "parse_log_pytest"}),
                "test_cmd",
            ),
            (
                serde_json::json!({"test_cmd": ["a", 1], "log_parser": "parse_log_pytest"}),
                "strings",
            ),
            (serde_json::json!({"test_cmd": "go test"}), "log_parser"),
            (
                serde_json::json!({"test_cmd": "go test", "log_parser": 7}),
                "log_parser",
            ),
            (
                serde_json::json!({"test_cmd": "t", "log_parser": "parse_log_nope"}),
                "parse_log_nope",
            ),
            (
                serde_json::json!({"test_cmd": "t", "log_parser": "def parse(log):\n  return {}"}),
                "source code",
            ),
            (serde_json::json!("pytest"), "JSON object"),
            (serde_json::json!(["pytest"]), "JSON object"),
        ] {
            let e = config(&v).unwrap_err();
            assert!(e.contains(want), "{v}: {e}");
        }
    }

    #[test]
    fn the_workdir_is_the_repository_name() {
        assert_eq!(workdir("pactus-project/pactus").unwrap(), "/pactus");
        for bad in ["pactus", "/x", "o/", "o/a/b", "o/..", ""] {
            assert!(workdir(bad).is_err(), "{bad}");
        }
    }

    fn write(rows: &[serde_json::Value]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v2.jsonl");
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        fs_err::write(&p, text).unwrap();
        (dir, p)
    }

    fn good() -> serde_json::Value {
        serde_json::json!({
            "instance_id": "pactus-project__pactus-669", "repo": "pactus-project/pactus",
            "base_commit": "abc", "patch": "p", "test_patch": "t",
            "problem_statement": "Fix it.", "created_at": "2025-03-14T09:12:55Z",
            "FAIL_TO_PASS": ["TestA"], "PASS_TO_PASS": "[\"TestB\"]",
            "language": "Go",
            "image_name": "docker.io/swerebenchv2/pactus-project-pactus:669-base",
            "meta": "{\"llm_metadata\": {\"difficulty\": \"medium\"}}",
            "install_config": {"test_cmd": "go test -v ./...", "log_parser": "parse_log_gotest"}
        })
    }

    fn read(rows: &[serde_json::Value]) -> Result<Vec<Task>, DatasetError> {
        let (_d, p) = write(rows);
        super::super::read_file(crate::types::DatasetFormat::SweRebenchV2, &p, "v2.jsonl")
    }

    #[test]
    fn rows_read_with_their_workdir_image_and_commands() {
        let mut b = good();
        b["instance_id"] = "o__r-2".into();
        b["repo"] = "o/r".into();
        // meta as a dict, install_config as a string, no language.
        b["meta"] = serde_json::json!({"llm_metadata": {"difficulty": "hard"}});
        b["install_config"] = serde_json::json!(
            serde_json::json!({"test_cmd": ["pytest -rA"], "log_parser": "parse_log_pytest"})
                .to_string()
        );
        b.as_object_mut().unwrap().remove("language");
        let tasks = read(&[good(), b]).unwrap();
        let t = &tasks[0];
        assert_eq!(t.repo_dir.as_deref(), Some("/pactus"));
        assert_eq!(t.language.as_deref(), Some("go"));
        assert_eq!(t.log_parser, "swebench-gotest");
        assert_eq!(t.test_cmds, ["go test -v ./..."]);
        assert_eq!(t.rebuild_cmds[0], "cd /pactus");
        assert_eq!(t.pass_to_pass, ["TestB"]);
        match &t.base {
            TaskBase::Image { image, base_commit } => {
                assert_eq!(
                    image,
                    "docker.io/swerebenchv2/pactus-project-pactus:669-base"
                );
                assert_eq!(base_commit, "abc");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(tasks[1].repo_dir.as_deref(), Some("/r"));
        assert_eq!(tasks[1].log_parser, "swebench-pytest");
        assert_eq!(tasks[1].language, None);
    }

    #[test]
    fn bad_rows_name_their_file_row_and_column() {
        let mut no_config = good();
        no_config.as_object_mut().unwrap().remove("install_config");
        let e = read(&[no_config]).unwrap_err().to_string();
        assert!(
            e.contains("v2.jsonl") && e.contains("install_config"),
            "{e}"
        );

        let mut null_config = good();
        null_config["install_config"] = serde_json::Value::Null;
        let e = read(&[good(), {
            let mut r = null_config.clone();
            r["instance_id"] = "x__y-1".into();
            r
        }])
        .unwrap_err()
        .to_string();
        assert!(e.contains("row 2") && e.contains("install_config"), "{e}");

        let mut bad_json = good();
        bad_json["install_config"] = "{not json".into();
        let e = read(&[bad_json]).unwrap_err().to_string();
        assert!(
            e.contains("row 1, column install_config") && e.contains("JSON"),
            "{e}"
        );

        let mut no_image = good();
        no_image["image_name"] = "".into();
        let e = read(&[no_image]).unwrap_err().to_string();
        assert!(
            e.contains("column image_name") && e.contains("swerebenchv2"),
            "{e}"
        );

        let mut bad_repo = good();
        bad_repo["repo"] = "pactus".into();
        let e = read(&[bad_repo]).unwrap_err().to_string();
        assert!(e.contains("column repo") && e.contains("owner/name"), "{e}");

        let mut no_parser = good();
        no_parser["install_config"] = serde_json::json!({"test_cmd": "go test"});
        let e = read(&[no_parser]).unwrap_err().to_string();
        assert!(
            e.contains("log_parser") && e.contains("parse_log_gotest"),
            "{e}"
        );
    }
}
