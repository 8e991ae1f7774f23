//! Pulls from a real registry on loopback (Debian's `docker-registry`, htpasswd auth with
//! bcrypt) into the real Docker Engine of this machine, no mocks: each test starts its own
//! registry on a free 127.0.0.1 port, pushes an image it made (the fixture image plus a layer
//! of random bytes, so the daemon lacks that layer), removes the local copy, and drives the
//! real binary. Under CI=true a missing daemon, image or tool is a failure; elsewhere these
//! tests print a note and pass. They run in the `docker` group (`.config/nextest.toml`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{ci, stderr, stdout};

const IMAGE: &str = "bench-test-calc:1";
const USER: &str = "benchuser";
const PASSWORD: &str = "s3cret-pw";

/// Whether the daemon, the fixture image and the registry's tools are here.
fn ready() -> bool {
    if !common::docker_ready(&[IMAGE]) {
        return false;
    }
    for tool in ["docker-registry", "htpasswd"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            assert!(
                !ci(),
                "CI=true but {tool} is missing: apt-get install docker-registry apache2-utils"
            );
            eprintln!("note: skipping a registry test: {tool} is missing");
            return false;
        }
    }
    true
}

fn sh(args: &[&str]) -> String {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A registry on loopback, killed on drop.
struct Registry {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Registry {
    fn start() -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let htpasswd = sh(&["htpasswd", "-Bbn", USER, PASSWORD]);
        fs_err::write(dir.path().join("htpasswd"), format!("{htpasswd}\n")).unwrap();
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {root}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\nauth:\n  htpasswd:\n    realm: bench-test\n    path: {pw}\n",
            root = dir.path().join("data").display(),
            pw = dir.path().join("htpasswd").display(),
        );
        fs_err::write(dir.path().join("config.yml"), config).unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(dir.path().join("config.yml"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::from(
                fs_err::File::create(dir.path().join("registry.log")).unwrap(),
            ))
            .spawn()
            .expect("docker-registry");
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the registry did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let r = Registry { child, port, dir };
        // The pusher's own Docker config (never the user's).
        fs_err::create_dir_all(r.pusher_config()).unwrap();
        let mut login = Command::new("docker")
            .arg("--config")
            .arg(r.pusher_config())
            .args(["login", "-u", USER, "--password-stdin", &r.host()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        login
            .stdin
            .take()
            .unwrap()
            .write_all(PASSWORD.as_bytes())
            .unwrap();
        let out = login.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        r
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn pusher_config(&self) -> PathBuf {
        self.dir.path().join("pusher")
    }

    /// Makes an image of the fixture plus `mib` MiB of random bytes, pushes it as
    /// `host/name:tag`, removes the local copy; returns (image ID, manifest digest).
    fn push(&self, name: &str, tag: &str, mib: usize) -> (String, String) {
        let reference = format!("{}/{name}:{tag}", self.host());
        let blob = self.dir.path().join("blob");
        let mut bytes = vec![0u8; mib << 20];
        let mut f = fs_err::File::open("/dev/urandom").unwrap();
        std::io::Read::read_exact(&mut f, &mut bytes).unwrap();
        fs_err::write(&blob, bytes).unwrap();
        let cid = sh(&["docker", "create", IMAGE, "true"]);
        sh(&[
            "docker",
            "cp",
            blob.to_str().unwrap(),
            &format!("{cid}:/blob"),
        ]);
        sh(&["docker", "commit", &cid, &reference]);
        sh(&["docker", "rm", &cid]);
        let id = sh(&["docker", "image", "inspect", "-f", "{{.Id}}", &reference]);
        let out = sh(&[
            "docker",
            "--config",
            self.pusher_config().to_str().unwrap(),
            "push",
            &reference,
        ]);
        let digest = out
            .lines()
            .find_map(|l| l.split("digest: ").nth(1))
            .and_then(|r| r.split_whitespace().next())
            .expect("a digest in the push output")
            .to_string();
        sh(&["docker", "rmi", &reference]);
        (id, digest)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Removes every local image of `repo` (a test's pulls), whatever it is tagged.
fn remove_local(repo: &str) {
    let ids = Command::new("docker")
        .args(["images", "-q", "--no-trunc", repo])
        .output()
        .unwrap();
    for id in String::from_utf8_lossy(&ids.stdout).lines() {
        // The stripped images grading built on it first (a parent with children stays).
        let children = Command::new("docker")
            .args(["images", "-q", "--no-trunc", "--filter"])
            .arg(format!("label=bench.base-image={id}"))
            .output()
            .unwrap();
        for c in String::from_utf8_lossy(&children.stdout).lines() {
            let _ = Command::new("docker").args(["rmi", "-f", c]).output();
        }
        let _ = Command::new("docker").args(["rmi", "-f", id]).output();
    }
    let _ = Command::new("docker")
        .args(["image", "prune", "-f"])
        .output();
}

fn image_exists(reference: &str) -> bool {
    Command::new("docker")
        .args(["image", "inspect", reference])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The fixture task's base commit.
fn base_commit() -> String {
    let text = sh(&[
        "docker",
        "run",
        "--rm",
        "--entrypoint",
        "cat",
        IMAGE,
        "/fixture-shas",
    ]);
    text.lines()
        .find_map(|l| l.strip_prefix("base="))
        .unwrap()
        .to_string()
}

/// A docker manifest with one gold-graded task of `image` (the calc fixture of tests/docker.rs).
fn write_experiment(dir: &Path, image: &str) {
    let manifest = common::docker_gold_manifest("registry-pull", "", "pulls = 2");
    fs_err::write(dir.join("m.toml"), manifest).unwrap();
    let task = dir.join("tasks/ok");
    fs_err::create_dir_all(&task).unwrap();
    fs_err::write(
        task.join("task.toml"),
        format!(
            r#"instance_id = "ok"
repo = "fixture/calc"
language = "python"
created_at = 2026-08-01T00:00:00Z
problem_statement = "add() subtracts"
image = "{image}"
base_commit = "{base}"
test_cmds = ["cd /testbed && python3 -m unittest -v tests.test_add tests.test_mul > /tmp/unittest.log 2>&1"]
print_cmds = ["cat /tmp/unittest.log"]
log_parser = "unittest"
FAIL_TO_PASS = ["test_add (tests.test_add.T.test_add)"]
PASS_TO_PASS = ["test_mul (tests.test_mul.T.test_mul)"]
"#,
            base = base_commit()
        ),
    )
    .unwrap();
    fs_err::write(
        task.join("gold.patch"),
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,5 +1,5 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n \n def mul(a, b):\n",
    )
    .unwrap();
    fs_err::write(
        task.join("test.patch"),
        "diff --git a/tests/test_add.py b/tests/test_add.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_add.py\n@@ -0,0 +1,8 @@\n+import unittest\n+\n+from calc import add\n+\n+\n+class T(unittest.TestCase):\n+    def test_add(self):\n+        self.assertEqual(add(2, 3), 5)\n",
    )
    .unwrap();
}

/// A Docker config with `auths` for the registry (base64 user:password).
fn auths_config(dir: &Path, registry: &str, password: &str) -> PathBuf {
    use base64::Engine;
    let d = dir.join("docker-config");
    fs_err::create_dir_all(&d).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{password}"));
    fs_err::write(
        d.join("config.json"),
        format!(r#"{{"auths": {{"{registry}": {{"auth": "{auth}"}}}}}}"#),
    )
    .unwrap();
    d
}

/// Runs bench in `dir` with `DOCKER_CONFIG` (and optionally PATH) set.
fn bench(dir: &Path, config: &Path, path: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(common::bench_bin());
    c.args(args)
        .current_dir(dir)
        .env_remove("BENCH_STORE")
        .env("NO_COLOR", "1")
        .env("DOCKER_CONFIG", config);
    if let Some(p) = path {
        c.env("PATH", p);
    }
    c.output().expect("run bench")
}

/// Whether the stored gold grade of the task resolved it.
fn gold_resolved(dir: &Path) -> bool {
    let store = bench::store::Store::open_existing(&dir.join(".bench")).expect("a store");
    let manifest = fs_err::canonicalize(dir.join("m.toml")).unwrap();
    let key = &store.load_index(&manifest).nodes["gold/ok"];
    let bench::store::Lookup::Hit(rec) = store.get_action(key) else {
        panic!("no record for gold/ok");
    };
    let bench::store::Output::Grade(g) = &rec.output else {
        panic!("not a grade");
    };
    g.resolved
}

#[test]
fn an_absent_image_is_pulled_with_auths_credentials_and_graded() {
    if !ready() {
        return;
    }
    let reg = Registry::start();
    let (id, digest) = reg.push("calc-auths", "1", 8);
    let image = format!("{}/calc-auths:1", reg.host());
    assert!(!image_exists(&image));
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), &image);
    let config = auths_config(dir.path(), &reg.host(), PASSWORD);
    // The plan lists the image, its digest and its size, as the registry says them.
    let out = bench(dir.path(), &config, None, &["plan", "m.toml"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{text}{}", stderr(&out));
    assert!(
        text.contains(&format!("image to pull {image} ({digest}, "))
            && text.contains("compressed)"),
        "{text}"
    );
    let out = bench(dir.path(), &config, None, &["apply", "m.toml"]);
    let err = stderr(&out);
    let pulled = image_exists(&image);
    let local_id = pulled.then(|| sh(&["docker", "image", "inspect", "-f", "{{.Id}}", &image]));
    remove_local(&format!("{}/calc-auths", reg.host()));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(local_id.as_deref(), Some(id.as_str()), "{err}");
    // Progress shows bytes; the pull comes before any node starts.
    let pull_at = err.find("pulled  ").expect("a pulled line");
    assert!(pull_at < err.find("start   ").unwrap(), "{err}");
    let line = err[pull_at..].lines().next().unwrap();
    assert!(line.contains("MiB downloaded"), "{line}");
    assert!(
        err.lines()
            .any(|l| l.contains(": layer ") && l.contains(" downloaded ") && l.ends_with(" MiB")),
        "{err}"
    );
    assert!(gold_resolved(dir.path()), "{err}");
    // The store records what bench pulled, by image ID.
    let rec: serde_json::Value =
        serde_json::from_slice(&fs_err::read(dir.path().join(".bench/images.json")).unwrap())
            .unwrap();
    assert_eq!(rec["images"][&id]["digest"], digest.as_str(), "{rec}");
}

#[test]
fn a_creds_store_helper_on_path_supplies_the_credentials_to_bench_pull() {
    if !ready() {
        return;
    }
    let reg = Registry::start();
    let (id, _) = reg.push("calc-helper", "2", 4);
    let image = format!("{}/calc-helper:2", reg.host());
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), &image);
    // A helper that answers only for this registry, as docker-credential-* helpers do.
    let bin = dir.path().join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    let asked = dir.path().join("asked");
    let helper = bin.join("docker-credential-benchtest");
    fs_err::write(
        &helper,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread server\necho \"$server\" >> {asked}\nif [ \"$server\" = \"{host}\" ]; then\n  printf '{{\"ServerURL\":\"%s\",\"Username\":\"{USER}\",\"Secret\":\"{PASSWORD}\"}}' \"$server\"\nelse\n  echo 'credentials not found in native keychain'; exit 1\nfi\n",
            asked = asked.display(),
            host = reg.host()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = dir.path().join("docker-config");
    fs_err::create_dir_all(&config).unwrap();
    fs_err::write(config.join("config.json"), r#"{"credsStore": "benchtest"}"#).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // A daemon disk that lacks the room (here: a reserve no disk has) refuses, with figures.
    let refused = Command::new(common::bench_bin())
        .args(["pull", "m.toml"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("DOCKER_CONFIG", &config)
        .env("PATH", &path)
        .env("BENCH_DISK_RESERVE", "1PiB")
        .output()
        .unwrap();
    let refused_pulled = image_exists(&image);
    let out = bench(dir.path(), &config, Some(&path), &["pull", "m.toml"]);
    let pulled = image_exists(&image);
    let (o, e) = (stdout(&out), stderr(&out));
    // Nothing ran: no action records.
    let actions = dir.path().join(".bench/actions");
    let ran = fs_err::read_dir(&actions).map_or(0, |d| d.count());
    let then = bench(dir.path(), &config, Some(&path), &["apply", "m.toml"]);
    remove_local(&format!("{}/calc-helper", reg.host()));
    let r = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{r}");
    assert!(!refused_pulled, "{r}");
    assert!(
        r.contains("not enough disk") && r.contains("free;") && r.contains("images to pull"),
        "{r}"
    );
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    assert!(pulled, "{o}{e}");
    assert!(o.contains(&format!("pulled {image} (sha256:")), "{o}");
    assert!(o.contains(&format!("as {id}")), "{o}");
    assert!(
        o.contains("1 images pulled, 0 already on the daemon"),
        "{o}"
    );
    assert_eq!(ran, 0, "bench pull ran nodes");
    // Asked once per pull attempt (the refused one, then the real one), for the registry's host.
    let asked = fs_err::read_to_string(&asked).unwrap();
    assert!(
        !asked.is_empty() && asked.lines().all(|l| l == reg.host()),
        "the helper is asked for the registry's host: {asked:?}"
    );
    // The apply finds the image: no pull, and the task is graded.
    assert_eq!(then.status.code(), Some(0), "{}", stderr(&then));
    assert!(!stderr(&then).contains("pulled  "), "{}", stderr(&then));
    assert!(gold_resolved(dir.path()));
}

#[test]
fn a_wrong_password_is_a_clear_error_before_any_node_runs() {
    if !ready() {
        return;
    }
    let reg = Registry::start();
    reg.push("calc-denied", "1", 1);
    let image = format!("{}/calc-denied:1", reg.host());
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), &image);
    let config = auths_config(dir.path(), &reg.host(), "not-the-password");
    let out = bench(dir.path(), &config, None, &["apply", "m.toml"]);
    let err = stderr(&out);
    let pulled = image_exists(&image);
    remove_local(&format!("{}/calc-denied", reg.host()));
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!pulled);
    for part in [
        image.as_str(),
        &format!("registry {} denied access", reg.host()),
        "HTTP 401",
        "UNAUTHORIZED",
        &format!("user \"{USER}\""),
        &format!("docker login {}", reg.host()),
        "nothing was run",
    ] {
        assert!(err.contains(part), "missing {part:?} in:\n{err}");
    }
    assert!(!err.contains("start   "), "{err}");
    let actions = dir.path().join(".bench/actions");
    assert_eq!(fs_err::read_dir(&actions).map_or(0, |d| d.count()), 0);
    // A missing image: the registry's answer, named.
    write_experiment(
        dir.path(),
        &format!("{}/calc-denied:no-such-tag", reg.host()),
    );
    let config = auths_config(dir.path(), &reg.host(), PASSWORD);
    let out = bench(dir.path(), &config, None, &["apply", "m.toml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("registry {} has no image", reg.host()))
            && err.contains("MANIFEST_UNKNOWN"),
        "{err}"
    );
}

#[test]
fn a_digest_pin_is_honoured() {
    if !ready() {
        return;
    }
    let reg = Registry::start();
    let (first_id, first_digest) = reg.push("calc-pin", "1", 2);
    // The tag moves on: a different image under the same tag.
    let (second_id, second_digest) = reg.push("calc-pin", "1", 2);
    assert_ne!(first_digest, second_digest);
    let pinned = format!("{}/calc-pin@{first_digest}", reg.host());
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), &pinned);
    let config = auths_config(dir.path(), &reg.host(), PASSWORD);
    let out = bench(dir.path(), &config, None, &["apply", "m.toml"]);
    let err = stderr(&out);
    let got = image_exists(&pinned)
        .then(|| sh(&["docker", "image", "inspect", "-f", "{{.Id}}", &pinned]));
    let tag_moved = image_exists(&format!("{}/calc-pin:1", reg.host()));
    remove_local(&format!("{}/calc-pin", reg.host()));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(got.as_deref(), Some(first_id.as_str()), "{err}");
    assert_ne!(first_id, second_id);
    assert!(!tag_moved, "a pinned pull tags nothing");
    assert!(gold_resolved(dir.path()));
}

#[test]
fn gc_images_lists_then_removes_the_images_bench_built_and_pulled() {
    if !ready() {
        return;
    }
    let reg = Registry::start();
    let (id, _) = reg.push("calc-gc", "1", 1);
    let image = format!("{}/calc-gc:1", reg.host());
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), &image);
    let config = auths_config(dir.path(), &reg.host(), PASSWORD);
    let out = bench(dir.path(), &config, None, &["apply", "m.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Grading built a stripped image on the pulled one.
    let stripped = sh(&[
        "docker",
        "images",
        "-q",
        "--no-trunc",
        "--filter",
        &format!("label=bench.base-image={id}"),
    ]);
    let cleanup = || {
        if !stripped.is_empty() {
            let _ = Command::new("docker")
                .args(["rmi", "-f", &stripped])
                .output();
        }
        remove_local(&format!("{}/calc-gc", reg.host()));
    };
    // While the manifest is recorded, its pulled image is kept; its built images are listed.
    let out = bench(
        dir.path(),
        &config,
        None,
        &["gc", "--images", "--pulled", "m.toml"],
    );
    let text = stdout(&out);
    if stripped.is_empty() || out.status.code() != Some(0) {
        cleanup();
        panic!(
            "no stripped image ({stripped:?}) or gc failed: {text}{}",
            stderr(&out)
        );
    }
    let short = &id["sha256:".len()..][..12];
    let checks = [
        text.contains("would remove built image bench-stripped:"),
        text.contains(&format!("keeping pulled image {short}")),
        text.contains("dry run: pass --delete"),
        image_exists(&image),
    ];
    // The manifest goes: nothing reaches the pulled image any more.
    fs_err::remove_file(dir.path().join("m.toml")).unwrap();
    let store = dir.path().join(".bench");
    let store_s = store.to_str().unwrap();
    let dry = bench(
        dir.path(),
        &config,
        None,
        &["--store", store_s, "gc", "--images", "--pulled", "--json"],
    );
    let dry_json: serde_json::Value = serde_json::from_slice(&dry.stdout).unwrap_or_default();
    let still_there = image_exists(&image);
    let del = bench(
        dir.path(),
        &config,
        None,
        &["--store", store_s, "gc", "--images", "--pulled", "--delete"],
    );
    let del_text = stdout(&del);
    let gone = !image_exists(&image) && !image_exists(&stripped);
    let record = fs_err::read_to_string(store.join("images.json")).unwrap_or_default();
    cleanup();
    assert!(checks.iter().all(|c| *c), "{checks:?}\n{text}");
    assert_eq!(
        dry_json["images"]["pulled"][0]["id"],
        id.as_str(),
        "{dry_json}"
    );
    assert_eq!(
        dry_json["images"]["built"][0]["id"],
        stripped.as_str(),
        "{dry_json}"
    );
    assert!(still_there, "a dry run removed the image");
    assert_eq!(del.status.code(), Some(0), "{del_text}{}", stderr(&del));
    assert!(
        del_text.contains(&format!("removed pulled image {image}")),
        "{del_text}"
    );
    assert!(gone, "{del_text}");
    assert!(!record.contains(&id), "{record}");
}
