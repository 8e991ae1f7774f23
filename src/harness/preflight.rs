//! Before any node runs: whether the program each team's harness starts exists where it will
//! run, as API keys are checked, so a missing `claude` is one clear message with its fix
//! instead of every solve failing with exit 127. On the local backend the program must be on
//! bench's PATH (agents get that PATH), and one found under /tmp must be visible in the jail
//! too (apply's preflight looks it up there, [`hidden_program`] says what to do); on docker a harness with an `install` recipe builds its
//! program into the agent image (an install that fails is an error naming its output), and one
//! without a recipe runs what the task image has: apply looks the program up in those images
//! before any node (`run/programs.rs`). Also here: a
//! variable passed in a harness's `env` that its pinned CLI is known to ignore (Codex 0.162
//! reads no `OPENAI_BASE_URL`: its runs would go to api.openai.com), refused with the setting
//! that works, on every backend. Not here: whether the environment variables are set and the
//! prices (app's preflight, which calls this per harness), the script files (validated on
//! load).

use std::path::{Path, PathBuf};

use crate::types::{Harness, HarnessKind};

/// The problem with harness `name` on the local backend, run by `teams`, when the program its
/// command starts is not on bench's PATH (agents get that PATH): what is missing and how to fix
/// it. `None` when it is there, or when only the run can tell (a templated or relative
/// program). The caller (apply's preflight) walks the manifest's teams; on docker it does not
/// ask (see the module doc).
pub fn missing_program(name: &str, h: &Harness, teams: &[&str]) -> Option<String> {
    if h.kind != HarnessKind::Command {
        return None;
    }
    let program = h.command.as_deref().and_then(program_of)?;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    if found(&program, &dirs) {
        return None;
    }
    let teams: Vec<String> = teams.iter().map(|t| format!("`{t}`")).collect();
    Some(format!(
        "harness `{name}` (run by team {}) starts `{program}`, which is not on PATH; {}",
        teams.join(", "),
        fix(name, h, &program)
    ))
}

/// The program a command harness starts, when its command names one (see [`program_of`]).
pub fn program(h: &Harness) -> Option<String> {
    (h.kind == HarnessKind::Command)
        .then(|| h.command.as_deref().and_then(program_of))
        .flatten()
}

/// Where `program` resolves on bench's PATH, when it is a file there or an absolute path.
pub fn host_path(program: &str) -> Option<PathBuf> {
    if program.starts_with('/') {
        return executable(Path::new(program)).then(|| PathBuf::from(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

/// The problem with harness `name`, run by `teams`, whose program is on bench's PATH at
/// `found` but not inside the local sandbox (the jail shows the host's /tmp empty but for the
/// PATH's directories and their prefixes): what is wrong and how to fix it.
pub fn hidden_program(name: &str, teams: &[&str], program: &str, found: &Path) -> String {
    let teams: Vec<String> = teams.iter().map(|t| format!("`{t}`")).collect();
    format!(
        "harness `{name}` (run by team {}) starts `{program}`, found on PATH at {}, but the local sandbox cannot run it there: agents see the host read-only with an empty /tmp, showing only the PATH's directories and the prefix holding each `bin` (a virtualenv, an npm prefix), and this program or what it links to lies elsewhere under /tmp; install it outside /tmp (under /opt or ~/.local), or into a prefix whose `bin` is on PATH",
        teams.join(", "),
        found.display()
    )
}

/// A variable a CLI ignores though its vendor's other clients read it.
struct Ignored {
    /// The CLI's program.
    program: &'static str,
    variable: &'static str,
    /// What happens when a user relies on it.
    effect: &'static str,
    /// The harness setting that does what the variable would, and whether a harness sets it.
    setting: &'static str,
    set: fn(&Harness) -> bool,
}

const IGNORED: &[Ignored] = &[Ignored {
    program: "codex",
    variable: "OPENAI_BASE_URL",
    effect: "its runs would go to api.openai.com",
    setting: "base_url",
    set: |h| h.base_url.is_some(),
}];

/// The problems with harness `name`, run by `teams`, passing in its `env` a variable its
/// program ignores: the harness, the variable, what would happen, and the setting to use
/// instead (with the value the environment holds now, when it is a plain URL). Empty when
/// there is none, or when the harness has that setting (it wins: bench passes it).
pub fn ignored_variables(name: &str, h: &Harness, teams: &[&str]) -> Vec<String> {
    if h.kind != HarnessKind::Command {
        return Vec::new();
    }
    let Some(program) = h.command.as_deref().and_then(program_of) else {
        return Vec::new();
    };
    let program = program.rsplit('/').next().unwrap_or_default();
    let teams: Vec<String> = teams.iter().map(|t| format!("`{t}`")).collect();
    let version = h
        .version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    IGNORED
        .iter()
        .filter(|i| i.program == program && h.env.iter().any(|v| v == i.variable) && !(i.set)(h))
        .map(|i| {
            let value = std::env::var(i.variable)
                .ok()
                .filter(|v| v.starts_with("http") && !v.contains(['@', '"', '\\']))
                .unwrap_or_else(|| "...".to_string());
            format!(
                "harness `{name}` (run by team {}) passes {var} in `env`, which {program}{version} ignores ({effect}); set `[harnesses.{name}] {setting} = \"{value}\"` instead (bench passes it the way {program} reads it) and take {var} out of `env`",
                teams.join(", "),
                var = i.variable,
                effect = i.effect,
                setting = i.setting,
            )
        })
        .collect()
}

/// What to do about a missing program.
fn fix(name: &str, h: &Harness, program: &str) -> String {
    let version = h
        .version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    let recipe = match h.install.as_slice() {
        [one] if one.len() <= 100 => format!(" (its recipe: `{one}`)"),
        [] => String::new(),
        _ => " (its `install` commands show how; the built-ins are in docs/agents.md)".to_string(),
    };
    if h.installs() {
        format!(
            "install {name}{version} so that `{program}` is on PATH{recipe}, or run on `[backend] kind = \"docker\"`, where bench builds it into the agent image"
        )
    } else {
        format!("install `{program}`, or set `[harnesses.{name}] command` to a program that exists")
    }
}

/// Whether `program` resolves as the shell would: an absolute path that is an executable file,
/// a shell builtin, or an executable file in one of `dirs`.
fn found(program: &str, dirs: &[PathBuf]) -> bool {
    if program.starts_with('/') {
        return executable(Path::new(program));
    }
    if SHELL_WORDS.contains(&program) {
        return true;
    }
    dirs.iter().any(|d| executable(&d.join(program)))
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Builtins and keywords of a POSIX `sh`: a command starting with one starts no program.
const SHELL_WORDS: &[&str] = &[
    ".", "alias", "bg", "break", "case", "cd", "command", "continue", "echo", "eval", "exec",
    "exit", "export", "false", "fg", "for", "getopts", "hash", "if", "jobs", "kill", "printf",
    "pwd", "read", "readonly", "return", "set", "shift", "test", "times", "trap", "true", "type",
    "ulimit", "umask", "unalias", "unset", "until", "wait", "while",
];

/// The program a command template starts: its first word after leading `NAME=value`
/// assignments, with handlebars blocks (`{{#if base_url}}...{{/if}}`) left out. `None` when that
/// word is templated (`{{script}}`), quoted or relative to the workspace (`./run.sh`): only the
/// run can tell.
fn program_of(command: &str) -> Option<String> {
    let mut text = command.to_string();
    while let Some(start) = text.find("{{#") {
        let Some(close) = text[start..].find("{{/") else {
            break;
        };
        let Some(end) = text[start + close..].find("}}") else {
            break;
        };
        text.replace_range(start..start + close + end + 2, " ");
    }
    let word = text
        .split_whitespace()
        .find(|w| !is_assignment(w))?
        .to_string();
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-+/".contains(c));
    if !plain || word.contains("{{") || (word.contains('/') && !word.starts_with('/')) {
        return None;
    }
    Some(word)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_the_first_word_after_assignments_and_blocks() {
        let builtin: toml::Table =
            toml::from_str(crate::harness::BUILTIN_HARNESSES).expect("builtin.toml");
        let program = |name: &str| {
            program_of(builtin[name]["command"].as_str().expect("command")).expect("program")
        };
        assert_eq!(program("claude-code"), "claude");
        assert_eq!(program("codex"), "codex");
        assert_eq!(program("aider"), "aider");
        assert_eq!(program("opencode"), "opencode");
        assert_eq!(program("mini-swe-agent"), "mini");
        assert_eq!(program_of("python3 {{script}}").as_deref(), Some("python3"));
        assert_eq!(program_of("{{script}} --fast"), None);
        assert_eq!(program_of("./run.sh"), None);
        assert_eq!(
            program_of("A=1 B='x' /usr/bin/env true").as_deref(),
            Some("/usr/bin/env")
        );
    }

    fn harness(command: &str, env: &[&str], base_url: Option<&str>) -> Harness {
        Harness {
            name: "h".into(),
            kind: HarnessKind::Command,
            command: Some(command.into()),
            script: None,
            files: None,
            env: env.iter().map(|v| v.to_string()).collect(),
            usage: None,
            install: Vec::new(),
            install_files: Vec::new(),
            version: Some("0.162.1".into()),
            own_files: Vec::new(),
            endpoints: Vec::new(),
            base_url: base_url.map(String::from),
            caches: Vec::new(),
            runtime: None,
            path: None,
        }
    }

    #[test]
    fn a_variable_codex_ignores_is_refused_with_the_setting_that_works() {
        let builtin: toml::Table =
            toml::from_str(crate::harness::BUILTIN_HARNESSES).expect("builtin.toml");
        let codex = builtin["codex"]["command"].as_str().expect("command");
        let env = ["CODEX_API_KEY", "OPENAI_BASE_URL"];
        let problems = ignored_variables("gw", &harness(codex, &env, None), &["solo", "best"]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let p = &problems[0];
        for needle in [
            "harness `gw` (run by team `solo`, `best`) passes OPENAI_BASE_URL in `env`",
            "which codex 0.162.1 ignores (its runs would go to api.openai.com)",
            "set `[harnesses.gw] base_url = ",
            "take OPENAI_BASE_URL out of `env`",
        ] {
            assert!(p.contains(needle), "{needle}: {p}");
        }
        // With `base_url` set, without the variable, or another program: nothing to say.
        let url = Some("http://127.0.0.1:4000/v1");
        assert!(ignored_variables("gw", &harness(codex, &env, url), &["solo"]).is_empty());
        let key_only = harness(codex, &["CODEX_API_KEY"], None);
        assert!(ignored_variables("gw", &key_only, &["solo"]).is_empty());
        let aider = harness("aider --model x", &env, None);
        assert!(ignored_variables("gw", &aider, &["solo"]).is_empty());
        let by_path = harness("/opt/bench/codex/bin/codex exec", &env, None);
        assert_eq!(ignored_variables("gw", &by_path, &["solo"]).len(), 1);
    }

    #[test]
    fn programs_resolve_on_the_given_dirs_and_builtins_always() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = dir.path().join("agent");
        fs_err::write(&exe, "#!/bin/sh\n").expect("write");
        let dirs = vec![dir.path().to_path_buf()];
        assert!(!found("agent", &dirs), "not executable yet");
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert!(found("agent", &dirs));
        assert!(!found("claude", &dirs));
        assert!(found("cd", &dirs));
        assert!(found(&exe.display().to_string(), &[]));
    }
}
