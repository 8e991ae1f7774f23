//! The per-repository, per-version evaluation specs of the official harness
//! (`MAP_REPO_VERSION_TO_SPECS` and `MAP_REPO_TO_PARSER`), as data: `specs.toml`, generated
//! from the swebench wheel by `scripts/swebench-specs.py` and embedded here. A dataset reader
//! resolves a row's spec into the task's grading fields (`rebuild_cmds`: the eval script's lines
//! before the test-file reset; `test_cmds`: the test command with its directives; `log_parser`),
//! so the grading digest covers everything the spec decides. SWE-rebench rows bring their own
//! spec (`install_config`) instead of this table.
//!
//! Not here: running the eval script (`swe_bench.rs`), the verdict (`grading.rs`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::protocols::paths::patch_files;

const SPECS: &str = include_str!("specs.toml");

/// What the eval script takes from a spec.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The test command (upstream: a string for Python repos; a list is joined with " ; ").
    pub test_cmd: Vec<String>,
    /// Commands run first (locale setup and the like).
    #[serde(default)]
    pub eval_commands: Vec<String>,
    /// Reinstalls the package before the tests (`python -m pip install -e .`; Python only).
    pub install: Option<String>,
    /// Build steps after the test patch, before the tests (`make`, `cmake --build ...`;
    /// the other languages only).
    #[serde(default)]
    pub build: Vec<String>,
}

/// One repository of the table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repo {
    /// The language of upstream's table the repository is in (`python`, `c`, `go`, `java`,
    /// `js`, `php`, `ruby`, `rust`): Python repositories get `make_eval_script_list_py`'s
    /// script, the others `make_eval_script_list_common`'s.
    pub language: String,
    /// bench's name of its parser (`swebench-django`; `swebench-jekyll` and
    /// `swebench-immutable-js` pick one per instance, see `parsers::swebench::for_instance`).
    pub parser: String,
    /// Upstream's (`parse_log_django`).
    pub upstream_parser: String,
    #[serde(default)]
    pub versions: BTreeMap<String, Spec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    repos: BTreeMap<String, Repo>,
}

fn parsed() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| toml::from_str(SPECS).expect("specs.toml is valid (a unit test reads it)"))
}

/// The repositories of the table.
pub fn table() -> &'static BTreeMap<String, Repo> {
    &parsed().repos
}

/// The spec of `repo` at `version` and its repository (`None`: not in the table).
pub fn spec(repo: &str, version: &str) -> Option<(&'static Spec, &'static Repo)> {
    let r = table().get(repo)?;
    Some((r.versions.get(version)?, r))
}

/// The language a row of `repo` is graded as (`python` for a repository not in the table, as
/// the Python harness assumes).
pub fn language(repo: &str) -> &'static str {
    table().get(repo).map_or("python", |r| r.language.as_str())
}

/// `FAIL_ONLY_REPOS` (5.0.2): graded on explicit failures only.
pub const FAIL_ONLY_REPOS: [&str; 6] = [
    "chartjs/Chart.js",
    "processing/p5.js",
    "markedjs/marked",
    "bpmn-io/bpmn-js",
    "openlayers/openlayers",
    "eslint/eslint",
];

/// The repository an instance id names (`owner__name-123` -> `owner/name`).
pub fn repo_of_instance(id: &str) -> String {
    let (owner, rest) = id.split_once("__").unwrap_or(("", id));
    let name = match rest.rsplit_once('-') {
        Some((n, num)) if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => rest,
    };
    format!("{owner}/{name}")
}

/// The eval script's lines before the test-file reset of a Python spec (SWE-rebench's
/// `install_config`; see [`eval_fields`]).
pub fn setup_commands(spec: &Spec, base_commit: &str) -> Vec<String> {
    eval_fields("", "python", base_commit, "", spec).0
}

/// The test command with the test patch's directives (see [`eval_fields`]).
pub fn test_command(test_cmd: &[String], repo: &str, test_patch: &str) -> String {
    let mut test = vec![test_cmd.join(" ; ")];
    test.extend(test_directives(repo, test_patch));
    test.join(" ")
}

/// Why a row has no spec.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    #[error("repository `{repo}` has no SWE-bench spec (known: {known})")]
    UnknownRepo { repo: String, known: String },
    #[error("repository `{repo}` has no SWE-bench spec for version `{version}` (known: {known})")]
    UnknownVersion {
        repo: String,
        version: String,
        known: String,
    },
}

/// The spec of `repo` at `version` and the repository's parser (bench's name).
pub fn lookup(repo: &str, version: &str) -> Result<(Spec, &'static str), SpecError> {
    let t = table();
    let Some(r) = t.get(repo) else {
        return Err(SpecError::UnknownRepo {
            repo: repo.to_string(),
            known: t.keys().cloned().collect::<Vec<_>>().join(", "),
        });
    };
    match r.versions.get(version) {
        Some(s) => Ok((s.clone(), r.parser.as_str())),
        None => Err(SpecError::UnknownVersion {
            repo: repo.to_string(),
            version: version.to_string(),
            known: r.versions.keys().cloned().collect::<Vec<_>>().join(", "),
        }),
    }
}

/// Upstream's parser function for `repo` (`parse_log_django`), for the oracle.
pub fn upstream_parser(repo: &str) -> Option<&'static str> {
    table().get(repo).map(|r| r.upstream_parser.as_str())
}

/// Extensions (and `csv`, unanchored, as upstream writes it) whose files are not test
/// directives (`NON_TEST_EXTS`).
const NON_TEST_EXTS: [&str; 11] = [
    ".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml",
];

/// `get_test_directives`: the `b/` paths of the test patch's `diff --git` lines, non-test files
/// dropped; for django, module names (`tests/` and `.py` dropped, `/` -> `.`).
pub fn test_directives(repo: &str, test_patch: &str) -> Vec<String> {
    static R: OnceLock<regex::Regex> = OnceLock::new();
    let r = R.get_or_init(|| regex::Regex::new(r"diff --git a/.* b/(.*)").expect("pattern"));
    let mut out: Vec<String> = r
        .captures_iter(test_patch)
        .map(|c| c[1].to_string())
        .filter(|d| !NON_TEST_EXTS.iter().any(|e| d.ends_with(e)))
        .collect();
    if repo == "django/django" {
        for d in &mut out {
            let mut s = d.strip_suffix(".py").unwrap_or(d);
            s = s.strip_prefix("tests/").unwrap_or(s);
            *d = s.replace('/', ".");
        }
    }
    out
}

/// `get_modified_files`: the paths the test patch modifies or deletes (not those it creates),
/// which the eval script checks out at the base before and after the tests.
pub fn modified_files(test_patch: &str) -> Vec<String> {
    patch_files(test_patch)
        .into_iter()
        .filter_map(|f| f.old)
        .collect()
}

/// The task's grading fields of a spec: the eval script's lines before the test-file reset
/// and the test command. Python (`make_eval_script_list_py`): activate, `eval_commands`, the
/// informational git commands, `install`; the test command with the test patch's directives.
/// Other languages (`make_eval_script_list_common`): `cd`, `git config ... safe.directory`,
/// `cd`; the spec's `build` lines then its `test_cmd` lines, one per line, as upstream runs
/// them (no directives: upstream uses the spec's commands as written). The build lines run
/// inside bench's markers, after the test patch as upstream runs them, so their output is
/// part of the parsed section (upstream prints its start marker after them).
pub fn eval_fields(
    repo: &str,
    language: &str,
    base_commit: &str,
    test_patch: &str,
    spec: &Spec,
) -> (Vec<String>, Vec<String>) {
    let env = "testbed";
    let dir = "/testbed";
    if language != "python" {
        let pre = vec![
            format!("cd {dir}"),
            format!("git config --global --add safe.directory {dir}"),
            format!("cd {dir}"),
        ];
        let lines: Vec<&str> = spec
            .build
            .iter()
            .chain(&spec.test_cmd)
            .map(String::as_str)
            .collect();
        return (pre, vec![lines.join("\n")]);
    }
    let mut pre = vec![
        "source /opt/miniconda3/bin/activate".to_string(),
        format!("conda activate {env}"),
        format!("cd {dir}"),
    ];
    pre.extend(spec.eval_commands.iter().cloned());
    pre.extend([
        format!("git config --global --add safe.directory {dir}"),
        format!("cd {dir}"),
        "git status".to_string(),
        "git show".to_string(),
        format!("git -c core.fileMode=false diff {base_commit}"),
        "source /opt/miniconda3/bin/activate".to_string(),
        format!("conda activate {env}"),
    ]);
    if let Some(i) = &spec.install {
        pre.push(i.clone());
    }
    (pre, vec![test_command(&spec.test_cmd, repo, test_patch)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_reads_and_holds_the_verified_repos() {
        for repo in [
            "django/django",
            "sympy/sympy",
            "astropy/astropy",
            "scikit-learn/scikit-learn",
            "sphinx-doc/sphinx",
            "matplotlib/matplotlib",
            "pytest-dev/pytest",
            "pydata/xarray",
            "psf/requests",
            "pylint-dev/pylint",
            "pallets/flask",
            "mwaskom/seaborn",
        ] {
            let r = &table()[repo];
            assert!(!r.versions.is_empty(), "{repo}");
            assert!(crate::parsers::is_builtin(&r.parser));
            assert!(
                crate::parsers::builtin_parser_names().contains(&r.parser.as_str()),
                "{repo}: {}",
                r.parser
            );
        }
        // Every language's table is in, and every repository's parser is a real one.
        let langs: std::collections::BTreeSet<&str> =
            table().values().map(|r| r.language.as_str()).collect();
        assert_eq!(
            langs.into_iter().collect::<Vec<_>>(),
            ["c", "go", "java", "js", "php", "python", "ruby", "rust"]
        );
        for (repo, r) in table() {
            assert!(
                crate::parsers::is_builtin(&r.parser)
                    && (crate::parsers::builtin_parser_names().contains(&r.parser.as_str())
                        || crate::parsers::swebench::is_dispatch(&r.parser)),
                "{repo}: {}",
                r.parser
            );
            assert_eq!(
                crate::parsers::swebench::upstream_name(&r.parser),
                Some(r.upstream_parser.as_str()),
                "{repo}"
            );
        }
        let (s, r) = spec("nlohmann/json", "4237").unwrap();
        assert_eq!(r.language, "c");
        let (pre, test) = eval_fields("nlohmann/json", &r.language, "abc", "", s);
        assert_eq!(pre[1], "git config --global --add safe.directory /testbed");
        assert_eq!(
            test,
            [
                "mkdir -p build\ncd build\ncmake ..\nmake test-udt_cpp11\ncd ..\n./build/tests/test-udt_cpp11 -s -r=xml"
            ]
        );
        let (s, p) = lookup("django/django", "3.0").unwrap();
        assert_eq!(p, "swebench-django");
        assert_eq!(
            s.test_cmd,
            ["./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"]
        );
        assert!(matches!(
            lookup("django/django", "0.1"),
            Err(SpecError::UnknownVersion { .. })
        ));
        assert!(matches!(
            lookup("o/r", "1"),
            Err(SpecError::UnknownRepo { .. })
        ));
    }

    #[test]
    fn instance_ids_name_their_repository() {
        assert_eq!(repo_of_instance("django__django-11099"), "django/django");
        assert_eq!(
            repo_of_instance("pytest-dev__pytest-5262"),
            "pytest-dev/pytest"
        );
        assert_eq!(repo_of_instance("markedjs__marked-1"), "markedjs/marked");
    }

    #[test]
    fn directives_follow_upstream() {
        let patch = "diff --git a/tests/forms_tests/test_x.py b/tests/forms_tests/test_x.py\n--- a/tests/forms_tests/test_x.py\n+++ b/tests/forms_tests/test_x.py\ndiff --git a/tests/data.json b/tests/data.json\ndiff --git a/docs/a.csv b/docs/a.csv\n";
        assert_eq!(
            test_directives("django/django", patch),
            ["forms_tests.test_x"]
        );
        assert_eq!(
            test_directives("pytest-dev/pytest", patch),
            ["tests/forms_tests/test_x.py"]
        );
        let created = "diff --git a/t/new.py b/t/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/t/new.py\n@@ -0,0 +1 @@\n+x\ndiff --git a/t/old.py b/t/old.py\n--- a/t/old.py\n+++ b/t/old.py\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(modified_files(created), ["t/old.py"]);
    }
}
