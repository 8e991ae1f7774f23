//! Registry credentials from the user's Docker config, resolved the way the docker CLI does:
//! `$DOCKER_CONFIG/config.json` (else `~/.docker/config.json`); `credHelpers[registry]`, else
//! `credsStore`, through `docker-credential-<name> get` with the server on stdin; else the
//! base64 `auth` (or `username`/`password`, `identitytoken`) of `auths`, whose keys may carry a
//! scheme and a path (`https://index.docker.io/v1/` is Docker Hub's). Not the registry protocol
//! (`registry.rs`), and nothing is ever written back.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use base64::Engine;
use serde::Deserialize;

use super::image_ref::{HUB, HUB_AUTH_KEY, ImageRef};

/// Credentials for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
    /// An OAuth refresh token (a helper's `<token>` username, or `identitytoken`).
    pub identity_token: Option<String>,
    /// Where they came from, for messages (never the secret).
    pub source: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({} from {})", self.username, self.source)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("cannot read the Docker config {path}: {reason}")]
    Config { path: PathBuf, reason: String },
    #[error(
        "the credential helper docker-credential-{helper} (from {path}) failed for {server}: {reason}"
    )]
    Helper {
        helper: String,
        path: PathBuf,
        server: String,
        reason: String,
    },
}

#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

#[derive(Debug, Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username")]
    username: String,
    #[serde(rename = "Secret")]
    secret: String,
}

/// The user's Docker config, read once.
#[derive(Debug, Default)]
pub struct DockerConfig {
    path: PathBuf,
    file: ConfigFile,
}

/// Where the docker CLI reads its config.
pub fn config_path() -> PathBuf {
    match std::env::var_os("DOCKER_CONFIG").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d).join("config.json"),
        None => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(".docker/config.json"),
    }
}

/// `https://host:port/v1/` -> `host:port` (the CLI's `ConvertToHostname`).
fn hostname(key: &str) -> &str {
    let k = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    k.split('/').next().unwrap_or(k)
}

impl DockerConfig {
    /// Reads the config; a missing file is an empty config (anonymous pulls).
    pub fn load() -> Result<DockerConfig, CredentialsError> {
        let path = config_path();
        let file = match fs_err::read(&path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| CredentialsError::Config {
                path: path.clone(),
                reason: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ConfigFile::default(),
            Err(e) => {
                return Err(CredentialsError::Config {
                    path,
                    reason: e.to_string(),
                });
            }
        };
        Ok(DockerConfig { path, file })
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The credentials for `image`'s registry, or `None` (an anonymous pull).
    pub fn for_image(&self, image: &ImageRef) -> Result<Option<Credentials>, CredentialsError> {
        let server = image.auth_key();
        let host = hostname(server);
        let helper = self
            .file
            .cred_helpers
            .iter()
            .find(|(k, _)| hostname(k) == host || (image.registry == HUB && is_hub(k)))
            .map(|(_, v)| v.clone())
            .or_else(|| self.file.creds_store.clone());
        if let Some(h) = helper
            && let Some(c) = self.helper_get(&h, server)?
        {
            return Ok(Some(c));
        }
        self.auths_entry(image)
    }

    fn auths_entry(&self, image: &ImageRef) -> Result<Option<Credentials>, CredentialsError> {
        let host = hostname(image.auth_key());
        let Some((key, e)) = self
            .file
            .auths
            .iter()
            .find(|(k, _)| hostname(k) == host || (image.registry == HUB && is_hub(k)))
        else {
            return Ok(None);
        };
        let source = format!("{} auths[{key:?}]", self.path.display());
        let bad = |reason: &str| CredentialsError::Config {
            path: self.path.clone(),
            reason: format!("auths[{key:?}]: {reason}"),
        };
        let (username, password) = match (&e.auth, &e.username, &e.password) {
            (Some(a), _, _) if !a.is_empty() => {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(a.trim())
                    .map_err(|_| bad("`auth` is not base64"))?;
                let s = String::from_utf8(raw).map_err(|_| bad("`auth` is not UTF-8"))?;
                let (u, p) = s
                    .split_once(':')
                    .ok_or_else(|| bad("`auth` is not base64 of user:password"))?;
                (u.to_string(), p.to_string())
            }
            (_, Some(u), Some(p)) => (u.clone(), p.clone()),
            _ if e.identitytoken.is_some() => (String::new(), String::new()),
            _ => return Ok(None),
        };
        Ok(Some(Credentials {
            username,
            password,
            identity_token: e.identitytoken.clone().filter(|t| !t.is_empty()),
            source,
        }))
    }

    /// `docker-credential-<helper> get`, `server` on stdin. "credentials not found" is `None`.
    fn helper_get(
        &self,
        helper: &str,
        server: &str,
    ) -> Result<Option<Credentials>, CredentialsError> {
        let program = format!("docker-credential-{helper}");
        let err = |reason: String| CredentialsError::Helper {
            helper: helper.to_string(),
            path: self.path.clone(),
            server: server.to_string(),
            reason,
        };
        let mut child = Command::new(&program)
            .arg("get")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| err(format!("cannot run {program} ({e}); is it on PATH?")))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(server.as_bytes())
                .map_err(|e| err(e.to_string()))?;
        }
        let out = child.wait_with_output().map_err(|e| err(e.to_string()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            let text = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
            if text.to_lowercase().contains("credentials not found") {
                return Ok(None);
            }
            return Err(err(format!("{}: {}", out.status, text.trim())));
        }
        let a: HelperAnswer = serde_json::from_str(stdout.trim())
            .map_err(|e| err(format!("its answer is not the helper protocol's JSON: {e}")))?;
        let source = format!("docker-credential-{helper}");
        Ok(Some(if a.username == "<token>" {
            Credentials {
                username: String::new(),
                password: String::new(),
                identity_token: Some(a.secret),
                source,
            }
        } else {
            Credentials {
                username: a.username,
                password: a.secret,
                identity_token: None,
                source,
            }
        }))
    }
}

fn is_hub(key: &str) -> bool {
    key == HUB_AUTH_KEY
        || matches!(
            hostname(key),
            "index.docker.io" | "docker.io" | "registry-1.docker.io"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> DockerConfig {
        DockerConfig {
            path: PathBuf::from("/x/config.json"),
            file: serde_json::from_str(json).unwrap(),
        }
    }

    #[test]
    fn auths_by_hostname_and_hub_key() {
        let c = config(
            r#"{"auths": {"https://127.0.0.1:5000/v2/": {"auth": "dTpw"},
                "https://index.docker.io/v1/": {"auth": "aHViOnNlY3JldA=="}}}"#,
        );
        let r = ImageRef::parse("127.0.0.1:5000/calc:1").unwrap();
        let got = c.for_image(&r).unwrap().unwrap();
        assert_eq!((got.username.as_str(), got.password.as_str()), ("u", "p"));
        let got = c
            .for_image(&ImageRef::parse("python:3").unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(
            (got.username.as_str(), got.password.as_str()),
            ("hub", "secret")
        );
        assert!(
            c.for_image(&ImageRef::parse("ghcr.io/a/b").unwrap())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_missing_helper_is_a_clear_error() {
        let c = config(r#"{"credsStore": "bench-no-such-helper"}"#);
        let e = c
            .for_image(&ImageRef::parse("127.0.0.1:5000/calc").unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("docker-credential-bench-no-such-helper"), "{e}");
        assert!(e.contains("127.0.0.1:5000"), "{e}");
    }
}
