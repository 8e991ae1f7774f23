//! A registry's v2 API, as far as planning needs it: resolve a reference to its manifest digest
//! and the compressed size of the image for this machine's platform, with the user's
//! credentials (Basic, or a Bearer token from the realm of the `WWW-Authenticate` challenge).
//! The layers themselves are pulled by the daemon (`pull.rs`), never here.

use std::time::Duration;

use serde::Deserialize;

use super::credentials::Credentials;
use super::image_ref::ImageRef;

const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
application/vnd.docker.distribution.manifest.list.v2+json, \
application/vnd.docker.distribution.manifest.v2+json, \
application/vnd.oci.image.manifest.v1+json";

/// What the registry says of a reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The digest of the manifest the reference names (an index's digest for multi-platform
    /// images): what `repository@digest` pulls.
    pub digest: String,
    /// Compressed bytes of this platform's config and layers, when the registry lists them.
    pub size: Option<u64>,
}

/// Why a registry did not resolve a reference.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RegistryError {
    #[error(
        "registry {registry} denied access to {image} (HTTP {status}: {answer}); credentials: {creds}. Fix: `docker login {registry}` (or check its entry in the Docker config, $DOCKER_CONFIG/config.json)"
    )]
    Denied {
        image: String,
        registry: String,
        status: u16,
        answer: String,
        creds: String,
    },
    #[error(
        "registry {registry} has no image {image} (HTTP {status}: {answer}). Fix: check the name, tag or digest, or push the image"
    )]
    NotFound {
        image: String,
        registry: String,
        status: u16,
        answer: String,
    },
    /// Retryable: the registry did not answer, or answered 5xx / 429.
    #[error("cannot reach registry {registry} for {image}: {reason}")]
    Unreachable {
        image: String,
        registry: String,
        reason: String,
    },
    #[error("registry {registry} gave an unexpected answer for {image}: {reason}")]
    Protocol {
        image: String,
        registry: String,
        reason: String,
    },
}

impl RegistryError {
    pub fn transient(&self) -> bool {
        matches!(self, RegistryError::Unreachable { .. })
    }
}

#[derive(Deserialize)]
struct Descriptor {
    #[serde(rename = "mediaType", default)]
    _media_type: Option<String>,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    digest: String,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Deserialize)]
struct Platform {
    architecture: String,
    os: String,
}

#[derive(Deserialize)]
struct ManifestDoc {
    #[serde(default)]
    manifests: Option<Vec<Descriptor>>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Option<Vec<Descriptor>>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
}

/// The platform the daemon runs images of (this machine's).
fn platform() -> (&'static str, &'static str) {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    ("linux", arch)
}

/// A client for one reference's registry.
pub struct RegistryClient<'a> {
    image: &'a ImageRef,
    creds: Option<&'a Credentials>,
    agent: ureq::Agent,
    /// The `Authorization` header that worked.
    auth: Option<String>,
}

impl<'a> RegistryClient<'a> {
    pub fn new(image: &'a ImageRef, creds: Option<&'a Credentials>) -> RegistryClient<'a> {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(15)))
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .new_agent();
        RegistryClient {
            image,
            creds,
            agent,
            auth: None,
        }
    }

    fn base(&self) -> String {
        let scheme = if self.image.insecure() {
            "http"
        } else {
            "https"
        };
        format!(
            "{scheme}://{}/v2/{}",
            self.image.api_host(),
            self.image.path
        )
    }

    fn unreachable(&self, reason: String) -> RegistryError {
        RegistryError::Unreachable {
            image: self.image.original.clone(),
            registry: self.image.registry.clone(),
            reason,
        }
    }

    fn protocol(&self, reason: String) -> RegistryError {
        RegistryError::Protocol {
            image: self.image.original.clone(),
            registry: self.image.registry.clone(),
            reason,
        }
    }

    fn creds_text(&self) -> String {
        match self.creds {
            Some(c) if c.identity_token.is_some() => format!("an identity token from {}", c.source),
            Some(c) => format!("user {:?} from {}", c.username, c.source),
            None => format!(
                "none found for {} in {}",
                self.image.auth_key(),
                super::credentials::config_path().display()
            ),
        }
    }

    /// GET `url` with the manifest Accept header, answering one auth challenge.
    fn get(&mut self, url: &str) -> Result<(String, Vec<u8>), RegistryError> {
        for attempt in 0..2 {
            let mut req = self.agent.get(url).header("Accept", ACCEPT);
            if let Some(a) = &self.auth {
                req = req.header("Authorization", a);
            }
            let mut resp = req.call().map_err(|e| self.unreachable(e.to_string()))?;
            let status = resp.status().as_u16();
            let header = |n: &str| {
                resp.headers()
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let challenge = header("www-authenticate");
            let digest = header("docker-content-digest");
            let body = resp
                .body_mut()
                .with_config()
                .limit(16 << 20)
                .read_to_vec()
                .map_err(|e| self.unreachable(e.to_string()))?;
            match status {
                200 => {
                    let d = digest.unwrap_or_else(|| {
                        use sha2::Digest;
                        format!("sha256:{:x}", sha2::Sha256::digest(&body))
                    });
                    return Ok((d, body));
                }
                401 if attempt == 0 && challenge.is_some() => {
                    self.auth = Some(self.authorize(challenge.as_deref().unwrap_or_default())?);
                }
                401 | 403 => {
                    return Err(RegistryError::Denied {
                        image: self.image.original.clone(),
                        registry: self.image.registry.clone(),
                        status,
                        answer: answer(&body),
                        creds: self.creds_text(),
                    });
                }
                404 => {
                    return Err(RegistryError::NotFound {
                        image: self.image.original.clone(),
                        registry: self.image.registry.clone(),
                        status,
                        answer: answer(&body),
                    });
                }
                429 | 500..=599 => {
                    return Err(self.unreachable(format!("HTTP {status}: {}", answer(&body))));
                }
                other => {
                    return Err(self.protocol(format!("HTTP {other}: {}", answer(&body))));
                }
            }
        }
        Err(self.protocol("authentication loop".into()))
    }

    /// The `Authorization` header for a `WWW-Authenticate` challenge.
    fn authorize(&self, challenge: &str) -> Result<String, RegistryError> {
        let basic = self.creds.filter(|c| c.identity_token.is_none()).map(|c| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", c.username, c.password))
        });
        let denied = |answer: String| RegistryError::Denied {
            image: self.image.original.clone(),
            registry: self.image.registry.clone(),
            status: 401,
            answer,
            creds: self.creds_text(),
        };
        let (scheme, params) = challenge.split_once(' ').unwrap_or((challenge, ""));
        if scheme.eq_ignore_ascii_case("basic") {
            return basic
                .map(|b| format!("Basic {b}"))
                .ok_or_else(|| denied("authentication required".into()));
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(self.protocol(format!("unknown auth challenge {challenge:?}")));
        }
        let params = challenge_params(params);
        let realm = params
            .iter()
            .find(|(k, _)| k == "realm")
            .map(|(_, v)| v.clone())
            .ok_or_else(|| self.protocol(format!("no realm in {challenge:?}")))?;
        let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let scope = get("scope").unwrap_or_else(|| format!("repository:{}:pull", self.image.path));
        // The token endpoint's answer. The OAuth2 form answers `access_token`, the GET `token`
        // (either may carry the other as an alias).
        let bearer = |resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
                      oauth: bool|
         -> Result<String, RegistryError> {
            let mut resp = resp.map_err(|e| self.unreachable(e.to_string()))?;
            let status = resp.status().as_u16();
            let body = resp
                .body_mut()
                .read_to_vec()
                .map_err(|e| self.unreachable(e.to_string()))?;
            if status != 200 {
                return Err(denied(format!(
                    "token endpoint {realm}: HTTP {status}: {}",
                    answer(&body)
                )));
            }
            let t: TokenAnswer = serde_json::from_slice(&body)
                .map_err(|e| self.protocol(format!("token answer: {e}")))?;
            let (first, second) = if oauth {
                (t.access_token, t.token)
            } else {
                (t.token, t.access_token)
            };
            first
                .or(second)
                .map(|t| format!("Bearer {t}"))
                .ok_or_else(|| self.protocol("the token endpoint gave no token".into()))
        };
        // An identity (refresh) token: the OAuth2 form the docker CLI posts to the realm.
        if let Some(token) = self.creds.and_then(|c| c.identity_token.as_deref()) {
            let service = get("service").unwrap_or_default();
            let form = [
                ("grant_type", "refresh_token"),
                ("refresh_token", token),
                ("service", service.as_str()),
                ("scope", scope.as_str()),
                ("client_id", "bench"),
            ];
            return bearer(self.agent.post(&realm).send_form(form), true);
        }
        let mut req = self.agent.get(&realm);
        for (k, v) in &params {
            if k == "service" || k == "scope" {
                req = req.query(k, v);
            }
        }
        if !params.iter().any(|(k, _)| k == "scope") {
            req = req.query("scope", format!("repository:{}:pull", self.image.path));
        }
        if let Some(b) = &basic {
            req = req.header("Authorization", &format!("Basic {b}"));
        }
        bearer(req.call(), false)
    }

    /// The reference's digest and this platform's compressed size.
    pub fn resolve(&mut self) -> Result<Resolved, RegistryError> {
        let url = format!(
            "{}/manifests/{}",
            self.base(),
            self.image.manifest_reference()
        );
        let (digest, body) = self.get(&url)?;
        let doc: ManifestDoc = serde_json::from_slice(&body)
            .map_err(|e| self.protocol(format!("manifest is not JSON: {e}")))?;
        let doc = match &doc.manifests {
            Some(list) => {
                let (os, arch) = platform();
                let Some(m) = list.iter().find(|d| {
                    d.platform
                        .as_ref()
                        .is_some_and(|p| p.os == os && p.architecture == arch)
                }) else {
                    return Ok(Resolved { digest, size: None });
                };
                let url = format!("{}/manifests/{}", self.base(), m.digest);
                let (_, body) = self.get(&url)?;
                serde_json::from_slice(&body)
                    .map_err(|e| self.protocol(format!("manifest is not JSON: {e}")))?
            }
            None => doc,
        };
        let size = doc.layers.as_ref().map(|layers| {
            layers.iter().map(|l| l.size).sum::<u64>() + doc.config.as_ref().map_or(0, |c| c.size)
        });
        Ok(Resolved { digest, size })
    }
}

/// `realm="https://auth",service="x",scope="y"` -> pairs.
fn challenge_params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let Some((k, r)) = rest.split_once('=') else {
            break;
        };
        let (v, r) = if let Some(r) = r.strip_prefix('"') {
            match r.split_once('"') {
                Some((v, r)) => (v, r),
                None => (r, ""),
            }
        } else {
            r.split_once(',').unwrap_or((r, ""))
        };
        out.push((k.trim().to_string(), v.to_string()));
        rest = r.trim_start_matches([',', ' ']);
    }
    out
}

/// The registry's own words: the `errors[].message` of its JSON answer, else the body.
fn answer(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Errors {
        errors: Vec<E>,
    }
    #[derive(Deserialize)]
    struct E {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    if let Ok(e) = serde_json::from_slice::<Errors>(body) {
        let v: Vec<String> = e
            .errors
            .iter()
            .map(|e| format!("{} {}", e.code, e.message).trim().to_string())
            .collect();
        if !v.is_empty() {
            return v.join("; ");
        }
    }
    let text = String::from_utf8_lossy(body).trim().to_string();
    if text.is_empty() {
        "no message".into()
    } else {
        text.chars().take(300).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback token endpoint answering each request with `status` and `body`; returns its
    /// address and the requests it saw (request line and body).
    fn token_server(
        status: u16,
        body: &'static str,
        requests: usize,
    ) -> (String, std::thread::JoinHandle<Vec<String>>) {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let handle = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for _ in 0..requests {
                let (stream, _) = listener.accept().unwrap();
                let mut r = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                let mut len = 0;
                loop {
                    let mut h = String::new();
                    r.read_line(&mut h).unwrap();
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                    if h == "\r\n" {
                        break;
                    }
                }
                let mut form = vec![0; len];
                r.read_exact(&mut form).unwrap();
                seen.push(format!(
                    "{} {}",
                    line.trim(),
                    String::from_utf8(form).unwrap()
                ));
                let mut w = stream;
                write!(
                    w,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .unwrap();
            }
            seen
        });
        (addr, handle)
    }

    #[test]
    fn bearer_tokens_come_from_the_get_and_the_oauth_form_and_a_refusal_is_denied() {
        let image = ImageRef::parse("127.0.0.1:5000/fixture/calc:1").unwrap();
        let answer = r#"{"token":"from-get","access_token":"from-oauth"}"#;
        // Username and password: a GET with Basic auth; `token` is the answer.
        let creds = Credentials {
            username: "u".into(),
            password: "p".into(),
            identity_token: None,
            source: "test".into(),
        };
        let (addr, server) = token_server(200, answer, 1);
        let c = RegistryClient::new(&image, Some(&creds));
        let got = c
            .authorize(&format!(
                r#"Bearer realm="http://{addr}/token",service="reg""#
            ))
            .unwrap();
        assert_eq!(got, "Bearer from-get");
        let seen = server.join().unwrap();
        assert!(
            seen[0].starts_with("GET /token?service=reg&scope=repository"),
            "{seen:?}"
        );
        // An identity token: the OAuth2 form is posted; `access_token` is the answer.
        let oauth = Credentials {
            identity_token: Some("refresh".into()),
            ..creds.clone()
        };
        let (addr, server) = token_server(200, answer, 1);
        let c = RegistryClient::new(&image, Some(&oauth));
        let got = c
            .authorize(&format!(
                r#"Bearer realm="http://{addr}/token",service="reg""#
            ))
            .unwrap();
        assert_eq!(got, "Bearer from-oauth");
        let seen = server.join().unwrap();
        assert!(seen[0].starts_with("POST /token"), "{seen:?}");
        assert!(seen[0].contains("grant_type=refresh_token"), "{seen:?}");
        // The endpoint refuses: an authentication error naming it.
        let (addr, server) = token_server(401, r#"{"errors":[]}"#, 1);
        let c = RegistryClient::new(&image, Some(&creds));
        let e = c
            .authorize(&format!(r#"Bearer realm="http://{addr}/token""#))
            .unwrap_err();
        assert!(e.to_string().contains("token endpoint"), "{e}");
        server.join().unwrap();
    }

    #[test]
    fn parses_bearer_challenges() {
        let p = challenge_params(
            r#"realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/python:pull""#,
        );
        assert_eq!(
            p[0],
            ("realm".into(), "https://auth.docker.io/token".into())
        );
        assert_eq!(p[1], ("service".into(), "registry.docker.io".into()));
        assert_eq!(p[2].1, "repository:library/python:pull");
    }

    #[test]
    fn the_registry_answer_is_its_error_messages() {
        let b = br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#;
        assert_eq!(answer(b), "UNAUTHORIZED authentication required");
    }
}
