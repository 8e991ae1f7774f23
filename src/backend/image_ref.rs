//! Image references as the docker CLI reads them: `[registry/]path[:tag][@sha256:...]`, with
//! Docker Hub's defaults (`docker.io`, `library/`, `latest`). Only parsing and naming: talking
//! to a registry is `registry.rs`, credentials `credentials.rs`.

use std::fmt;

/// Docker Hub's name in references.
pub const HUB: &str = "docker.io";

/// The key of Docker Hub's credentials in `config.json` and what its helpers are asked for.
pub const HUB_AUTH_KEY: &str = "https://index.docker.io/v1/";

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ImageRef {
    /// As the user wrote it.
    pub original: String,
    /// `docker.io`, `127.0.0.1:5000`, `ghcr.io`, ...
    pub registry: String,
    /// The repository path on the registry (`library/python` on Docker Hub).
    pub path: String,
    pub tag: Option<String>,
    /// `sha256:...` when the reference pins one.
    pub digest: Option<String>,
}

/// A reference bench cannot read.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not an image reference ([registry/]name[:tag][@sha256:digest])")]
pub struct BadReference(pub String);

impl ImageRef {
    pub fn parse(s: &str) -> Result<ImageRef, BadReference> {
        let bad = || BadReference(s.to_string());
        let (name, digest) = match s.split_once('@') {
            Some((n, d)) => {
                let hex = d.strip_prefix("sha256:").ok_or_else(bad)?;
                if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(bad());
                }
                (n, Some(d.to_string()))
            }
            None => (s, None),
        };
        let (name, tag) = match name.rsplit_once(':') {
            Some((n, t)) if !t.contains('/') => (n, Some(t.to_string())),
            _ => (name, None),
        };
        if name.is_empty() || name.chars().any(char::is_whitespace) {
            return Err(bad());
        }
        let (registry, path) = match name.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_string(), rest.to_string())
            }
            Some(_) => (HUB.to_string(), name.to_string()),
            None => (HUB.to_string(), format!("library/{name}")),
        };
        let registry = match registry.as_str() {
            "index.docker.io" | "registry-1.docker.io" => HUB.to_string(),
            _ => registry,
        };
        if path.is_empty() {
            return Err(bad());
        }
        let tag = match (&tag, &digest) {
            (None, None) => Some("latest".to_string()),
            _ => tag,
        };
        Ok(ImageRef {
            original: s.to_string(),
            registry,
            path,
            tag,
            digest,
        })
    }

    /// The repository as the daemon names it (`127.0.0.1:5000/calc`, `python` on Docker Hub).
    pub fn repository(&self) -> String {
        if self.registry == HUB {
            self.path
                .strip_prefix("library/")
                .unwrap_or(&self.path)
                .to_string()
        } else {
            format!("{}/{}", self.registry, self.path)
        }
    }

    /// The host of the registry's API (Docker Hub's is `registry-1.docker.io`).
    pub fn api_host(&self) -> &str {
        if self.registry == HUB {
            "registry-1.docker.io"
        } else {
            &self.registry
        }
    }

    /// The server name credentials are stored under (`https://index.docker.io/v1/` for Hub).
    pub fn auth_key(&self) -> &str {
        if self.registry == HUB {
            HUB_AUTH_KEY
        } else {
            &self.registry
        }
    }

    /// Loopback registries speak plain HTTP (the daemon allows 127.0.0.0/8 insecure by default).
    pub fn insecure(&self) -> bool {
        let host = self
            .registry
            .rsplit_once(':')
            .map_or(self.registry.as_str(), |(h, _)| h);
        host == "localhost" || host.starts_with("127.") || host == "[::1]"
    }

    /// What the manifest endpoint is asked for: the digest when pinned, else the tag.
    pub fn manifest_reference(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// `repository@digest`.
    pub fn pinned(&self, digest: &str) -> String {
        format!("{}@{digest}", self.repository())
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.original)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_defaults() {
        let r = ImageRef::parse("python").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.path.as_str(), r.tag.as_deref()),
            ("docker.io", "library/python", Some("latest"))
        );
        assert_eq!(r.repository(), "python");
        assert_eq!(r.auth_key(), HUB_AUTH_KEY);
        let r = ImageRef::parse("starryzhang/sweb.eval.x86_64.foo:latest").unwrap();
        assert_eq!(r.registry, "docker.io");
        assert_eq!(r.path, "starryzhang/sweb.eval.x86_64.foo");
        assert_eq!(r.api_host(), "registry-1.docker.io");
    }

    #[test]
    fn registry_port_tag_and_digest() {
        let d = format!("sha256:{}", "a".repeat(64));
        let r = ImageRef::parse(&format!("127.0.0.1:5000/x/calc:1@{d}")).unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.path, "x/calc");
        assert_eq!(r.tag.as_deref(), Some("1"));
        assert_eq!(r.digest.as_deref(), Some(d.as_str()));
        assert_eq!(r.manifest_reference(), d);
        assert!(r.insecure());
        let r = ImageRef::parse("localhost:5000/calc").unwrap();
        assert_eq!(r.tag.as_deref(), Some("latest"));
        assert_eq!(r.repository(), "localhost:5000/calc");
        assert!(!ImageRef::parse("ghcr.io/a/b:1").unwrap().insecure());
    }

    #[test]
    fn bad_references() {
        assert!(ImageRef::parse("x@sha256:123").is_err());
        assert!(ImageRef::parse("").is_err());
        assert!(ImageRef::parse("a b").is_err());
    }
}
