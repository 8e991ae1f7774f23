//! The environment of git commands in local workspaces, and shell quoting.

use std::path::Path;

/// Environment for git commands: no user or system config, fixed identity and dates, so
/// commits and diffs are byte-identical across machines.
pub fn git_env(home: &Path) -> Vec<(String, String)> {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    [
        ("PATH", path.as_str()),
        ("HOME", &home.to_string_lossy()),
        ("LANG", "C.UTF-8"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_AUTHOR_NAME", "bench"),
        ("GIT_AUTHOR_EMAIL", "bench@localhost"),
        ("GIT_COMMITTER_NAME", "bench"),
        ("GIT_COMMITTER_EMAIL", "bench@localhost"),
        ("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z"),
        ("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Single-quotes a string for sh.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
