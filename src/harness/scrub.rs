//! Secret scrubbing: everything stored (patches, logs, trajectories) loses the values of
//! credential-looking host variables (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`) and anything
//! shaped like a provider key (`sk-...`, `sk-ant-...`, `ghp_...`, `AIza...`).

use std::sync::LazyLock;

use regex::bytes::Regex;

/// The placeholder that replaces a secret.
pub const REDACTED: &[u8] = b"[REDACTED]";

static KEY_SHAPES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(sk-ant-[A-Za-z0-9_\-]{16,}|sk-[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_\-]{30,})")
        .expect("the key regex compiles")
});

/// Values of credential-looking variables of this process's environment (8+ characters).
pub fn secret_values() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = std::env::vars_os()
        .filter(|(k, val)| {
            let k = k.to_string_lossy().to_uppercase();
            ["KEY", "TOKEN", "SECRET", "PASSWORD"]
                .iter()
                .any(|w| k.contains(w))
                && val.len() >= 8
        })
        .map(|(_, val)| val.to_string_lossy().into_owned().into_bytes())
        .collect();
    // Longest first, so a value containing another is replaced whole.
    v.sort_by_key(|b| std::cmp::Reverse(b.len()));
    v
}

/// Scrubs `bytes`; returns the result and whether anything was replaced.
pub fn scrub(bytes: &[u8], secrets: &[Vec<u8>]) -> (Vec<u8>, bool) {
    let mut out = bytes.to_vec();
    let mut changed = false;
    for s in secrets {
        if s.is_empty() {
            continue;
        }
        let mut result = Vec::with_capacity(out.len());
        let mut i = 0;
        while i < out.len() {
            if out[i..].starts_with(s) {
                result.extend_from_slice(REDACTED);
                i += s.len();
                changed = true;
            } else {
                result.push(out[i]);
                i += 1;
            }
        }
        out = result;
    }
    let replaced = KEY_SHAPES.replace_all(&out, REDACTED);
    if let std::borrow::Cow::Owned(o) = replaced {
        changed = true;
        out = o;
    }
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_values_and_shapes() {
        let secrets = vec![b"hunter2hunter2".to_vec()];
        let (out, changed) = scrub(
            b"pw=hunter2hunter2 key=sk-ant-abcdefghijklmnopqrstu ok",
            &secrets,
        );
        assert!(changed);
        assert_eq!(out, b"pw=[REDACTED] key=[REDACTED] ok".to_vec());
        let (out, changed) = scrub(b"nothing here", &secrets);
        assert!(!changed);
        assert_eq!(out, b"nothing here".to_vec());
    }
}
