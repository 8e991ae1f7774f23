//! Self-contained language runtimes for agent images, so an agent CLI runs on any glibc task
//! image whatever the image ships: a harness's `runtime` names a release tarball (a Node.js
//! `node-vX-linux-x64.tar.gz`, a python-build-standalone `install_only` build) by URL and sha256.
//! bench downloads it on the host, verifies the checksum, copies it into the install container
//! and unpacks it under `/opt/bench/<name>` before the install commands run, with its `bin/`
//! first on their PATH, so `npm install -g` or `python3 -m pip install` use it. The programs the
//! install commands add to that `bin/` (the agent CLIs) get wrappers in `/usr/local/bin` that run
//! them with the runtime first on PATH; the runtime's own `node` or `python3` are not put on the
//! image's PATH, so they never shadow the task's toolchain. Not where the image is built
//! (`stages/agent_image.rs`).

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, LazyLock, Mutex};

use sha2::Digest;

use crate::types::Runtime;

/// The largest tarball bench downloads.
const MAX_BYTES: u64 = 512 << 20;

/// Where the tarball lands in the install container, relative to `/tmp/bench-install`.
pub fn tarball_path(rt: &Runtime) -> String {
    format!(".bench-runtime/{}.tar", rt.name)
}

/// Shell lines that unpack the runtime (run in `/tmp/bench-install` before the install
/// commands), note what its `bin/` holds, and put it first on PATH.
pub fn unpack_script(rt: &Runtime) -> String {
    let dir = format!("/opt/bench/{}", rt.name);
    format!(
        "mkdir -p {dir}/bin\ntar -xf {tar} -C {dir} --strip-components=1 --no-same-owner\nrm -f {tar}\nls -1 {dir}/bin > {dir}/.bench-own-programs\nexport PATH={dir}/bin:$PATH\n",
        tar = tarball_path(rt),
    )
}

/// Shell lines (run after the install commands) that give every program the install commands
/// added to the runtime's `bin/` a wrapper in `/usr/local/bin` running it with the runtime first
/// on PATH.
pub fn link_script(rt: &Runtime) -> String {
    let dir = format!("/opt/bench/{}", rt.name);
    format!(
        r#"mkdir -p /usr/local/bin
for f in {dir}/bin/*; do
  p=$(basename "$f")
  grep -qxF "$p" {dir}/.bench-own-programs && continue
  printf '#!/bin/sh
PATH="{dir}/bin:$PATH" exec "%s" "$@"
' "$f" > "/usr/local/bin/$p"
  chmod 0755 "/usr/local/bin/$p"
done"#
    )
}

fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Checks `bytes` against the pinned checksum.
pub fn verify(rt: &Runtime, bytes: &[u8]) -> Result<(), String> {
    let got = sha256_hex(bytes);
    if got == rt.sha256.to_ascii_lowercase() {
        Ok(())
    } else {
        Err(format!(
            "runtime `{}` from {}: sha256 is {got}, the pin says {}",
            rt.name, rt.url, rt.sha256
        ))
    }
}

type Fetched = Mutex<HashMap<String, Arc<Vec<u8>>>>;
static FETCHED: LazyLock<Fetched> = LazyLock::new(Default::default);

/// The runtime's tarball, downloaded (once per process) and verified. Blocking: call from
/// `spawn_blocking`.
pub fn fetch(rt: &Runtime) -> Result<Arc<Vec<u8>>, String> {
    let id = format!("{}#{}", rt.url, rt.sha256);
    if let Some(b) = FETCHED.lock().unwrap_or_else(|p| p.into_inner()).get(&id) {
        return Ok(b.clone());
    }
    let bytes = match rt.url.strip_prefix("file://") {
        Some(path) => fs_err::read(path).map_err(|e| e.to_string())?,
        None => {
            let resp = ureq::get(&rt.url).call().map_err(|e| {
                format!("cannot download runtime `{}` from {}: {e}", rt.name, rt.url)
            })?;
            let mut out = Vec::new();
            resp.into_body()
                .into_reader()
                .take(MAX_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| {
                    format!("cannot download runtime `{}` from {}: {e}", rt.name, rt.url)
                })?;
            if out.len() as u64 > MAX_BYTES {
                return Err(format!(
                    "runtime `{}` from {} is larger than {MAX_BYTES} bytes",
                    rt.name, rt.url
                ));
            }
            out
        }
    };
    verify(rt, &bytes)?;
    let bytes = Arc::new(bytes);
    FETCHED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id, bytes.clone());
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(sha: &str) -> Runtime {
        Runtime {
            name: "node".into(),
            url: "file:///nonexistent".into(),
            sha256: sha.into(),
        }
    }

    #[test]
    fn checksums_are_verified() {
        // sha256("abc")
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert!(verify(&rt(abc), b"abc").is_ok());
        assert!(verify(&rt(&abc.to_uppercase()), b"abc").is_ok());
        let e = verify(&rt(abc), b"abd").unwrap_err();
        assert!(e.contains("the pin says"), "{e}");
        assert!(fetch(&rt(abc)).is_err());
    }

    #[test]
    fn unpacking_puts_bin_on_path_and_links_it() {
        let s = unpack_script(&rt("x"));
        assert!(
            s.contains("tar -xf .bench-runtime/node.tar -C /opt/bench/node --strip-components=1")
        );
        assert!(s.contains("export PATH=/opt/bench/node/bin:$PATH"));
        assert!(
            link_script(&rt("x")).contains("grep -qxF \"$p\" /opt/bench/node/.bench-own-programs")
        );
    }
}
