//! What a mined commit's test files are, and how to run them: a path rule per language (which
//! changed files are tests) and a framework rule (which command runs them and which built-in
//! parser reads their log).
//!
//! | language | test files | framework | command | parser |
//! |---|---|---|---|---|
//! | Python | `test_*.py`, `*_test.py`, `.py` under a `tests/` or `test/` directory, `conftest.py` | pytest when the repository configures it (`pytest.ini`, `conftest.py`, `[tool.pytest...]` in `pyproject.toml`, `[tool:pytest]` in `setup.cfg`, `[pytest]` in `tox.ini`) or a test imports it; else unittest | `python3 -m pytest -rA -p no:cacheprovider FILES` / `python3 -m unittest -v MODULES` | `pytest` / `unittest` |
//! | Go | `*_test.go` | go test | `go test -v ./PKG...` | `go` |
//! | Rust | `.rs` under a crate's `tests/` directory | cargo test | `cargo test --offline [--manifest-path DIR/Cargo.toml] --test NAME` | `cargo` |
//! | JavaScript / TypeScript | `*.test.*`, `*.spec.*`, files under `__tests__/` or `test/` (`.js .mjs .cjs .ts .jsx .tsx`) | node:test when a test imports `node:test`; jest when `package.json` names jest | `node --test --test-reporter=tap FILES` / `npx jest --verbose FILES` | `tap` / `jest` |
//!
//! Not here: running the command (`candidate.rs`).

use std::collections::BTreeMap;

use super::git::Repo;

/// A test framework bench can run and parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Framework {
    Pytest,
    Unittest,
    GoTest,
    CargoTest,
    NodeTest,
    Jest,
}

impl Framework {
    pub fn name(self) -> &'static str {
        match self {
            Framework::Pytest => "pytest",
            Framework::Unittest => "unittest",
            Framework::GoTest => "go test",
            Framework::CargoTest => "cargo test",
            Framework::NodeTest => "node:test",
            Framework::Jest => "jest",
        }
    }

    pub fn language(self) -> &'static str {
        match self {
            Framework::Pytest | Framework::Unittest => "python",
            Framework::GoTest => "go",
            Framework::CargoTest => "rust",
            Framework::NodeTest | Framework::Jest => "javascript",
        }
    }

    pub fn parser(self) -> &'static str {
        match self {
            Framework::Pytest => "pytest",
            Framework::Unittest => "unittest",
            Framework::GoTest => "go",
            Framework::CargoTest => "cargo",
            Framework::NodeTest => "tap",
            Framework::Jest => "jest",
        }
    }
}

/// How to run a candidate's tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestPlan {
    pub framework: Framework,
    pub test_cmd: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Python,
    Go,
    Rust,
    Js,
}

fn lang_of(path: &str) -> Option<Lang> {
    let ext = path.rsplit_once('.').map(|(_, e)| e)?;
    Some(match ext {
        "py" => Lang::Python,
        "go" => Lang::Go,
        "rs" => Lang::Rust,
        "js" | "mjs" | "cjs" | "ts" | "jsx" | "tsx" => Lang::Js,
        _ => return None,
    })
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn dirs(path: &str) -> impl Iterator<Item = &str> {
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    parts.into_iter()
}

/// Whether a changed path is a test file (see the module's table).
pub fn is_test_file(path: &str) -> bool {
    let name = file_name(path);
    match lang_of(path) {
        Some(Lang::Python) => {
            name.starts_with("test_")
                || name.ends_with("_test.py")
                || name == "conftest.py"
                || dirs(path).any(|d| d == "tests" || d == "test")
        }
        Some(Lang::Go) => name.ends_with("_test.go"),
        Some(Lang::Rust) => dirs(path).any(|d| d == "tests"),
        Some(Lang::Js) => {
            let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
            stem.ends_with(".test")
                || stem.ends_with(".spec")
                || dirs(path).any(|d| d == "__tests__" || d == "test" || d == "tests")
        }
        None => false,
    }
}

/// A test file the framework runs directly (not a helper such as `conftest.py` or a module
/// under `tests/` that is not a test module).
fn runnable(path: &str, lang: Lang) -> bool {
    let name = file_name(path);
    match lang {
        Lang::Python => {
            name != "conftest.py"
                && name != "__init__.py"
                && (name.starts_with("test_") || name.ends_with("_test.py"))
        }
        Lang::Go => name.ends_with("_test.go"),
        Lang::Rust => {
            // tests/NAME.rs is an integration test target; tests/dir/mod.rs and the like are
            // modules of one.
            let parts: Vec<&str> = path.split('/').collect();
            parts.len() >= 2 && parts[parts.len() - 2] == "tests"
        }
        Lang::Js => true,
    }
}

fn quote(s: &str) -> String {
    crate::backend::shell_quote(s)
}

fn repo_configures_pytest(repo: &Repo, commit: &str, paths: &[String]) -> bool {
    let has = |p: &str| paths.iter().any(|x| x == p);
    if has("pytest.ini") || paths.iter().any(|p| file_name(p) == "conftest.py") {
        return true;
    }
    let contains = |p: &str, needle: &str| {
        has(p)
            && repo
                .file(commit, p)
                .is_some_and(|b| String::from_utf8_lossy(&b).contains(needle))
    };
    contains("pyproject.toml", "[tool.pytest")
        || contains("setup.cfg", "[tool:pytest]")
        || contains("tox.ini", "[pytest]")
}

/// The text of the file `path` of `repo` at `commit`, decoded lossily; empty when it has none.
fn text_at(repo: &Repo, commit: &str, path: &str) -> String {
    repo.file(commit, path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// How to run the Python test files `files`: with pytest when one of them imports it or the
/// repository configures it (`paths`, its files at `commit`), otherwise with unittest, whose
/// module names must then be dotted names. `Err` says why unittest cannot import one.
fn python_plan(
    repo: &Repo,
    commit: &str,
    paths: &[String],
    files: &[&str],
) -> Result<TestPlan, String> {
    let imports_pytest = files.iter().any(|f| {
        let text = text_at(repo, commit, f);
        text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("import pytest") || l.starts_with("from pytest")
        })
    });
    if imports_pytest || repo_configures_pytest(repo, commit, paths) {
        Ok(TestPlan {
            framework: Framework::Pytest,
            test_cmd: format!(
                "python3 -m pytest -rA -p no:cacheprovider {}",
                files.iter().map(|f| quote(f)).collect::<Vec<_>>().join(" ")
            ),
        })
    } else {
        let modules: Vec<String> = files
            .iter()
            .map(|f| f.trim_end_matches(".py").replace('/', "."))
            .collect();
        if let Some(bad) = modules.iter().find(|m| {
            !m.split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_'))
        }) {
            return Err(format!(
                "test module `{bad}` is not importable by unittest (its path is not a dotted module name)"
            ));
        }
        Ok(TestPlan {
            framework: Framework::Unittest,
            test_cmd: format!("python3 -m unittest -v {}", modules.join(" ")),
        })
    }
}

/// How to run the Rust integration-test files `files`: one `cargo test --test NAME` each, with
/// the `--manifest-path` of the crate whose `tests/` directory holds it, sorted and joined.
fn rust_plan(files: &[&str]) -> TestPlan {
    let mut cmds = Vec::new();
    for f in files {
        let (dir, name) = f
            .rsplit_once("/tests/")
            .map_or_else(|| ("", f.trim_start_matches("tests/")), |(d, n)| (d, n));
        let name = name.trim_end_matches(".rs");
        let manifest = if dir.is_empty() {
            String::new()
        } else {
            format!(" --manifest-path {}", quote(&format!("{dir}/Cargo.toml")))
        };
        cmds.push(format!(
            "cargo test --offline{manifest} --test {}",
            quote(name)
        ));
    }
    cmds.sort();
    cmds.dedup();
    TestPlan {
        framework: Framework::CargoTest,
        test_cmd: cmds.join(" ; "),
    }
}

/// How to run the test files `tests` (changed by the fix) of `repo` at `commit` (the fix):
/// `Err` says why they cannot be run.
pub fn plan(repo: &Repo, commit: &str, tests: &[String]) -> Result<TestPlan, String> {
    let present: Vec<&String> = tests.iter().filter(|t| repo.has_file(commit, t)).collect();
    let mut by_lang: BTreeMap<u8, (Lang, Vec<&str>)> = BTreeMap::new();
    for t in &present {
        if let Some(lang) = lang_of(t)
            && runnable(t, lang)
        {
            let order = lang as u8;
            by_lang
                .entry(order)
                .or_insert_with(|| (lang, Vec::new()))
                .1
                .push(t.as_str());
        }
    }
    let mut groups = by_lang.into_values();
    let Some((lang, files)) = groups.next() else {
        return Err("none of its test files is a test the detected frameworks run directly".into());
    };
    if let Some((other, _)) = groups.next() {
        return Err(format!(
            "its tests are in several languages ({lang:?} and {other:?}); mine one framework per task"
        ));
    }
    let paths = repo.paths(commit).map_err(|e| e.to_string())?;
    let read = |p: &str| text_at(repo, commit, p);
    let plan = match lang {
        Lang::Python => python_plan(repo, commit, &paths, &files)?,
        Lang::Go => {
            let mut pkgs: Vec<String> = files
                .iter()
                .map(|f| match f.rsplit_once('/') {
                    Some((d, _)) => format!("./{d}"),
                    None => ".".to_string(),
                })
                .collect();
            pkgs.sort();
            pkgs.dedup();
            TestPlan {
                framework: Framework::GoTest,
                test_cmd: format!(
                    "go test -v {}",
                    pkgs.iter().map(|p| quote(p)).collect::<Vec<_>>().join(" ")
                ),
            }
        }
        Lang::Rust => rust_plan(&files),
        Lang::Js => {
            let node_test = files.iter().any(|f| read(f).contains("node:test"));
            let jest = paths.iter().any(|p| p == "package.json")
                && read("package.json").contains("\"jest\"");
            let quoted = files.iter().map(|f| quote(f)).collect::<Vec<_>>().join(" ");
            if node_test {
                TestPlan {
                    framework: Framework::NodeTest,
                    test_cmd: format!("node --test --test-reporter=tap {quoted}"),
                }
            } else if jest {
                TestPlan {
                    framework: Framework::Jest,
                    test_cmd: format!("npx jest --verbose {quoted}"),
                }
            } else {
                return Err(
                    "its JavaScript tests use neither node:test nor jest (no other runner is detected)"
                        .into(),
                );
            }
        }
    };
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_by_language() {
        for t in [
            "tests/test_roman.py",
            "pkg/roman_test.py",
            "conftest.py",
            "tests/helpers.py",
            "calc/add_test.go",
            "tests/cli.rs",
            "crates/x/tests/it.rs",
            "src/sum.test.js",
            "lib/__tests__/a.ts",
            "test/a.mjs",
        ] {
            assert!(is_test_file(t), "{t}");
        }
        for t in [
            "roman.py",
            "src/lib.rs",
            "add.go",
            "src/sum.js",
            "README.md",
            "tests/data.json",
            "contest.py",
        ] {
            assert!(!is_test_file(t), "{t}");
        }
        assert!(!runnable("tests/helpers.py", Lang::Python));
        assert!(!runnable("tests/common/mod.rs", Lang::Rust));
        assert!(runnable("tests/cli.rs", Lang::Rust));
    }

    /// A repository of one commit holding `files`.
    fn repo_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = dir.path().join(p);
            fs_err::create_dir_all(path.parent().unwrap()).unwrap();
            fs_err::write(path, text).unwrap();
        }
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@t")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@t")
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "c"]);
        let repo = Repo::open(dir.path()).unwrap();
        (dir, repo)
    }

    fn plan_of(files: &[(&str, &str)], tests: &[&str]) -> Result<TestPlan, String> {
        let (_dir, repo) = repo_with(files);
        let tests: Vec<String> = tests.iter().map(|t| t.to_string()).collect();
        plan(&repo, "HEAD", &tests)
    }

    #[test]
    fn frameworks_and_their_commands() {
        let p = plan_of(
            &[("tests/test_a.py", "import unittest\n"), ("a.py", "")],
            &["tests/test_a.py"],
        )
        .unwrap();
        assert_eq!(p.framework, Framework::Unittest);
        assert_eq!(p.test_cmd, "python3 -m unittest -v tests.test_a");
        let p = plan_of(
            &[
                ("tests/test_a.py", "import pytest\n"),
                ("tests/conftest.py", ""),
            ],
            &["tests/test_a.py", "tests/conftest.py"],
        )
        .unwrap();
        assert_eq!(p.framework, Framework::Pytest);
        assert_eq!(
            p.test_cmd,
            "python3 -m pytest -rA -p no:cacheprovider 'tests/test_a.py'"
        );
        let p = plan_of(
            &[
                ("pyproject.toml", "[tool.pytest.ini_options]\n"),
                ("test_b.py", "def test_b(): pass\n"),
            ],
            &["test_b.py"],
        )
        .unwrap();
        assert_eq!(p.framework, Framework::Pytest);
        let p = plan_of(
            &[
                ("calc/add_test.go", "package calc\n"),
                ("main_test.go", "package main\n"),
            ],
            &["calc/add_test.go", "main_test.go"],
        )
        .unwrap();
        assert_eq!(
            (p.framework, p.test_cmd.as_str()),
            (Framework::GoTest, "go test -v '.' './calc'")
        );
        let p = plan_of(
            &[
                ("tests/cli.rs", ""),
                ("crates/x/tests/it.rs", ""),
                ("tests/common/mod.rs", ""),
            ],
            &[
                "tests/cli.rs",
                "crates/x/tests/it.rs",
                "tests/common/mod.rs",
            ],
        )
        .unwrap();
        assert_eq!(p.framework, Framework::CargoTest);
        assert_eq!(
            p.test_cmd,
            "cargo test --offline --manifest-path 'crates/x/Cargo.toml' --test 'it' ; cargo test --offline --test 'cli'"
        );
        let p = plan_of(
            &[
                ("package.json", "{\"devDependencies\": {\"jest\": \"29\"}}"),
                ("src/a.test.js", ""),
            ],
            &["src/a.test.js"],
        )
        .unwrap();
        assert_eq!(
            (p.framework, p.test_cmd.as_str()),
            (Framework::Jest, "npx jest --verbose 'src/a.test.js'")
        );
        let p = plan_of(
            &[("a.test.mjs", "import test from 'node:test';\n")],
            &["a.test.mjs"],
        )
        .unwrap();
        assert_eq!(p.framework, Framework::NodeTest);
        // Refusals: JavaScript without a known runner, two languages, only helpers.
        assert!(
            plan_of(&[("a.test.js", "")], &["a.test.js"])
                .unwrap_err()
                .contains("neither node:test nor jest")
        );
        assert!(
            plan_of(
                &[("test_a.py", ""), ("a_test.go", "")],
                &["test_a.py", "a_test.go"]
            )
            .unwrap_err()
            .contains("several languages")
        );
        assert!(plan_of(&[("tests/helpers.py", "")], &["tests/helpers.py"]).is_err());
        assert!(
            plan_of(
                &[("tests/my-tests/test_a.py", "")],
                &["tests/my-tests/test_a.py"]
            )
            .unwrap_err()
            .contains("not importable")
        );
    }
}
