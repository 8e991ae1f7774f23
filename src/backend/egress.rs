//! The agent phase's egress proxy: the only way out of an agent's container.
//!
//! On the docker backend an agent's container sits alone on an internal Docker network (no
//! route out, no outside DNS, no other container). The one address it can reach is the
//! network's gateway on the host, where bench listens with this proxy: an HTTP proxy that
//! forwards `CONNECT host:port` tunnels and absolute-form plain-HTTP requests to the endpoints
//! on the sandbox's allowlist (its harness's model endpoints), and answers 403 to everything
//! else. Names are resolved here, on the host, so the agent needs no DNS. It needs no image:
//! it runs inside bench.
//!
//! Not here: creating the network and wiring containers to it (`docker_backend.rs`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One allowed endpoint: a host name or IP literal and a port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// Parses `host:port` (`[v6]:port` for IPv6 literals). The port is required: an allowlist
    /// entry names exactly one service.
    pub fn parse(s: &str) -> Result<Endpoint, String> {
        let bad = || format!("`{s}` is not host:port (e.g. api.anthropic.com:443)");
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (h, p) = rest.split_once("]:").ok_or_else(bad)?;
            (h, p)
        } else {
            s.rsplit_once(':').ok_or_else(bad)?
        };
        if host.is_empty() || host.contains(['/', ' ', '@']) {
            return Err(bad());
        }
        let port: u16 = port.parse().map_err(|_| bad())?;
        if port == 0 {
            return Err(bad());
        }
        Ok(Endpoint {
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// The endpoint of a base URL, `http://host[:port][/path]` or `https://...` (default ports
    /// 80 and 443), e.g. a harness's `base_url`.
    pub fn of_url(url: &str) -> Result<Endpoint, String> {
        let bad = |why: &str| format!("`{url}` is not a base URL: {why}");
        let (rest, default_port) = if let Some(r) = url.strip_prefix("https://") {
            (r, 443)
        } else if let Some(r) = url.strip_prefix("http://") {
            (r, 80)
        } else {
            return Err(bad("it must start with http:// or https://"));
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if authority.is_empty() || authority.contains('@') {
            return Err(bad("no host"));
        }
        let has_port = match authority.strip_prefix('[') {
            Some(v6) => v6.contains("]:"),
            None => authority.contains(':'),
        };
        let hostport = if has_port {
            authority.to_string()
        } else {
            format!("{authority}:{default_port}")
        };
        Endpoint::parse(&hostport).map_err(|_| bad("its host or port is not valid"))
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        self.port == port
            && self
                .host
                .eq_ignore_ascii_case(host.trim_matches(['[', ']']))
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// What a proxy let through and refused.
#[derive(Debug, Default)]
pub struct EgressCounts {
    pub allowed: AtomicU64,
    pub denied: AtomicU64,
}

/// A running proxy; it stops when dropped.
#[derive(Debug)]
pub struct EgressProxy {
    addr: SocketAddr,
    counts: Arc<EgressCounts>,
    task: tokio::task::JoinHandle<()>,
}

/// The most of a request head the proxy reads before it gives up on a client.
const HEAD_CAP: usize = 64 << 10;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

impl EgressProxy {
    /// Listens on `bind` (port 0: any) and serves until dropped.
    pub async fn start(bind: IpAddr, allow: Vec<Endpoint>) -> std::io::Result<EgressProxy> {
        let listener = TcpListener::bind(SocketAddr::new(bind, 0)).await?;
        let addr = listener.local_addr()?;
        let counts = Arc::new(EgressCounts::default());
        let allow = Arc::new(allow);
        let c = counts.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                let allow = allow.clone();
                let counts = c.clone();
                tokio::spawn(async move {
                    let _ = serve(client, &allow, &counts).await;
                });
            }
        });
        Ok(EgressProxy { addr, counts, task })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The proxy's URL, as `HTTP_PROXY` and friends take it.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn counts(&self) -> &EgressCounts {
        &self.counts
    }

    /// The environment that points an agent's HTTP clients at the proxy (both spellings; no
    /// `NO_PROXY`, so loopback model endpoints go through it too).
    pub fn env(&self) -> Vec<(String, String)> {
        let url = self.url();
        ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]
            .iter()
            .flat_map(|k| [k.to_string(), k.to_ascii_lowercase()])
            .map(|k| (k, url.clone()))
            .collect()
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The request a client sent: where to, and for plain HTTP the head to forward.
#[derive(Debug, PartialEq)]
enum Request {
    Connect {
        host: String,
        port: u16,
    },
    Http {
        host: String,
        port: u16,
        head: Vec<u8>,
    },
}

/// Reads a request head and decides; `Err` is a reason for a 400.
fn parse_head(head: &[u8]) -> Result<Request, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request head is not text")?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut words = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(format!("bad request line `{first}`"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported protocol `{version}`"));
    }
    if method == "CONNECT" {
        let e = Endpoint::parse(target)?;
        return Ok(Request::Connect {
            host: e.host,
            port: e.port,
        });
    }
    let rest = target.strip_prefix("http://").ok_or_else(|| {
        format!("`{target}` is not an absolute http:// URL (use CONNECT for https)")
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = if authority.starts_with('[') || authority.contains(':') {
        let e = Endpoint::parse(authority)?;
        (e.host, e.port)
    } else {
        (authority.to_ascii_lowercase(), 80)
    };
    // Origin form upstream, one request per connection (the next one may go elsewhere).
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines {
        if line.is_empty() {
            break;
        }
        let name = line.split(':').next().unwrap_or("").trim();
        if [
            "connection",
            "proxy-connection",
            "proxy-authorization",
            "keep-alive",
        ]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request::Http {
        host,
        port,
        head: out.into_bytes(),
    })
}

async fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = memchr::memmem::find(&buf, b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > HEAD_CAP {
            return Err("request head too large".into());
        }
        let n = client.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the client closed before a request".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn answer(client: &mut TcpStream, status: &str, body: &str) {
    let msg = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(msg.as_bytes()).await;
    let _ = client.shutdown().await;
}

async fn serve(
    mut client: TcpStream,
    allow: &[Endpoint],
    counts: &EgressCounts,
) -> std::io::Result<()> {
    let (head, rest) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok(h)) => h,
        Ok(Err(why)) => {
            answer(
                &mut client,
                "400 Bad Request",
                &format!("bench egress proxy: {why}\n"),
            )
            .await;
            return Ok(());
        }
        Err(_) => return Ok(()),
    };
    let req = match parse_head(&head) {
        Ok(r) => r,
        Err(why) => {
            answer(
                &mut client,
                "400 Bad Request",
                &format!("bench egress proxy: {why}\n"),
            )
            .await;
            return Ok(());
        }
    };
    let (host, port) = match &req {
        Request::Connect { host, port } | Request::Http { host, port, .. } => (host.clone(), *port),
    };
    if !allow.iter().any(|e| e.matches(&host, port)) {
        counts.denied.fetch_add(1, Ordering::Relaxed);
        answer(
            &mut client,
            "403 Forbidden",
            &format!(
                "bench egress proxy: {} is not on this sandbox's allowlist (the agent phase reaches only its harness's model endpoints; add it to the harness's `endpoints` to allow it)\n",
                Endpoint { host: host.clone(), port }
            ),
        )
        .await;
        return Ok(());
    }
    let upstream = match tokio::time::timeout(
        Duration::from_secs(30),
        TcpStream::connect((host.trim_matches(['[', ']']), port)),
    )
    .await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            answer(
                &mut client,
                "502 Bad Gateway",
                &format!("bench egress proxy: {host}:{port}: {e}\n"),
            )
            .await;
            return Ok(());
        }
        Err(_) => {
            answer(
                &mut client,
                "504 Gateway Timeout",
                "bench egress proxy: connect timed out\n",
            )
            .await;
            return Ok(());
        }
    };
    counts.allowed.fetch_add(1, Ordering::Relaxed);
    let mut upstream = upstream;
    match req {
        Request::Connect { .. } => {
            client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await?;
        }
        Request::Http { head, .. } => {
            upstream.write_all(&head).await?;
        }
    }
    if !rest.is_empty() {
        upstream.write_all(&rest).await?;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_name_their_endpoint() {
        let e = |u: &str| Endpoint::of_url(u).map(|e| e.to_string());
        assert_eq!(e("http://127.0.0.1:4000/v1").unwrap(), "127.0.0.1:4000");
        assert_eq!(
            e("https://gateway.example.com").unwrap(),
            "gateway.example.com:443"
        );
        assert_eq!(e("http://Proxy.Local/api?x=1").unwrap(), "proxy.local:80");
        assert_eq!(e("http://[::1]:8080/v1").unwrap(), "[::1]:8080");
        for bad in [
            "ftp://x",
            "127.0.0.1:4000",
            "http://",
            "http://u@h/",
            "http://h:0/",
        ] {
            assert!(e(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn endpoints_parse_strictly() {
        assert_eq!(
            Endpoint::parse("API.anthropic.com:443").unwrap(),
            Endpoint {
                host: "api.anthropic.com".into(),
                port: 443
            }
        );
        assert_eq!(
            Endpoint::parse("[::1]:8080").unwrap().to_string(),
            "[::1]:8080"
        );
        for bad in [
            "example.com",
            "example.com:0",
            ":80",
            "a/b:1",
            "u@h:1",
            "h:99999",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn heads_are_read_as_connect_or_absolute_http() {
        assert_eq!(
            parse_head(b"CONNECT api.openai.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap(),
            Request::Connect {
                host: "api.openai.com".into(),
                port: 443
            }
        );
        let Request::Http { host, port, head } = parse_head(
            b"POST http://127.0.0.1:8000/v1/chat HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nProxy-Connection: keep-alive\r\nContent-Length: 2\r\n\r\n",
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!((host.as_str(), port), ("127.0.0.1", 8000));
        let head = String::from_utf8(head).unwrap();
        assert!(head.starts_with("POST /v1/chat HTTP/1.1\r\n"), "{head}");
        assert!(!head.to_lowercase().contains("proxy-connection"), "{head}");
        assert!(head.ends_with("Connection: close\r\n\r\n"), "{head}");
        assert!(parse_head(b"GET /relative HTTP/1.1\r\n\r\n").is_err());
        assert!(parse_head(b"GET https://x/ HTTP/1.1\r\n\r\n").is_err());
    }

    async fn http_get_via(proxy: SocketAddr, target: &str) -> String {
        let mut s = TcpStream::connect(proxy).await.unwrap();
        s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn only_allowed_endpoints_are_reached() {
        // Two servers on loopback: one allowed, one not.
        let ok = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let no = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (ok_addr, no_addr) = (ok.local_addr().unwrap(), no.local_addr().unwrap());
        for l in [ok, no] {
            tokio::spawn(async move {
                while let Ok((mut s, _)) = l.accept().await {
                    let mut buf = [0u8; 1024];
                    let _ = s.read(&mut buf).await;
                    let _ = s
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                        .await;
                }
            });
        }
        let proxy = EgressProxy::start(
            "127.0.0.1".parse().unwrap(),
            vec![Endpoint::parse(&ok_addr.to_string()).unwrap()],
        )
        .await
        .unwrap();
        let got = http_get_via(proxy.addr(), &format!("http://{ok_addr}/")).await;
        assert!(got.ends_with("hello"), "{got}");
        let denied = http_get_via(proxy.addr(), &format!("http://{no_addr}/")).await;
        assert!(denied.starts_with("HTTP/1.1 403"), "{denied}");
        // A tunnel to the allowed one works; to the other is refused.
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        s.write_all(format!("CONNECT {ok_addr} HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut buf = vec![0u8; 39];
        s.read_exact(&mut buf).await.unwrap();
        assert!(buf.starts_with(b"HTTP/1.1 200"));
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        assert!(out.ends_with("hello"), "{out}");
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        s.write_all(format!("CONNECT {no_addr} HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        assert!(out.starts_with("HTTP/1.1 403"), "{out}");
        assert_eq!(proxy.counts().allowed.load(Ordering::Relaxed), 2);
        assert_eq!(proxy.counts().denied.load(Ordering::Relaxed), 2);
    }
}
