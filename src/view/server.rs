//! The viewer's HTTP server: axum on 127.0.0.1 (a random free port unless one is given),
//! GET only, answering the embedded page and the data files from the store. Requests whose
//! `Host` is not this loopback address are refused (a web page elsewhere cannot read the
//! results through DNS rebinding). It writes nothing and opens nothing. The `live` data are read
//! anew at each request (the page polls them while an apply runs); when they tell of an apply
//! that finished after the experiment was opened, it is opened again, with its new report.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::ViewError;
use super::assets::{FILES, data_script};
use super::data::Viewer;

/// Where the server listens.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    pub addr: SocketAddr,
    pub url: String,
}

/// Opens the experiment again (its report, once the apply the page follows has finished).
pub type Reopen = Box<dyn Fn() -> Result<Viewer, ViewError> + Send + Sync>;

struct App {
    /// The experiment as last opened: replaced when the apply the page follows finishes.
    viewer: RwLock<Arc<Viewer>>,
    /// Held while the experiment is opened again (one reopening at a time).
    reopen: Mutex<Reopen>,
    hosts: Vec<String>,
}

impl App {
    fn viewer(&self) -> Arc<Viewer> {
        self.viewer
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The `live` document; when it tells of a finished apply the shown experiment was opened
    /// before, the experiment is opened again first (the page then reads its new report).
    fn live(&self) -> serde_json::Value {
        let viewer = self.viewer();
        let live = match viewer.live_now() {
            Ok(l) => l,
            Err(e) => return serde_json::json!({"state": "error", "error": e.to_string()}),
        };
        let mut doc = super::live::document(&live);
        if live.state == "finished" && live.run_id != viewer.exp.run {
            let reopen = self.reopen.lock().unwrap_or_else(|p| p.into_inner());
            // Another request may have opened it again meanwhile.
            if self.viewer().exp.run != live.run_id {
                match reopen() {
                    Ok(v) => *self.viewer.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(v),
                    Err(e) => doc["error"] = serde_json::Value::String(e.to_string()),
                }
            }
        }
        doc
    }
}

/// The `Host` headers a browser sends for this server: `127.0.0.1:PORT` and `localhost:PORT`,
/// and on port 80 the same without the port (browsers leave the default port out).
fn allowed_hosts(port: u16) -> Vec<String> {
    let mut hosts = vec![format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    if port == 80 {
        hosts.extend(["127.0.0.1".to_string(), "localhost".to_string()]);
    }
    hosts
}

fn host_ok(app: &App, headers: &HeaderMap) -> bool {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| app.hosts.iter().any(|ok| ok == h))
}

fn refused() -> Response {
    (
        StatusCode::FORBIDDEN,
        "bench view answers 127.0.0.1 and localhost only\n",
    )
        .into_response()
}

fn file(name: &str) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, ctype, body)) => (
            [
                (header::CONTENT_TYPE, HeaderValue::from_static(ctype)),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            *body,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn asset(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    if !host_ok(&app, &headers) {
        return refused();
    }
    file(&name)
}

async fn index(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if !host_ok(&app, &headers) {
        return refused();
    }
    file("index.html")
}

async fn data(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(path): Path<String>,
) -> Response {
    if !host_ok(&app, &headers) {
        return refused();
    }
    let Some(path) = path.strip_suffix(".js").map(str::to_string) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    // Reading records and blobs is blocking file I/O.
    let app2 = app.clone();
    let body = tokio::task::spawn_blocking(move || {
        if path == "live" {
            return Some(data_script(&path, &app2.live()));
        }
        app2.viewer().data(&path).map(|d| data_script(&path, &d))
    })
    .await
    .ok()
    .flatten();
    match body {
        Some(b) => (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/javascript; charset=utf-8"),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            b,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such page\n").into_response(),
    }
}

/// Serves `viewer` until Ctrl-C; `ready` is called with the address once it listens. `reopen`
/// opens the experiment again when the apply it follows has finished.
pub fn serve(
    viewer: Viewer,
    reopen: Reopen,
    port: Option<u16>,
    ready: impl FnOnce(&Served),
) -> Result<(), ViewError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let want = SocketAddr::from(([127, 0, 0, 1], port.unwrap_or(0)));
        let listener = tokio::net::TcpListener::bind(want)
            .await
            .map_err(|source| ViewError::Listen {
                addr: want.to_string(),
                source,
            })?;
        let addr = listener.local_addr()?;
        let app = Arc::new(App {
            viewer: RwLock::new(Arc::new(viewer)),
            reopen: Mutex::new(reopen),
            hosts: allowed_hosts(addr.port()),
        });
        let router = Router::new()
            .route("/", get(index))
            .route("/data/{*path}", get(data))
            .route("/{name}", get(asset))
            .with_state(app);
        ready(&Served {
            addr,
            url: format!("http://127.0.0.1:{}/", addr.port()),
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::allowed_hosts;

    #[test]
    fn on_port_80_the_host_without_its_port_is_this_server() {
        let h = allowed_hosts(80);
        for ok in ["127.0.0.1", "localhost", "127.0.0.1:80", "localhost:80"] {
            assert!(h.iter().any(|x| x == ok), "{ok}: {h:?}");
        }
        // Elsewhere a portless Host means port 80: another server, refused.
        let h = allowed_hosts(8080);
        assert!(
            !h.iter().any(|x| x == "127.0.0.1" || x == "localhost"),
            "{h:?}"
        );
        assert!(h.iter().any(|x| x == "127.0.0.1:8080"), "{h:?}");
        assert!(!h.iter().any(|x| x.contains("evil")), "{h:?}");
    }
}
