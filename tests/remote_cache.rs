//! The shared remote cache against a real S3-compatible server (moto's server, started on
//! loopback by each test and killed at its end): two stores share results, a poisoned entry is
//! never used, and a remote that dies or an upload that is killed costs no result.
//!
//! moto comes from PyPI (`.ci/run` installs it pinned in /opt/bench-moto); `BENCH_MOTO_SERVER`
//! names another `moto_server`. Without it the tests are skipped, under CI=true they fail.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

const BUCKET: &str = "team-cache";
const PREFIX: &str = "bench/bench-cache-v1";

/// A moto S3 server on a free loopback port, with one bucket; killed when dropped.
struct Moto {
    child: Option<Child>,
    port: u16,
}

fn moto_bin() -> Option<PathBuf> {
    let p = std::env::var_os("BENCH_MOTO_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/bench-moto/bin/moto_server"));
    if p.is_file() {
        return Some(p);
    }
    assert!(
        !ci(),
        "moto_server is missing ({}): .ci/run installs it",
        p.display()
    );
    eprintln!("skipped: no moto_server at {}", p.display());
    None
}

impl Moto {
    fn start() -> Option<Moto> {
        let bin = moto_bin()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let m = Moto {
            child: Some(child),
            port,
        };
        let t0 = Instant::now();
        while ureq::put(&m.url(BUCKET)).send_empty().is_err() {
            assert!(t0.elapsed() < Duration::from_secs(30), "moto did not start");
            std::thread::sleep(Duration::from_millis(200));
        }
        Some(m)
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// The bucket, as any S3 client sees it (signed requests, like the aws CLI's).
    fn client(&self) -> (object_store::aws::AmazonS3, tokio::runtime::Runtime) {
        let s3 = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name(BUCKET)
            .with_region("us-east-1")
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .with_endpoint(format!("http://127.0.0.1:{}", self.port))
            .with_allow_http(true)
            .build()
            .unwrap();
        (s3, tokio::runtime::Runtime::new().unwrap())
    }

    /// Keys under `rel` (relative to the cache's root), sorted; none if the server is gone.
    fn list(&self, rel: &str) -> Vec<String> {
        use futures_util::TryStreamExt;
        use object_store::ObjectStore;
        let (s3, rt) = self.client();
        let prefix = object_store::path::Path::from(format!("{PREFIX}/{rel}"));
        let metas: Vec<object_store::ObjectMeta> = rt
            .block_on(s3.list(Some(&prefix)).try_collect())
            .unwrap_or_default();
        let mut keys: Vec<String> = metas
            .into_iter()
            .map(|m| m.location.to_string()[PREFIX.len() + 1..].to_string())
            .collect();
        keys.sort();
        keys
    }

    fn get(&self, rel: &str) -> Vec<u8> {
        use object_store::ObjectStoreExt;
        let (s3, rt) = self.client();
        let path = object_store::path::Path::from(format!("{PREFIX}/{rel}"));
        rt.block_on(async { s3.get(&path).await.unwrap().bytes().await.unwrap() })
            .to_vec()
    }

    /// Writes an object behind bench's back: a poisoner with write access to the bucket.
    fn put(&self, rel: &str, bytes: &[u8]) {
        use object_store::ObjectStoreExt;
        let (s3, rt) = self.client();
        let path = object_store::path::Path::from(format!("{PREFIX}/{rel}"));
        rt.block_on(s3.put(&path, bytes.to_vec().into())).unwrap();
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A machine: the quickstart in its own directory with its own store and signing key,
/// trusting `trust` (public keys) on the moto server at `port`.
struct Machine {
    sb: Sandbox,
    key: PathBuf,
    public: String,
    port: u16,
    remote: String,
}

impl Machine {
    fn new(port: u16) -> Machine {
        let sb = Sandbox::quickstart();
        let key = sb.path("signing.key");
        let out = bench_in(
            sb.dir.path(),
            &["cache", "keygen", "--out", key.to_str().unwrap()],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let public = stdout(&out).trim().to_string();
        assert!(public.starts_with("ed25519:"), "{public}");
        Machine {
            sb,
            key,
            public,
            port,
            remote: format!("s3://{BUCKET}/bench"),
        }
    }

    fn trust(&self, keys: &[&str]) {
        let list: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
        let text = self.sb.read("quickstart.toml");
        let base = text.split("\n[cache]").next().unwrap().to_string();
        fs_err::write(
            self.sb.path("quickstart.toml"),
            format!(
                "{base}\n[cache]\nremote = \"{}\"\ntrust = [{}]\n",
                self.remote,
                list.join(", ")
            ),
        )
        .unwrap();
    }

    fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ACCESS_KEY_ID", "test".to_string()),
            ("AWS_SECRET_ACCESS_KEY", "test".to_string()),
            ("AWS_DEFAULT_REGION", "us-east-1".to_string()),
            ("AWS_ENDPOINT", format!("http://127.0.0.1:{}", self.port)),
            ("AWS_ALLOW_HTTP", "true".to_string()),
            ("BENCH_CACHE_KEY_FILE", self.key.display().to_string()),
            // No key or config of the user's home is read.
            (
                "XDG_CONFIG_HOME",
                self.sb.path("config").display().to_string(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bench_bin());
        c.args(args)
            .current_dir(self.sb.dir.path())
            .env_remove("BENCH_STORE")
            .env("NO_COLOR", "1")
            .envs(self.env());
        c
    }

    fn bench(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run bench")
    }

    fn apply(&self) -> Output {
        let out = self.bench(&["apply", "quickstart.toml"]);
        assert!(out.status.success(), "{}", stderr(&out));
        out
    }

    fn report(&self, name: &str) -> Vec<u8> {
        fs_err::read(self.sb.path(&format!("reports/quickstart/{name}"))).unwrap()
    }
}

/// Each team's resolved count and the valid gold patches: what two stores that computed a
/// result each must agree on (the reports also hold wall times).
fn verdicts(m: &Machine) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&m.report("report.json")).unwrap();
    let mut out: Vec<String> = v["teams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| format!("{} {}", t["name"], t["resolved"]))
        .collect();
    out.push(v["gold"]["valid"].to_string());
    out
}

fn same_reports(a: &Machine, b: &Machine) {
    for f in [
        "report.md",
        "report.json",
        "report.html",
        "predictions.jsonl",
    ] {
        assert!(a.report(f) == b.report(f), "{f} differs between the stores");
    }
}

#[test]
fn a_second_store_runs_nothing_and_writes_the_same_report() {
    let Some(moto) = Moto::start() else { return };
    let (a, b) = (Machine::new(moto.port), Machine::new(moto.port));
    a.trust(&[&a.public]);
    b.trust(&[&b.public, &a.public]);
    let first = a.apply();
    let ran = executed(&first);
    assert!(ran.len() > 30, "the quickstart ran: {ran:?}");
    assert!(stderr(&first).contains("uploaded"), "{}", stderr(&first));
    assert!(!moto.list("ac/").is_empty(), "entries were uploaded");

    // B's plan: nothing to run, everything from the remote, per stage.
    let plan = b.bench(&["plan", "quickstart.toml"]);
    assert_eq!(plan.status.code(), Some(0), "{}", stdout(&plan));
    assert!(stdout(&plan).contains("remote     24"), "{}", stdout(&plan));
    assert!(stdout(&plan).contains("everything is in the store or the remote cache"));
    let json = b.bench(&["plan", "--json", "quickstart.toml"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let remote: u64 = v["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["remote"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(remote, 1 + 8 + 24 + 24 + 1, "{v}");

    // B's apply: nothing runs, the same report bytes.
    let second = b.apply();
    assert!(executed(&second).is_empty(), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("remote cache: 43 served"),
        "{}",
        stderr(&second)
    );
    same_reports(&a, &b);
    // B's store now holds it all: its next apply and plan need no remote.
    let again = b.apply();
    assert!(executed(&again).is_empty());

    // `[cache]` is placement only: pointing A elsewhere and turning uploads off reruns nothing.
    a.sb.edit(
        "quickstart.toml",
        "s3://team-cache/bench",
        "s3://team-cache/elsewhere",
    );
    a.sb.append("quickstart.toml", "push = false\n");
    let moved = a.apply();
    assert!(executed(&moved).is_empty(), "{}", stderr(&moved));
    assert!(stdout(&a.bench(&["plan", "quickstart.toml"])).contains("nothing to run"));

    // `bench cache status` counts entries per signer and marks the trusted ones.
    let st = b.bench(&["cache", "status", "quickstart.toml"]);
    assert!(st.status.success(), "{}", stderr(&st));
    assert!(
        stdout(&st).contains(&format!("records by {} (trusted)", a.public)),
        "{}",
        stdout(&st)
    );
}

#[test]
fn a_blob_tampered_with_on_the_server_is_detected_and_recomputed() {
    let Some(moto) = Moto::start() else { return };
    let (a, b) = (Machine::new(moto.port), Machine::new(moto.port));
    a.trust(&[&a.public]);
    b.trust(&[&a.public]);
    a.apply();
    // The poisoner rewrites the blob of the report's markdown.
    let md = a.report("report.md");
    let digest = blake3::hash(&md).to_hex().to_string();
    let rel = format!("cas/{digest}");
    assert_eq!(moto.get(&rel), md);
    moto.put(&rel, b"| oracle | 0 resolved |\n");

    let out = b.apply();
    let err = stderr(&out);
    assert!(err.contains("does not match its digest"), "{err}");
    assert!(err.contains(&digest), "names the blob: {err}");
    // Only the report recomputes, from the other results the remote served, and it is A's.
    assert_eq!(executed(&out), ["report"], "{err}");
    same_reports(&a, &b);
    // B's upload of the recomputed report healed the blob (B signs with a key A may trust).
    assert_eq!(moto.get(&rel), md);
}

#[test]
fn a_record_signed_by_an_untrusted_key_or_edited_is_not_used() {
    let Some(moto) = Moto::start() else { return };
    let (a, b) = (Machine::new(moto.port), Machine::new(moto.port));
    a.trust(&[&a.public]);
    b.trust(&[&b.public]);
    let filled = executed(&a.apply());

    // B trusts only itself: A's entries are there, and none is used.
    let out = b.apply();
    // Everything ran again. Which address of a grade that two teams share (the same empty
    // patch) runs it and which waits is a race, so grades are compared by count.
    let ran = executed(&out);
    let not_grades = |v: &[String]| -> Vec<String> {
        v.iter()
            .filter(|a| !a.starts_with("grade/"))
            .cloned()
            .collect()
    };
    assert_eq!(
        not_grades(&ran),
        not_grades(&filled),
        "B ran everything itself"
    );
    assert_eq!(ran.len(), filled.len(), "B ran every grade itself: {ran:?}");
    let err = stderr(&out);
    assert!(
        err.contains("signed only by keys this manifest does not trust"),
        "{err}"
    );
    assert!(err.contains(&a.public), "{err}");
    // One note for them all (the same reason for every node), not one per node.
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("signed only by keys this manifest does not trust"))
            .count(),
        1,
        "{err}"
    );

    // An entry of a trusted signer, edited on the server (a verdict flipped): its signature
    // no longer verifies, and that node runs.
    let c = Machine::new(moto.port);
    c.trust(&[&a.public]);
    let entries: Vec<String> = moto
        .list("ac/")
        .into_iter()
        .filter(|e| e.ends_with(&a.public["ed25519:".len()..]))
        .collect();
    let forged = entries
        .iter()
        .find(|e| {
            let t = String::from_utf8_lossy(&moto.get(e)).into_owned();
            t.contains("\"resolved\": true")
        })
        .expect("an entry with a resolved grade");
    let text = String::from_utf8(moto.get(forged)).unwrap();
    moto.put(
        forged,
        text.replacen("\"resolved\": true", "\"resolved\": fals", 1)
            .as_bytes(),
    );
    let out = c.apply();
    let err = stderr(&out);
    assert!(err.contains("signature does not verify"), "{err}");
    assert!(!executed(&out).is_empty(), "the forged node ran: {err}");
    assert_eq!(
        verdicts(&a),
        verdicts(&c),
        "the forged verdict was not believed"
    );
}

/// What the holdback forwarder saw: whether a later stage's request went through, and (once
/// the held request was let through) whether that happened first.
#[derive(Default)]
struct Seen {
    later: bool,
    released_after_later: Option<bool>,
}

type Shared = std::sync::Arc<(std::sync::Mutex<Seen>, std::sync::Condvar)>;

/// An HTTP/1.1 forwarder from a loopback port to moto at `upstream` that holds back the request
/// for the entry of key `slow` until a request for the entry of one of `later` has gone
/// through, or 20 s have passed.
fn holdback(upstream: u16, slow: String, later: Vec<String>) -> (u16, Shared) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Shared::default();
    let shared = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (seen, slow, later) = (shared.clone(), slow.clone(), later.clone());
            std::thread::spawn(move || {
                if let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", upstream)) {
                    forward(client, server, &slow, &later, &seen);
                }
            });
        }
    });
    (port, seen)
}

/// One connection: requests forwarded one by one (a head, then a body of its
/// `content-length`), the responses copied back by a thread of their own.
fn forward(
    client: std::net::TcpStream,
    mut server: std::net::TcpStream,
    slow: &str,
    later: &[String],
    seen: &Shared,
) {
    use std::io::{BufRead, Read, Write};
    let (mut from, mut to) = (server.try_clone().unwrap(), client.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(std::net::Shutdown::Both);
    });
    let mut reader = std::io::BufReader::new(client);
    loop {
        let (mut head, mut length) = (String::new(), 0usize);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = server.shutdown(std::net::Shutdown::Both);
                return;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let first = head.lines().next().unwrap_or_default();
        let (lock, cv) = &**seen;
        if later.iter().any(|k| first.contains(&format!("/ac/{k}/"))) {
            lock.lock().unwrap().later = true;
            cv.notify_all();
        }
        if first.contains(&format!("/ac/{slow}/")) {
            let held = lock.lock().unwrap();
            let (mut held, _) = cv
                .wait_timeout_while(held, Duration::from_secs(20), |s| !s.later)
                .unwrap();
            held.released_after_later = Some(held.later);
        }
        let mut body = vec![0; length];
        let sent = reader
            .read_exact(&mut body)
            .and_then(|()| server.write_all(head.as_bytes()))
            .and_then(|()| server.write_all(&body));
        if sent.is_err() {
            let _ = server.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}

/// The node keys of a machine's last apply, by address (its run record).
fn run_keys(m: &Machine) -> BTreeMap<String, String> {
    let runs = files_with_ext(&m.sb.path(".bench/runs"), "json");
    let last = runs.iter().max().expect("a run record");
    let v: serde_json::Value = serde_json::from_slice(&fs_err::read(last).unwrap()).unwrap();
    v["nodes"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(a, n)| Some((a.clone(), n["key"].as_str()?.to_string())))
        .collect()
}

/// One gold check's entry key, and the keys of the grades of the other tasks (two stages
/// later, each of its own key): what a pipelined reader asks for while the first is slow.
fn slow_and_later(keys: &BTreeMap<String, String>) -> (String, Vec<String>) {
    let (gold, slow) = keys
        .iter()
        .find(|(a, _)| a.starts_with("gold/"))
        .expect("a gold node");
    let task = gold.trim_start_matches("gold/");
    let earlier: Vec<&String> = keys
        .iter()
        .filter(|(a, _)| !a.starts_with("grade/"))
        .map(|(_, k)| k)
        .collect();
    let later: Vec<String> = keys
        .iter()
        .filter(|(a, k)| {
            a.starts_with("grade/") && !a.contains(&format!("/{task}/")) && !earlier.contains(k)
        })
        .map(|(_, k)| k.clone())
        .collect();
    assert!(!later.is_empty(), "{keys:?}");
    (slow.clone(), later)
}

#[test]
fn plan_pull_and_apply_ask_for_a_later_stage_while_an_earlier_request_is_slow() {
    let Some(moto) = Moto::start() else { return };
    let (a, mut b) = (Machine::new(moto.port), Machine::new(moto.port));
    a.trust(&[&a.public]);
    b.trust(&[&b.public, &a.public]);
    a.apply();
    let (slow, later) = slow_and_later(&run_keys(&a));
    // While the slow entry is held back, the grades of other tasks are asked for: the reads
    // are a pipeline, not stage-by-stage waves waiting for their slowest request. Plan reads
    // records only, pull fetches them whole, then the apply finds everything in the store;
    // a second store applies from the remote.
    let held = |b: &mut Machine, args: &[&str]| {
        let (port, seen) = holdback(moto.port, slow.clone(), later.clone());
        b.port = port;
        let out = b.bench(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(
            seen.0.lock().unwrap().released_after_later,
            Some(true),
            "{args:?}: no later stage was asked for while an earlier request was slow"
        );
        out
    };
    let plan = held(&mut b, &["plan", "quickstart.toml"]);
    assert!(
        stdout(&plan).contains("everything is in the store or the remote cache"),
        "{}",
        stdout(&plan)
    );
    let pull = held(&mut b, &["cache", "pull", "quickstart.toml"]);
    assert!(
        stdout(&pull).contains("pulled 43 records"),
        "{}",
        stdout(&pull)
    );
    let out = b.apply();
    assert!(executed(&out).is_empty(), "{}", stderr(&out));
    same_reports(&a, &b);

    let mut c = Machine::new(moto.port);
    c.trust(&[&c.public, &a.public]);
    let out = held(&mut c, &["apply", "quickstart.toml"]);
    assert!(executed(&out).is_empty(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("remote cache: 43 served"),
        "{}",
        stderr(&out)
    );
    same_reports(&a, &c);
}

/// Waits until `pred` holds (polling), or panics after `limit`.
fn wait_for(limit: Duration, what: &str, mut pred: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !pred() {
        assert!(t0.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_apply_finishes_locally_when_the_server_dies_mid_apply() {
    let Some(mut moto) = Moto::start() else {
        return;
    };
    let a = Machine::new(moto.port);
    a.trust(&[&a.public]);
    let child = a
        .command(&["apply", "quickstart.toml"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first entry is up: the apply is under way, uploading as it goes. The server dies.
    wait_for(Duration::from_secs(120), "a first upload", || {
        !moto.list("ac/").is_empty()
    });
    moto.kill();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("is unreachable"), "{}", stderr(&out));
    assert!(stdout(&out).contains("report: "));
    let done = a.bench(&["plan", "quickstart.toml"]);
    assert!(
        stdout(&done).contains("nothing to run"),
        "{}",
        stdout(&done)
    );

    // A store whose remote is down from the start runs everything locally, with a note.
    let b = Machine::new(moto.port);
    b.trust(&[&a.public]);
    let out = b.apply();
    assert!(stderr(&out).contains("is unreachable"), "{}", stderr(&out));
    assert_eq!(verdicts(&a), verdicts(&b));
}

/// Every entry on the server refers only to blobs that are there, and verifies.
fn no_partial_entry(moto: &Moto, trusted: &str) -> usize {
    let blobs: std::collections::HashSet<String> = moto
        .list("cas/")
        .into_iter()
        .map(|b| b.trim_start_matches("cas/").to_string())
        .collect();
    let entries = moto.list("ac/");
    for e in &entries {
        let key = e.split('/').nth(1).unwrap();
        let entry = bench::cache::Entry::decode(key, &moto.get(e)).expect("a whole entry");
        assert_eq!(entry.signer.to_string(), trusted);
        let rec = bench::store::Store::verify_record_bytes(&entry.record, key).unwrap();
        for d in rec.blob_digests().unwrap() {
            assert!(
                blobs.contains(d.as_str()),
                "entry {e} is visible before its blob {d}"
            );
        }
    }
    entries.len()
}

#[test]
fn kill_9_mid_upload_leaves_no_partial_entry() {
    let Some(moto) = Moto::start() else { return };
    let a = Machine::new(moto.port);
    a.trust(&[&a.public]);
    let mut child = a
        .command(&["apply", "quickstart.toml"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed as soon as its uploads have begun: blobs are going up, entries follow them.
    wait_for(Duration::from_secs(120), "a first blob", || {
        !moto.list("cas/").is_empty()
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = child.wait();
    no_partial_entry(&moto, &a.public);

    // Another store pulls what is there without a rejected entry, and A resumes and finishes.
    let b = Machine::new(moto.port);
    b.trust(&[&a.public]);
    let pull = b.bench(&["cache", "pull", "quickstart.toml"]);
    assert!(pull.status.success(), "{}", stderr(&pull));
    assert!(!stderr(&pull).contains("not used"), "{}", stderr(&pull));
    a.apply();
    // What the killed apply never uploaded, `bench cache push` does.
    let push = a.bench(&["cache", "push", "quickstart.toml"]);
    assert!(push.status.success(), "{}", stderr(&push));
    let entries = no_partial_entry(&moto, &a.public);
    assert_eq!(
        entries, 43,
        "every distinct key of the quickstart is on the server"
    );
    let out = b.apply();
    assert!(executed(&out).is_empty(), "{}", stderr(&out));
    same_reports(&a, &b);
}

/// nginx with its WebDAV modules (Debian's nginx-light and libnginx-mod-http-dav-ext) serving a
/// temp directory on a free loopback port; stopped when dropped.
struct Nginx {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    fn start() -> Option<Nginx> {
        let bin = PathBuf::from("/usr/sbin/nginx");
        let dav_ext = Path::new("/usr/lib/nginx/modules/ngx_http_dav_ext_module.so");
        if !bin.is_file() || !dav_ext.is_file() {
            assert!(
                !ci(),
                "nginx with the dav_ext module is missing: .ci/run installs it"
            );
            eprintln!("skipped: no nginx with WebDAV here");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        for d in ["root", "tmp", "logs"] {
            fs_err::create_dir_all(dir.path().join(d)).unwrap();
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let d = dir.path().display();
        let conf = format!(
            "load_module {};\ndaemon off;\nmaster_process off;\npid {d}/nginx.pid;\n\
             error_log {d}/logs/error.log;\nevents {{}}\nhttp {{\n access_log off;\n\
             client_body_temp_path {d}/tmp;\n proxy_temp_path {d}/tmp;\n\
             fastcgi_temp_path {d}/tmp;\n uwsgi_temp_path {d}/tmp;\n scgi_temp_path {d}/tmp;\n\
             server {{\n  listen 127.0.0.1:{port};\n  root {d}/root;\n  location / {{\n\
             dav_methods PUT DELETE MKCOL COPY MOVE;\n   dav_ext_methods PROPFIND OPTIONS;\n\
             create_full_put_path on;\n   client_max_body_size 0;\n  }}\n }}\n}}\n",
            dav_ext.display()
        );
        fs_err::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = Command::new(bin)
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .arg("-p")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let n = Nginx {
            child: Some(child),
            port,
            dir,
        };
        let t0 = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "nginx did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(n)
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/bench", self.port)
    }

    /// The file behind an object of the cache (relative to its root).
    fn file(&self, rel: &str) -> PathBuf {
        self.dir.path().join("root/bench/bench-cache-v1").join(rel)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn over_webdav_a_second_store_runs_nothing_and_a_tampered_blob_is_recomputed() {
    let Some(dav) = Nginx::start() else { return };
    let (mut a, mut b) = (Machine::new(0), Machine::new(0));
    a.remote = dav.url();
    b.remote = dav.url();
    a.trust(&[&a.public]);
    b.trust(&[&a.public]);
    let first = a.apply();
    assert!(stderr(&first).contains("43 uploaded"), "{}", stderr(&first));
    // The poisoner edits the report's markdown blob on the server's disk.
    let md = a.report("report.md");
    let blob = dav.file(&format!("cas/{}", blake3::hash(&md).to_hex()));
    assert_eq!(fs_err::read(&blob).unwrap(), md);
    fs_err::write(&blob, b"| oracle | 0 resolved |\n").unwrap();

    let plan = b.bench(&["plan", "quickstart.toml"]);
    assert!(stdout(&plan).contains("remote     24"), "{}", stdout(&plan));
    let out = b.apply();
    let err = stderr(&out);
    assert!(err.contains("does not match its digest"), "{err}");
    assert_eq!(executed(&out), ["report"], "{err}");
    same_reports(&a, &b);
    // nginx refuses a recursive listing: status walks the tree one level at a time.
    let st = b.bench(&["cache", "status", "quickstart.toml"]);
    assert!(
        stdout(&st).contains(&format!("43 records by {} (trusted)", a.public)),
        "{}{}",
        stdout(&st),
        stderr(&st)
    );
}

#[test]
fn a_directory_remote_is_shared_like_a_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let (mut a, mut b) = (Machine::new(0), Machine::new(0));
    a.remote = format!("file://{}", dir.path().display());
    b.remote = a.remote.clone();
    a.trust(&[&a.public]);
    b.trust(&[&a.public]);
    assert!(stderr(&a.apply()).contains("43 uploaded"));
    let out = b.apply();
    assert!(executed(&out).is_empty(), "{}", stderr(&out));
    same_reports(&a, &b);
    // No staging file of the local object store is left beside the entries.
    let mut stray = Vec::new();
    let mut todo = vec![dir.path().to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs_err::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else if e.file_name().to_string_lossy().contains('#') {
                stray.push(e.path());
            }
        }
    }
    assert!(stray.is_empty(), "{stray:?}");
}

// ---- Trusted entries that try to do more than be believed (a compromised or buggy colleague).
// These run on a directory remote: the attacks are in the entries, not the transport.

/// A machine on the directory remote `dir`.
fn on_dir(dir: &Path) -> Machine {
    let mut m = Machine::new(0);
    m.remote = format!("file://{}", dir.display());
    m
}

/// The key the index of `m`'s store gives the first address matching `pred`, and that address.
fn key_at(m: &Machine, pred: impl Fn(&str) -> bool) -> (String, String) {
    let store = bench::store::Store::open_existing(&m.sb.path(".bench")).expect("a store");
    let manifest = fs_err::canonicalize(m.sb.path("quickstart.toml")).unwrap();
    let index = store.load_index(&manifest);
    index
        .nodes
        .into_iter()
        .find(|(a, _)| pred(a))
        .expect("a node at that address")
}

/// Where `signer`'s entry for `key` is on the directory remote `dir`.
fn entry_file(dir: &Path, key: &str, signer: &str) -> PathBuf {
    dir.join("bench-cache-v1/ac")
        .join(key)
        .join(&signer["ed25519:".len()..])
}

/// The record (its JSON) of the entry at `path`, for `key`.
fn entry_record(path: &Path, key: &str) -> serde_json::Value {
    let entry = bench::cache::Entry::decode(key, &fs_err::read(path).unwrap()).unwrap();
    let body = entry.record.splitn(2, |b| *b == b'\n').nth(1).unwrap();
    serde_json::from_slice(body).unwrap()
}

/// A record file's bytes (header with the body's checksum, then the body), as the store writes
/// it: a forged record that is whole in every other respect.
fn record_file(record: &serde_json::Value) -> Vec<u8> {
    let body = serde_json::to_vec_pretty(record).unwrap();
    let mut out = format!(
        "bench-record {} {}\n",
        bench::store::RECORD_SCHEMA,
        blake3::hash(&body).to_hex()
    )
    .into_bytes();
    out.extend(body);
    out
}

/// Writes `record` as `m`'s own entry for `key`, signed with `m`'s key: what a trusted colleague
/// (compromised, or with a bug) could upload.
fn plant_signed(dir: &Path, m: &Machine, key: &str, record: &serde_json::Value) {
    let signer = bench::cache::read_key_file(&m.key).unwrap();
    let bytes = bench::cache::Entry::encode(key, &record_file(record), &signer);
    let path = entry_file(dir, key, &m.public);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, bytes).unwrap();
}

/// Writes `record` into `m`'s local store as the record of `key`.
fn plant_local(m: &Machine, key: &str, record: &serde_json::Value) {
    let path =
        m.sb.path(&format!(".bench/actions/{}/{}.json", &key[..2], &key[2..]));
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, record_file(record)).unwrap();
}

#[test]
fn a_trusted_entry_naming_a_path_as_its_blob_deletes_nothing_and_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (on_dir(dir.path()), on_dir(dir.path()));
    a.trust(&[&a.public]);
    b.trust(&[&a.public]);
    a.apply();
    // A file outside every store, and a "digest" that, joined under `objects/ab/`, is its path.
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    fs_err::write(&victim, b"precious").unwrap();
    let evil = format!("ab{}", victim.display());
    let (_, key) = key_at(&a, |addr| addr.starts_with("report"));
    let mut rec = entry_record(&entry_file(dir.path(), &key, &a.public), &key);
    rec["blobs"]["report.md"] = evil.clone().into();
    plant_signed(dir.path(), &a, &key, &rec);

    let out = b.apply();
    let err = stderr(&out);
    assert_eq!(fs_err::read(&victim).unwrap(), b"precious", "{err}");
    assert!(err.contains("is not a digest"), "{err}");
    assert_eq!(executed(&out), ["report"], "{err}");
    same_reports(&a, &b);

    // The same record in the local store (a copied store, a bug): refused, removed, nothing
    // outside the store touched, the report recomputed.
    plant_local(&b, &key, &rec);
    let out = b.apply();
    let err = stderr(&out);
    assert_eq!(fs_err::read(&victim).unwrap(), b"precious", "{err}");
    assert!(err.contains("is not a digest"), "{err}");
    assert_eq!(executed(&out), ["report"], "{err}");
    same_reports(&a, &b);
    // `bench verify` and the viewer's data read the store the same way: nothing else is bad.
    let v = b.bench(&["verify", "quickstart.toml"]);
    assert_eq!(v.status.code(), Some(0), "{}", stdout(&v));
}

#[test]
fn a_trusted_entry_of_another_kind_at_a_nodes_key_is_refused_here_and_later() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (on_dir(dir.path()), on_dir(dir.path()));
    a.trust(&[&a.public]);
    b.trust(&[&a.public]);
    a.apply();
    // A grade's record filed at the sample's key, a solve's record filed at a grade's key; each
    // names the key it is filed at, so its checksum, key and signature all hold.
    let (sample, sample_key) = key_at(&a, |addr| addr.starts_with("sample"));
    let (_, some_grade) = key_at(&a, |addr| addr.starts_with("grade/"));
    let (grade, grade_key) = key_at(&a, |addr| {
        addr.starts_with("grade/") && addr.contains("/fixer/")
    });
    let (_, solve_key) = key_at(&a, |addr| {
        addr.starts_with("solve/") && addr.contains("/oracle/")
    });
    let mut misfiled = entry_record(&entry_file(dir.path(), &some_grade, &a.public), &some_grade);
    misfiled["key"] = sample_key.clone().into();
    plant_signed(dir.path(), &a, &sample_key, &misfiled);
    let mut solve = entry_record(&entry_file(dir.path(), &solve_key, &a.public), &solve_key);
    solve["key"] = grade_key.clone().into();
    plant_signed(dir.path(), &a, &grade_key, &solve);

    let out = b.apply();
    let err = stderr(&out);
    assert!(err.contains("misfiled"), "{err}");
    // The sample ran here, and the grade (under one of the addresses that share its key).
    let ran = executed(&out);
    assert!(ran.contains(&sample), "the sample ran here: {ran:?}");
    assert!(
        ran.iter().any(|a| a.starts_with("grade/")),
        "{grade} ran here: {ran:?}"
    );
    same_reports(&a, &b);

    // Later applies, without `[cache]`: nothing misfiled stayed in the store.
    let text = b.sb.read("quickstart.toml");
    fs_err::write(
        b.sb.path("quickstart.toml"),
        text.split("\n[cache]").next().unwrap(),
    )
    .unwrap();
    let out = b.apply();
    assert!(executed(&out).is_empty(), "{}", stderr(&out));
    same_reports(&a, &b);

    // A misfiled record in the local store itself: said, removed, recomputed.
    plant_local(&b, &sample_key, &misfiled);
    let out = b.apply();
    let err = stderr(&out);
    assert!(err.contains("misfiled"), "{err}");
    assert_eq!(executed(&out), [sample], "{err}");
    same_reports(&a, &b);
    let out = b.bench(&["apply", "--verify", "quickstart.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(executed(&out).is_empty(), "{}", stderr(&out));
}

/// The largest resident set of any child this test process has waited for, in KiB.
fn children_max_rss_kib() -> i64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss()
}

#[test]
fn an_oversized_object_is_refused_without_the_consumer_holding_it() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (on_dir(dir.path()), on_dir(dir.path()), on_dir(dir.path()));
    a.trust(&[&a.public]);
    b.trust(&[&a.public]);
    c.trust(&[&a.public]);
    c.sb.append("quickstart.toml", "max_object_size = \"1MiB\"\n");
    a.apply();
    // Anyone who can write to the bucket plants 300 MiB where the report's blob is.
    const PLANTED: u64 = 300 * 1024 * 1024;
    let md = a.report("report.md");
    let digest = blake3::hash(&md).to_hex().to_string();
    let blob = dir.path().join(format!("bench-cache-v1/cas/{digest}"));
    assert_eq!(
        fs_err::read(&blob).unwrap(),
        md,
        "the report's blob is on the remote"
    );
    let plant = || {
        let f = fs_err::File::create(&blob).unwrap();
        f.set_len(PLANTED).unwrap();
    };
    plant();

    // Under the default cap it is streamed to disk, found not to be the blob, and refused.
    let out = b.apply();
    let err = stderr(&out);
    assert!(err.contains("does not match its digest"), "{err}");
    assert_eq!(executed(&out), ["report"], "{err}");
    same_reports(&a, &b);
    // Over a cap, it is refused unread (planted again: B's upload of its report healed it).
    plant();
    let out = c.apply();
    let err = stderr(&out);
    assert!(err.contains("over the cap of 1.0 MiB"), "{err}");
    assert!(err.contains("max_object_size"), "{err}");
    assert_eq!(executed(&out), ["report"], "{err}");
    same_reports(&a, &c);
    // No bench process held the planted object: every one stayed far below its size.
    let peak = children_max_rss_kib() as u64 * 1024;
    assert!(
        peak < PLANTED / 2,
        "a child reached {} MiB",
        peak / 1024 / 1024
    );
    // Nothing of it was kept: the store's copy is the report B computed itself.
    for m in [&b, &c] {
        let stored =
            m.sb.path(&format!(".bench/objects/{}/{}", &digest[..2], &digest[2..]));
        assert_eq!(fs_err::read(stored).unwrap(), md);
    }
}

/// The summary line's counts of a served apply ("remote cache: N served (B blobs, ...)").
fn served_line(out: &Output) -> String {
    stderr(out)
        .lines()
        .find(|l| l.contains("remote cache:") && l.contains("served"))
        .unwrap_or_else(|| panic!("no summary line: {}", stderr(out)))
        .to_string()
}

#[test]
fn identical_fetches_download_each_blob_once_and_say_so_identically() {
    let dir = tempfile::tempdir().unwrap();
    let a = on_dir(dir.path());
    a.trust(&[&a.public]);
    a.apply();
    let on_remote = fs_err::read_dir(dir.path().join("bench-cache-v1/cas"))
        .unwrap()
        .count();
    let mut lines = Vec::new();
    for _ in 0..3 {
        let b = on_dir(dir.path());
        b.trust(&[&a.public]);
        // A machine without a signing key, which computes nothing: it is not told that nothing
        // was uploaded for want of a key (there was nothing to upload).
        let out = b
            .command(&["apply", "quickstart.toml"])
            .env_remove("BENCH_CACHE_KEY_FILE")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(executed(&out).is_empty(), "{}", stderr(&out));
        assert!(!stderr(&out).contains("no signing key"), "{}", stderr(&out));
        lines.push(served_line(&out));
        same_reports(&a, &b);
    }
    assert!(
        lines.iter().all(|l| *l == lines[0]),
        "the counts differ between identical fetches: {lines:?}"
    );
    assert!(
        lines[0].contains(&format!("({on_remote} blobs,")),
        "{} distinct blobs on the remote: {}",
        on_remote,
        lines[0]
    );
}

#[test]
fn an_invalid_entry_of_one_trusted_signer_does_not_hide_the_next_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (a, c, b) = (on_dir(dir.path()), on_dir(dir.path()), on_dir(dir.path()));
    a.trust(&[&a.public]);
    c.trust(&[&c.public]);
    b.trust(&[&a.public, &c.public]);
    a.apply();
    c.apply();
    // A signs a torn record for a grade (its signature holds, the record's checksum does not);
    // C's entry for it is whole.
    let (_, key) = key_at(&a, |addr| addr.starts_with("grade/"));
    let path = entry_file(dir.path(), &key, &a.public);
    let mut torn = record_file(&entry_record(&path, &key));
    let n = torn.len();
    torn.truncate(n - 10);
    let signer = bench::cache::read_key_file(&a.key).unwrap();
    fs_err::write(&path, bench::cache::Entry::encode(&key, &torn, &signer)).unwrap();
    let out = b.apply();
    // Only the report may run (B's mix of A's and C's grades is a report of its own key).
    let ran = executed(&out);
    assert!(
        ran.iter().all(|a| a == "report"),
        "C's entry served the grade: {}",
        stderr(&out)
    );
    assert_eq!(verdicts(&a), verdicts(&b));
}

#[test]
fn remote_cache_mistakes_get_one_clear_error_each() {
    // `file://tmp/x` names the host `tmp`: a validation error with the fix.
    let m = Machine::new(0);
    let mut bad = Machine::new(0);
    bad.remote = "file://tmp/bench-cache".to_string();
    bad.trust(&[&m.public]);
    let o = bad.bench(&["validate", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("file:///tmp/bench-cache"),
        "{}",
        stderr(&o)
    );

    // A directory that does not exist is not silently a new, empty cache: apply goes on without
    // it and says why; `bench cache status` fails with that reason alone.
    let gone = tempfile::tempdir().unwrap();
    let mut missing = Machine::new(0);
    missing.remote = format!("file://{}/nope", gone.path().display());
    missing.trust(&[&missing.public]);
    let o = missing.apply();
    let err = stderr(&o);
    assert!(err.contains("does not exist"), "{err}");
    assert!(err.contains("going on without the remote cache"), "{err}");
    assert!(!gone.path().join("nope").exists(), "nothing was created");
    let o = missing.bench(&["cache", "status", "quickstart.toml"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!err.contains("has no remote cache"), "{err}");
    assert!(!err.contains("going on without"), "{err}");

    // S3 without credentials: the failure names the variables to set. (The metadata service
    // is pointed at a closed loopback port: nothing leaves the machine.)
    let Some(moto) = Moto::start() else { return };
    let s3 = Machine::new(moto.port);
    s3.trust(&[&s3.public]);
    let o = s3
        .command(&["apply", "quickstart.toml"])
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env("AWS_METADATA_ENDPOINT", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("is unreachable"), "{err}");
    assert!(err.contains("export AWS_ACCESS_KEY_ID"), "{err}");
}
