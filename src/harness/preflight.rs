//! Before any node runs: whether the program each team's harness starts exists where it will
//! run, as API keys are checked, so a missing `claude` is one clear message with its fix
//! instead of every solve failing with exit 127. On the local backend the program must be on
//! bench's PATH (agents get that PATH); on docker a harness with an `install` recipe builds its
//! program into the agent image (an install that fails is an error naming its output), and one
//! without a recipe runs what the task image has, which only the image can tell. Not here: the
//! environment variables and prices (app's preflight, which calls this per harness), the
//! script files (validated on load).

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
