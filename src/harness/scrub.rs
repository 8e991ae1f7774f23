//! Secret scrubbing: everything stored (patches, logs, trajectories, grading output, error
//! messages) loses
//! - the values of credential-looking host variables (`*KEY*`, `*TOKEN*`, `*SECRET*`,
//!   `*PASSWORD*`, `*CREDENTIAL*`, `*AUTH*`) and of every variable bench passes to an agent,
//!   whatever its name ([`register_passed`]), each also in its common encodings (base64,
//!   URL-safe base64, at every alignment; URL-encoding);
//! - anything shaped like a provider key (`sk-...`, `sk-ant-...`, `ghp_...`, `AIza...`) and the
//!   password of a URL's user-info (`postgres://user:PASSWORD@host`).

use std::collections::BTreeSet;
use std::sync::{LazyLock, Mutex};

use base64::Engine as _;
use regex::bytes::Regex;

/// The placeholder that replaces a secret.
pub const REDACTED: &[u8] = b"[REDACTED]";

/// Secrets shorter than this are not scrubbed by value (they would match everywhere).
const MIN_LEN: usize = 8;

static KEY_SHAPES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(sk-ant-[A-Za-z0-9_\-]{16,}|sk-[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_\-]{30,})")
        .expect("the key regex compiles")
});

/// `scheme://user:password@`: group 1 is everything up to the password, group 2 the password.
static URL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@]+:)([^\s/@]+)@")
        .expect("the URL regex compiles")
});

/// Names of the variables whose values bench passes to agents (registered before they run).
static PASSED: LazyLock<Mutex<BTreeSet<String>>> = LazyLock::new(Default::default);

/// Records that the values of `names` (host variables) are passed to agents: from now on they
/// are scrubbed wherever they appear, whatever the names.
pub fn register_passed<'a>(names: impl IntoIterator<Item = &'a String>) {
    let mut set = PASSED.lock().unwrap_or_else(|p| p.into_inner());
    set.extend(names.into_iter().cloned());
}

fn credential_name(name: &str) -> bool {
    let k = name.to_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
    ]
    .iter()
    .any(|w| k.contains(w))
}

/// The values to scrub: credential-looking host variables and every registered variable
/// (8+ characters), each with its encodings; longest first.
pub fn secret_values() -> Vec<Vec<u8>> {
    let passed = PASSED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut raw: BTreeSet<Vec<u8>> = BTreeSet::new();
    for (k, val) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if (credential_name(&k) || passed.contains(k.as_ref())) && val.len() >= MIN_LEN {
            raw.insert(val.to_string_lossy().into_owned().into_bytes());
        }
    }
    let mut all: BTreeSet<Vec<u8>> = BTreeSet::new();
    for v in raw {
        all.extend(encodings(&v));
        all.insert(v);
    }
    let mut v: Vec<Vec<u8>> = all.into_iter().filter(|e| e.len() >= MIN_LEN).collect();
    // Longest first, so a value containing another is replaced whole.
    v.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    v
}

/// The forms a secret takes when encoded: base64 (standard and URL-safe) of the secret at each
/// of the three alignments it can have inside a longer encoded text (only the characters that
/// depend on the secret alone), and its URL-encoding.
pub fn encodings(secret: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for engine in [
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        for pad in 0..3usize {
            let mut buf = vec![0u8; pad];
            buf.extend_from_slice(secret);
            let enc = engine.encode(&buf).into_bytes();
            // Characters covering the pad bytes (with the first secret bits) and the last,
            // partial group depend on neighbours: keep the full groups of the secret alone.
            let start = (pad * 4).div_ceil(3);
            let full = (pad + secret.len()) / 3 * 4;
            if full > start {
                out.push(enc[start..full].to_vec());
            }
        }
    }
    let url: String = secret
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    if url.as_bytes() != secret {
        out.push(url.clone().into_bytes());
        out.push(url.to_lowercase().into_bytes());
    }
    out
}

/// Scrubs `bytes`; returns the result and whether anything was replaced.
pub fn scrub(bytes: &[u8], secrets: &[Vec<u8>]) -> (Vec<u8>, bool) {
    let mut out = bytes.to_vec();
    let mut changed = false;
    for s in secrets {
        if s.is_empty() || !contains(&out, s) {
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
    if let std::borrow::Cow::Owned(o) = KEY_SHAPES.replace_all(&out, REDACTED) {
        changed = true;
        out = o;
    }
    let replaced = URL_PASSWORD.replace_all(&out, |c: &regex::bytes::Captures| {
        let mut r = c[1].to_vec();
        if &c[2] == REDACTED {
            r.extend_from_slice(&c[2]);
        } else {
            r.extend_from_slice(REDACTED);
        }
        r.push(b'@');
        r
    });
    if let std::borrow::Cow::Owned(o) = replaced
        && o != out
    {
        changed = true;
        out = o;
    }
    (out, changed)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// Scrubs a message (an error shown and stored) with the current secrets.
pub fn scrub_str(s: &str) -> String {
    String::from_utf8_lossy(&scrub(s.as_bytes(), &secret_values()).0).into_owned()
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

    #[test]
    fn scrubs_url_passwords() {
        let (out, changed) = scrub(b"DB_URL=postgres://app:s3cr3t-pw@db:5432/x ok", &[]);
        assert!(changed);
        assert_eq!(
            out,
            b"DB_URL=postgres://app:[REDACTED]@db:5432/x ok".to_vec()
        );
    }

    #[test]
    fn scrubs_encoded_forms_at_any_alignment() {
        let secret = b"Zq9-very/secret+value=42".to_vec();
        let mut secrets = encodings(&secret);
        secrets.push(secret.clone());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        for prefix in ["", "a", "ab", "abc"] {
            for engine in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE,
            ] {
                let mut plain = prefix.as_bytes().to_vec();
                plain.extend_from_slice(&secret);
                plain.extend_from_slice(b" tail");
                let enc = engine.encode(&plain);
                let (out, changed) = scrub(enc.as_bytes(), &secrets);
                assert!(changed, "{prefix:?} {enc}");
                assert!(memchr::memmem::find(&out, REDACTED).is_some());
            }
        }
        let url = b"x=Zq9-very%2Fsecret%2Bvalue%3D42&y".to_vec();
        assert!(scrub(&url, &secrets).1);
    }
}
