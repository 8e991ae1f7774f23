//! Names in URLs and file names: a task id, a team name or a role is one path component,
//! written with `[A-Za-z0-9._-]` as is and every other byte as `~xx` (two lowercase hex
//! digits). The result is the same in a server path, a `file://` path and a URL fragment
//! (`~` is unreserved, nothing is percent-decoded on the way), and `app.js` encodes alike.

/// The path component of `s`.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("~{b:02x}"));
        }
    }
    // `.` and `..` alone are not file names.
    if out == "." || out == ".." {
        return out.replace('.', "~2e");
    }
    out
}

/// The name a component encodes; `None` when it is not one [`encode`] writes.
pub fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'~' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b if b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-' => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_kind_of_name() {
        for s in [
            "quickstart__calc-1",
            "owner/repo#12",
            "é ü",
            ".",
            "..",
            "a~b",
            "",
        ] {
            let e = encode(s);
            assert!(
                e.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-~".contains(&b)),
                "{e}"
            );
            assert_ne!(e, ".");
            assert_ne!(e, "..");
            assert_eq!(decode(&e).as_deref(), Some(s), "{e}");
        }
        assert_eq!(encode("owner/repo"), "owner~2frepo");
        assert_eq!(decode("a/b"), None);
        assert_eq!(decode("~zz"), None);
    }
}
