//! Splits a stored trajectory into its agent runs, as `stages/solve.rs`' ledger writes them:
//!
//! ```text
//! ===== {role}: {agent} =====
//! {the CLI's output}
//! ----- {role} file {path} ({n} bytes) -----
//! {n bytes}
//! ----- {role} caches left out ({k} files, {t} bytes) -----
//! {path} ({n} bytes)            (k lines)
//! ```
//!
//! A file section is taken by its byte count, so a file that holds header-like lines cannot
//! end it early. A blob without any `=====` header is one run of role `agent`.

/// A file kept in a run's section: its path and where its bytes are.
#[derive(Debug, Clone, PartialEq)]
pub struct RawFile {
    pub path: String,
    pub start: u64,
    pub bytes: u64,
}

/// One run's section.
#[derive(Debug, Clone, PartialEq)]
pub struct RawRun {
    pub role: String,
    pub agent: String,
    /// The CLI's output: a byte range of the blob.
    pub output: (u64, u64),
    pub files: Vec<RawFile>,
    pub left_out: Vec<String>,
    pub start: u64,
    pub end: u64,
}

fn run_header(line: &str) -> Option<(String, String)> {
    let inner = line.strip_prefix("===== ")?.strip_suffix(" =====")?;
    let (role, agent) = inner.rsplit_once(": ")?;
    Some((role.to_string(), agent.to_string()))
}

/// `----- {role} file {path} ({n} bytes) -----` -> (path, n).
fn file_header(line: &str, role: &str) -> Option<(String, u64)> {
    let rest = line
        .strip_prefix("----- ")?
        .strip_prefix(role)?
        .strip_prefix(" file ")?
        .strip_suffix(" bytes) -----")?;
    let (path, n) = rest.rsplit_once(" (")?;
    Some((path.to_string(), n.parse().ok()?))
}

/// `----- {role} caches left out ({k} files, {t} bytes) -----` -> k.
fn caches_header(line: &str, role: &str) -> Option<usize> {
    let rest = line
        .strip_prefix("----- ")?
        .strip_prefix(role)?
        .strip_prefix(" caches left out (")?;
    rest.split_once(" files")?.0.parse().ok()
}

/// The runs of a stored trajectory, in order.
pub fn split(bytes: &[u8]) -> Vec<RawRun> {
    let total = bytes.len() as u64;
    let mut runs: Vec<RawRun> = Vec::new();
    let mut pos = 0usize;
    // Whether the current run's output is still open (no file section yet).
    let mut in_output = false;
    while pos < bytes.len() {
        let line_end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
        let next = (line_end + 1).min(bytes.len());
        let line = String::from_utf8_lossy(&bytes[pos..line_end]);
        if let Some((role, agent)) = run_header(&line) {
            if let Some(r) = runs.last_mut() {
                if in_output {
                    r.output.1 = pos as u64;
                }
                r.end = pos as u64;
            }
            runs.push(RawRun {
                role,
                agent,
                output: (next as u64, next as u64),
                files: Vec::new(),
                left_out: Vec::new(),
                start: pos as u64,
                end: total,
            });
            in_output = true;
            pos = next;
            continue;
        }
        if runs.is_empty() {
            runs.push(RawRun {
                role: "agent".into(),
                agent: String::new(),
                output: (0, 0),
                files: Vec::new(),
                left_out: Vec::new(),
                start: 0,
                end: total,
            });
            in_output = true;
        }
        let Some(r) = runs.last_mut() else {
            break;
        };
        if let Some((path, n)) = file_header(&line, &r.role) {
            if in_output {
                r.output.1 = pos as u64;
                in_output = false;
            }
            let start = next as u64;
            let end = (start + n).min(total);
            r.files.push(RawFile {
                path,
                start,
                bytes: end - start,
            });
            pos = end as usize;
            // The ledger ends a file that lacks one with a newline.
            if end > start && bytes[end as usize - 1] != b'\n' && bytes.get(pos) == Some(&b'\n') {
                pos += 1;
            }
            continue;
        }
        if let Some(k) = caches_header(&line, &r.role) {
            if in_output {
                r.output.1 = pos as u64;
                in_output = false;
            }
            pos = next;
            for _ in 0..k {
                if pos >= bytes.len() {
                    break;
                }
                let e = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
                r.left_out
                    .push(String::from_utf8_lossy(&bytes[pos..e]).into_owned());
                pos = (e + 1).min(bytes.len());
            }
            continue;
        }
        pos = next;
        if in_output {
            r.output.1 = pos as u64;
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_files_and_caches() {
        let file = "line one\n----- worker file fake (3 bytes) -----\n";
        let blob = format!(
            "===== worker: codex@gpt =====\nout 1\nout 2\n----- worker file .codex/s.jsonl ({} bytes) -----\n{file}----- worker caches left out (2 files, 30 bytes) -----\na (10 bytes)\nb (20 bytes)\n===== reviewer (round 1): claude-code@x =====\nlgtm",
            file.len()
        );
        let runs = split(blob.as_bytes());
        assert_eq!(runs.len(), 2);
        let w = &runs[0];
        assert_eq!((w.role.as_str(), w.agent.as_str()), ("worker", "codex@gpt"));
        let out = &blob[w.output.0 as usize..w.output.1 as usize];
        assert_eq!(out, "out 1\nout 2\n");
        assert_eq!(w.files.len(), 1);
        let f = &w.files[0];
        assert_eq!(f.path, ".codex/s.jsonl");
        assert_eq!(&blob[f.start as usize..(f.start + f.bytes) as usize], file);
        assert_eq!(w.left_out, vec!["a (10 bytes)", "b (20 bytes)"]);
        let r = &runs[1];
        assert_eq!(r.role, "reviewer (round 1)");
        assert_eq!(&blob[r.output.0 as usize..r.output.1 as usize], "lgtm");
        assert_eq!(w.end, r.start);
        assert_eq!(r.end as usize, blob.len());
    }

    #[test]
    fn a_blob_without_headers_is_one_run() {
        let runs = split(b"just output\n");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].role, "agent");
        assert_eq!(runs[0].output, (0, 12));
        assert!(split(b"").is_empty());
    }
}
