//! The patch audit: what a fresh grade cannot catch, flagged per pair with reasons. A pure
//! function of the patch text and the task's grading commands; it never rejects a patch by
//! itself (under `[stages.grade] audit = "strict"` a flagged pair counts as unresolved).
//!
//! Flags: changes to test files (test directories, `test_*.py`, `*_test.go`, `*.test.js`, ...);
//! to files the grading commands name (`test_cmds`, `rebuild_cmds`, `print_cmds`); to
//! test-runner configuration and interpreter start-up hooks (conftest.py, pytest.ini, tox.ini,
//! pytest/tox sections of setup.cfg and pyproject.toml, package.json test scripts, jest/vitest/
//! mocha/karma configs, Makefile test targets, CI files, sitecustomize.py, `.pth` files); Go
//! `replace` directives pointing into the repository or at an absolute path; new directories
//! that look vendored (under `vendor/`, `node_modules/`, `site-packages/`, `third_party/`, or 50+
//! new files in one new directory).
//!
//! Not here: `go.sum` entries for modules the image lacks (that needs the image's module cache).

use std::collections::{BTreeMap, BTreeSet};

pub use crate::types::AuditFlag;

use super::paths::{PatchFile, patch_files};

const TEST_DIRS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "__tests__",
    "spec",
    "specs",
    "testdata",
    "e2e",
];
const VENDOR_DIRS: &[&str] = &[
    "vendor",
    "node_modules",
    "site-packages",
    "dist-packages",
    "third_party",
    "third-party",
];
const LARGE_NEW_DIR: usize = 50;

fn is_test_file(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let name = parts.last().copied().unwrap_or("");
    if parts[..parts.len() - 1]
        .iter()
        .any(|d| TEST_DIRS.contains(&d.to_ascii_lowercase().as_str()))
    {
        return true;
    }
    let stem_ext = name.rsplit_once('.');
    (name.starts_with("test_") && name.ends_with(".py"))
        || name.ends_with("_test.py")
        || name.ends_with("_test.go")
        || name.ends_with("_spec.rb")
        || name.ends_with("_test.rb")
        || name.ends_with("Test.java")
        || name.ends_with("Tests.java")
        || name.ends_with("Test.kt")
        || name.ends_with("Tests.cs")
        || stem_ext.is_some_and(|(stem, ext)| {
            ["js", "jsx", "ts", "tsx", "mjs", "cjs"].contains(&ext)
                && (stem.ends_with(".test") || stem.ends_with(".spec"))
        })
}

/// Why a change to this file touches the test runner, if it does.
fn runner_config(f: &PatchFile) -> Option<&'static str> {
    let path = f.path();
    let name = path.rsplit('/').next().unwrap_or(path);
    let mentions = |words: &[&str]| {
        f.added
            .iter()
            .chain(f.removed.iter())
            .any(|l| words.iter().any(|w| l.contains(w)))
    };
    if path.starts_with(".github/workflows/")
        || path.starts_with(".circleci/")
        || path.starts_with(".buildkite/")
        || matches!(
            name,
            ".gitlab-ci.yml" | ".travis.yml" | "azure-pipelines.yml" | "Jenkinsfile"
        )
    {
        return Some("changes CI configuration");
    }
    match name {
        "conftest.py" | "pytest.ini" | "tox.ini" | "noxfile.py" | ".coveragerc" => {
            return Some("changes test-runner configuration");
        }
        "sitecustomize.py" | "usercustomize.py" => {
            return Some("adds an interpreter start-up hook");
        }
        "setup.cfg" | "pyproject.toml"
            if f.created()
                || mentions(&[
                    "pytest",
                    "tox",
                    "addopts",
                    "testpaths",
                    "python_files",
                    "unittest",
                ]) =>
        {
            return Some("changes pytest/tox configuration");
        }
        "package.json"
            if mentions(&[
                "\"test",
                "\"pretest",
                "\"posttest",
                "\"jest",
                "\"vitest",
                "\"mocha",
                "\"ava",
            ]) =>
        {
            return Some("changes package.json test scripts or runner settings");
        }
        "Makefile" | "makefile" | "GNUmakefile" if mentions(&["test", "check"]) => {
            return Some("changes Makefile test targets");
        }
        _ => {}
    }
    if name.ends_with(".pth") {
        return Some("adds an interpreter start-up hook");
    }
    for prefix in [
        "jest.config.",
        "vitest.config.",
        "vitest.workspace.",
        ".mocharc",
        "karma.conf.",
        "jest.setup.",
        "vitest.setup.",
        "phpunit.xml",
    ] {
        if name.starts_with(prefix) {
            return Some("changes test-runner configuration");
        }
    }
    if name.ends_with(".mk") && mentions(&["test"]) {
        return Some("changes Makefile test targets");
    }
    None
}

/// Go `replace` directives of a go.mod that point into the repository or at an absolute path.
fn go_replaces(f: &PatchFile) -> Vec<String> {
    if f.path().rsplit('/').next() != Some("go.mod") {
        return Vec::new();
    }
    f.added
        .iter()
        .filter_map(|l| {
            let (_, target) = l.split_once("=>")?;
            let target = target.trim();
            (target.starts_with("./") || target.starts_with("../") || target.starts_with('/'))
                .then(|| l.trim().to_string())
        })
        .collect()
}

/// The words of the grading commands that may name a file (shell separators removed).
fn command_words(commands: &[&str]) -> BTreeSet<String> {
    commands
        .iter()
        .flat_map(|c| {
            c.split(|ch: char| ch.is_whitespace() || ";|&()<>\"'`=".contains(ch))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|w| !w.is_empty() && !w.starts_with('-'))
        .collect()
}

/// Whether a command word names `path` (relative to the repository, maybe from `/testbed`).
fn names(word: &str, path: &str) -> bool {
    let w = word.strip_prefix("./").unwrap_or(word);
    w == path
        || w.strip_prefix("/testbed/") == Some(path)
        || (w.contains('/') && w.ends_with(&format!("/{path}")))
}

/// The flags of `patch`, given the task's grading commands; sorted, without duplicates.
pub fn audit(patch: &str, commands: &[&str]) -> Vec<AuditFlag> {
    let files = patch_files(patch);
    let words = command_words(commands);
    let mut flags = BTreeSet::new();
    let mut flag = |path: &str, reason: String| {
        flags.insert(AuditFlag {
            path: path.to_string(),
            reason,
        });
    };
    let mut new_dirs: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        for path in [f.old.as_deref(), f.new.as_deref()].into_iter().flatten() {
            if is_test_file(path) {
                flag(path, "changes a test file".into());
            }
            if let Some(w) = words.iter().find(|w| names(w, path)) {
                flag(
                    path,
                    format!("changes a file the grading commands run ({w})"),
                );
            }
        }
        if let Some(reason) = runner_config(f) {
            flag(f.path(), reason.into());
        }
        for r in go_replaces(f) {
            flag(
                f.path(),
                format!("adds a replace directive into the repository or an absolute path: {r}"),
            );
        }
        if f.created() {
            let path = f.path();
            let parts: Vec<&str> = path.split('/').collect();
            if let Some(i) = parts[..parts.len() - 1]
                .iter()
                .position(|d| VENDOR_DIRS.contains(d))
            {
                flag(
                    &parts[..=i].join("/"),
                    "adds files to a vendored-package directory".into(),
                );
            }
            if let Some((dir, _)) = path.split_once('/') {
                *new_dirs.entry(dir.to_string()).or_default() += 1;
            }
        }
    }
    // A top-level directory the patch fills with many new files and no old ones.
    let touched_old: BTreeSet<&str> = files
        .iter()
        .filter_map(|f| f.old.as_deref()?.split_once('/').map(|(d, _)| d))
        .collect();
    for (dir, n) in new_dirs {
        if n >= LARGE_NEW_DIR && !touched_old.contains(dir.as_str()) {
            flag(
                &dir,
                format!("adds a large new directory ({n} files): it looks vendored"),
            );
        }
    }
    flags.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(path: &str, new: bool, added: &[&str]) -> String {
        let mut s = format!("diff --git a/{path} b/{path}\n");
        if new {
            s.push_str(&format!(
                "new file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
                added.len()
            ));
        } else {
            s.push_str(&format!(
                "--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,{} @@\n-old\n",
                added.len()
            ));
        }
        for l in added {
            s.push_str(&format!("+{l}\n"));
        }
        s
    }

    fn reasons(patch: &str, cmds: &[&str]) -> Vec<(String, String)> {
        audit(patch, cmds)
            .into_iter()
            .map(|f| (f.path, f.reason))
            .collect()
    }

    #[test]
    fn a_source_only_patch_is_clean() {
        let p = diff("src/calc.py", false, &["return a + b"]) + &diff("README.md", false, &["x"]);
        assert!(audit(&p, &["pytest tests/test_calc.py", "make build"]).is_empty());
        // package.json and setup.cfg edits that are not about tests are not flagged.
        let p = diff("package.json", false, &["  \"version\": \"1.2.0\","])
            + &diff("setup.cfg", false, &["version = 1.2"]);
        assert!(audit(&p, &[]).is_empty(), "{:?}", audit(&p, &[]));
    }

    #[test]
    fn test_files_are_flagged() {
        for path in [
            "tests/test_x.py",
            "pkg/test_x.py",
            "pkg/x_test.py",
            "cmd/x_test.go",
            "src/a.test.js",
            "src/a.spec.tsx",
            "src/__tests__/a.js",
            "src/test/java/FooTest.java",
            "spec/models/user_spec.rb",
        ] {
            let r = reasons(&diff(path, false, &["x"]), &[]);
            assert_eq!(
                r,
                vec![(path.to_string(), "changes a test file".to_string())],
                "{path}"
            );
        }
        assert!(audit(&diff("src/testing_utils.py", false, &["x"]), &[]).is_empty());
    }

    #[test]
    fn files_the_grading_commands_run_are_flagged() {
        let p = diff("run_tests.sh", false, &["echo ok"]) + &diff("scripts/ci.py", false, &["x"]);
        let r = reasons(
            &p,
            &[
                "bash run_tests.sh > log 2>&1",
                "python3 /testbed/scripts/ci.py",
            ],
        );
        assert!(
            r.contains(&(
                "run_tests.sh".into(),
                "changes a file the grading commands run (run_tests.sh)".into()
            )),
            "{r:?}"
        );
        assert!(
            r.contains(&(
                "scripts/ci.py".into(),
                "changes a file the grading commands run (/testbed/scripts/ci.py)".into()
            )),
            "{r:?}"
        );
        // The same edits with commands that do not name them: not flagged.
        assert!(audit(&p, &["pytest -q"]).is_empty());
    }

    #[test]
    fn runner_configuration_and_hooks_are_flagged() {
        let cases = [
            (
                diff("conftest.py", true, &["import pytest"]),
                "changes test-runner configuration",
            ),
            (
                diff("pytest.ini", false, &["addopts = -p no:cacheprovider"]),
                "changes test-runner configuration",
            ),
            (
                diff("setup.cfg", false, &["[tool:pytest]"]),
                "changes pytest/tox configuration",
            ),
            (
                diff("pyproject.toml", false, &["addopts = \"-q\""]),
                "changes pytest/tox configuration",
            ),
            (
                diff("package.json", false, &["    \"test\": \"echo ok\","]),
                "changes package.json test scripts or runner settings",
            ),
            (
                diff("jest.config.js", false, &["x"]),
                "changes test-runner configuration",
            ),
            (
                diff("vitest.config.ts", false, &["x"]),
                "changes test-runner configuration",
            ),
            (
                diff("Makefile", false, &["test:", "\techo ok"]),
                "changes Makefile test targets",
            ),
            (
                diff(".github/workflows/ci.yml", false, &["x"]),
                "changes CI configuration",
            ),
            (
                diff("sitecustomize.py", true, &["import os"]),
                "adds an interpreter start-up hook",
            ),
            (
                diff("lib/zz.pth", true, &["import os"]),
                "adds an interpreter start-up hook",
            ),
        ];
        for (p, want) in cases {
            let r = reasons(&p, &[]);
            assert_eq!(r.len(), 1, "{p}: {r:?}");
            assert_eq!(r[0].1, want, "{p}");
        }
    }

    #[test]
    fn go_replace_directives_into_the_repo_or_absolute_paths_are_flagged() {
        let p = diff(
            "go.mod",
            false,
            &[
                "replace example.com/x => ./fake/x",
                "replace example.com/y v1 => /opt/y",
                "replace example.com/z => example.com/z2 v1.0.0",
            ],
        );
        let r = reasons(&p, &[]);
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r.iter().all(|(p, _)| p == "go.mod"));
        assert!(r.iter().any(|(_, m)| m.ends_with("=> ./fake/x")));
        assert!(r.iter().any(|(_, m)| m.ends_with("=> /opt/y")));
    }

    #[test]
    fn vendored_trees_are_flagged() {
        let p = diff("vendor/github.com/x/y/y.go", true, &["package y"])
            + &diff("node_modules/left-pad/index.js", true, &["x"]);
        let r = reasons(&p, &[]);
        assert_eq!(
            r.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
            vec!["node_modules", "vendor"]
        );
        let many: String = (0..LARGE_NEW_DIR)
            .map(|i| diff(&format!("fakelib/m{i}.py"), true, &["x"]))
            .collect();
        let r = reasons(&many, &[]);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].0, "fakelib");
        // One file short of the threshold: not flagged.
        let few: String = (1..LARGE_NEW_DIR)
            .map(|i| diff(&format!("fakelib/m{i}.py"), true, &["x"]))
            .collect();
        assert!(audit(&few, &[]).is_empty());
    }
}
