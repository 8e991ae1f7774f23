//! SWE-rebench rows (`nebius/SWE-rebench`, `nebius/SWE-rebench-leaderboard`; parquet or JSON
//! lines): the SWE-bench fields plus `install_config`, each row's own evaluation spec (a JSON
//! object, or a JSON string of one), which takes the place of the swe-bench protocol's specs
//! table: its `test_cmd` (a string or a list) with the test patch's directives becomes the
//! task's test command, its `eval_commands` and `install` the eval script's setup lines, its
//! `log_parser` (upstream's function name, `parse_log_pytest`) the task's parser
//! (`swebench-pytest`). As the SWE-rebench fork does, `install` and `test_cmd` run with
//! `LANG=C.UTF-8 LC_ALL=C.UTF-8`. The image is the row's `docker_image` (or `image_name`), else
//! `swerebench/sweb.eval.x86_64.<id with __ -> _1776_, lowercased>:latest` (the leaderboard's
//! namespace). Keys of `install_config` that build images (`python`, `packages`, `pip_packages`,
//! `pre_install`, `reqs_path`, `env_yml_path`, `no_use_env`, `docker_specs`) are not read.
//!
//! Not here: grading (the swe-bench protocol, `protocols/swe_bench.rs`).

use crate::parsers::swebench as parsers;
use crate::protocols::swe_bench::specs;
use crate::tasks::{Task, TaskBase};

use super::common::{COMMON_COLUMNS, Common, image_key};
use super::error::{CellProblem, DatasetError};
use super::table::Table;

const CONFIG: &str = "install_config";
const LOCALE: &str = "LANG=C.UTF-8 LC_ALL=C.UTF-8 ";

pub fn columns() -> Vec<&'static str> {
    let mut c = COMMON_COLUMNS.to_vec();
    c.extend([CONFIG, "docker_image", "image_name", "version"]);
    c
}

/// What grading takes from one `install_config`.
#[derive(Debug, PartialEq)]
struct Config {
    test_cmd: Vec<String>,
    eval_commands: Vec<String>,
    install: Option<String>,
    log_parser: &'static str,
}

fn with_locale(cmd: &str) -> String {
    if cmd.starts_with(LOCALE) {
        cmd.to_string()
    } else {
        format!("{LOCALE}{cmd}")
    }
}

/// Reads an `install_config` value; the error says what is wrong and how to fix it.
fn config(v: &serde_json::Value) -> Result<Config, String> {
    let obj = v.as_object().ok_or_else(|| {
        format!("expected a JSON object with `test_cmd` and `log_parser`, found {v}")
    })?;
    let strings = |key: &str| -> Result<Vec<String>, String> {
        match obj.get(key) {
            None | Some(serde_json::Value::Null) => Ok(Vec::new()),
            Some(serde_json::Value::String(s)) => Ok(vec![s.clone()]),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(String::from)
                        .ok_or_else(|| format!("`{key}` must hold strings, found {x}"))
                })
                .collect(),
            Some(other) => Err(format!(
                "`{key}` must be a string or a list of strings, found {other}"
            )),
        }
    };
    let test_cmd = strings("test_cmd")?;
    if test_cmd.iter().all(|c| c.trim().is_empty()) {
        return Err("has no `test_cmd`: the row cannot be graded (add the test command)".into());
    }
    let parser_name = match obj.get("log_parser") {
        Some(serde_json::Value::String(s)) => s.clone(),
        None | Some(serde_json::Value::Null) => {
            return Err(format!(
                "has no `log_parser`: name one of upstream's parsers ({})",
                parsers::upstream_names().join(", ")
            ));
        }
        Some(other) => return Err(format!("`log_parser` must be a string, found {other}")),
    };
    let log_parser = parsers::from_upstream(&parser_name).ok_or_else(|| {
        format!(
            "log_parser `{parser_name}` is not one of the SWE-bench parsers bench ports ({})",
            parsers::upstream_names().join(", ")
        )
    })?;
    let install = match obj.get("install") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) if s.trim().is_empty() => None,
        Some(serde_json::Value::String(s)) => Some(with_locale(s)),
        Some(other) => return Err(format!("`install` must be a string, found {other}")),
    };
    Ok(Config {
        test_cmd: test_cmd.iter().map(|c| with_locale(c)).collect(),
        eval_commands: strings("eval_commands")?,
        install,
        log_parser,
    })
}

pub fn rows(t: &mut Table) -> Result<Vec<Task>, DatasetError> {
    t.require(&COMMON_COLUMNS)?;
    t.require(&[CONFIG])?;
    (0..t.rows)
        .map(|row| {
            let c = Common::take(t, row)?;
            let raw = t
                .take_json(row, CONFIG)?
                .ok_or_else(|| t.cell_error(row, CONFIG, CellProblem::Null))?;
            let cfg =
                config(&raw).map_err(|m| t.cell_error(row, CONFIG, CellProblem::Invalid(m)))?;
            let image = match t.take_str(row, "docker_image")? {
                Some(i) if !i.trim().is_empty() => i,
                _ => match t.take_str(row, "image_name")? {
                    Some(i) if !i.trim().is_empty() => i,
                    _ => format!(
                        "swerebench/sweb.eval.x86_64.{}:latest",
                        image_key(&c.instance_id)
                    ),
                },
            };
            let spec = specs::Spec {
                test_cmd: cfg.test_cmd.clone(),
                eval_commands: cfg.eval_commands,
                install: cfg.install,
                build: Vec::new(),
            };
            let rebuild_cmds = specs::setup_commands(&spec, &c.base_commit);
            let log_parser = crate::parsers::swebench::for_instance(cfg.log_parser, &c.instance_id)
                .unwrap_or(cfg.log_parser.to_string());
            let test_cmds = vec![specs::test_command(&cfg.test_cmd, &c.repo, &c.test_patch)];
            Ok(Task {
                base: TaskBase::Image {
                    image,
                    base_commit: c.base_commit,
                },
                instance_id: c.instance_id,
                repo: c.repo,
                language: Some("python".into()),
                created_at: c.created_at,
                problem_statement: c.problem_statement,
                gold_patch: c.patch,
                test_patch: c.test_patch,
                rebuild_cmds,
                test_cmds,
                print_cmds: Vec::new(),
                log_parser,
                fail_to_pass: c.fail_to_pass,
                pass_to_pass: c.pass_to_pass,
                repo_dir: None,
                pro: None,
                setup_cmds: Vec::new(),
                harbor: None,
                digests: Default::default(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_gives_the_command_setup_and_parser() {
        let v = serde_json::json!({
            "python": "3.9", "pre_install": ["apt-get install -y x"],
            "install": "pip install -e .", "test_cmd": "pytest -rA",
            "log_parser": "parse_log_pytest_options", "eval_commands": ["export A=1"]
        });
        let c = config(&v).unwrap();
        assert_eq!(c.test_cmd, ["LANG=C.UTF-8 LC_ALL=C.UTF-8 pytest -rA"]);
        assert_eq!(
            c.install.as_deref(),
            Some("LANG=C.UTF-8 LC_ALL=C.UTF-8 pip install -e .")
        );
        assert_eq!(c.eval_commands, ["export A=1"]);
        assert_eq!(c.log_parser, "swebench-pytest-options");
        // Upstream's aliases name the same parsers.
        let v = serde_json::json!({"test_cmd": ["pytest"], "log_parser": "parse_log_flask"});
        assert_eq!(config(&v).unwrap().log_parser, "swebench-pytest");
    }

    #[test]
    fn bad_configs_say_what_to_fix() {
        let e = config(&serde_json::json!({"test_cmd": "pytest", "log_parser": "parse_log_nope"}))
            .unwrap_err();
        assert!(
            e.contains("parse_log_nope") && e.contains("parse_log_pytest"),
            "{e}"
        );
        let e = config(&serde_json::json!({"log_parser": "parse_log_pytest"})).unwrap_err();
        assert!(e.contains("test_cmd"), "{e}");
        let e = config(&serde_json::json!({"test_cmd": "pytest"})).unwrap_err();
        assert!(e.contains("log_parser"), "{e}");
        assert!(config(&serde_json::json!("x")).is_err());
    }
}
