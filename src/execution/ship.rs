//! A job shipped to a worker: its input root, as Bazel's remote execution has one. Every part a
//! job holds by digest is stored in the store under exactly that digest, and the job itself
//! under its key (the key is the blake3 of the job's JSON), so a worker rebuilds the job from
//! its key and the store alone, and checks every byte on the way:
//!
//! - the job: its JSON, under the key;
//! - a task view (solver or grading): the view's canonical bytes, under the view's digest;
//! - a local base tree: a blob of its entries' records (path, kind, content hash: what the
//!   tree digest hashes, so stored under the tree's digest), and each file's content (a link's
//!   target) under its own blake3;
//! - the reference patch, a stored patch, a prediction, a script or an installed file: its
//!   bytes, under their blake3;
//! - a team: its canonical bytes, under its digest;
//! - a Harbor task: its build context (the `environment/` tarball) under the base's digest,
//!   its grading view's canonical bytes under the grading digest and its tests' tarball
//!   under theirs (the agent's view and the solution need no part of their own: a trial
//!   carries the grading task, whose spec holds the agent's view, and an oracle's solution
//!   is its gold patch).
//!
//! [`stage`] puts a job's parts into a store and names them; [`rebuild`] reads them back
//! through a [`Source`] and refuses anything that does not hash to its name, a job that does
//! not hash to its key, and a tree whose entries could write outside its directory.
//!
//! Not here: moving blobs between stores (the remote cache), running the job (`worker.rs`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::graph::NodeJob;
use crate::jobs::{
    Blob, Digested, GoldPatch, GradeJob, GradingTask, InstallFile, Kind, PatchInput, SolveJob,
    SolverTask, TeamSpec,
};
use crate::store::Store;
use crate::tasks::{Task, TaskBase};
use crate::types::Digest;

/// Why a job cannot be shipped or rebuilt.
#[derive(Debug, thiserror::Error)]
pub enum ShipError {
    #[error("{kind} jobs run where the apply runs; they are never shipped")]
    NotShipped { kind: &'static str },
    #[error(transparent)]
    Task(#[from] crate::tasks::ShippedTaskError),
    #[error("cannot read part {digest} of the job: {message}")]
    Missing { digest: String, message: String },
    #[error("part {digest} of the job is invalid: {message}")]
    Invalid { digest: String, message: String },
    #[error(
        "the local base tree {path} changed since its task was read (its digest was {digest}); apply again"
    )]
    TreeChanged { path: PathBuf, digest: String },
    #[error("cannot store part of the job: {0}")]
    Store(String),
}

fn invalid(digest: &str, message: impl Into<String>) -> ShipError {
    ShipError::Invalid {
        digest: digest.to_string(),
        message: message.into(),
    }
}

fn digest_of(d: &str) -> Result<Digest, ShipError> {
    Digest::parse(d).map_err(|e| invalid(d, e.to_string()))
}

/// Collects a job's parts into a store.
struct Stager<'a> {
    store: &'a Store,
    digests: BTreeSet<Digest>,
}

impl Stager<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<Digest, ShipError> {
        let d = self
            .store
            .put_blob(bytes)
            .map_err(|e| ShipError::Store(e.to_string()))?;
        let d = digest_of(&d)?;
        self.digests.insert(d.clone());
        Ok(d)
    }

    /// A part already in the store (an agent's patch).
    fn stored(&mut self, digest: &str) -> Result<(), ShipError> {
        let d = digest_of(digest)?;
        if !self.store.has_blob(&d) {
            return Err(ShipError::Missing {
                digest: digest.to_string(),
                message: "the local store does not hold it".into(),
            });
        }
        self.digests.insert(d);
        Ok(())
    }

    fn blob(&mut self, b: &Blob) -> Result<(), ShipError> {
        self.put(b.bytes()).map(drop)
    }

    fn files(&mut self, files: &[InstallFile]) -> Result<(), ShipError> {
        files.iter().try_for_each(|f| self.blob(&f.content))
    }

    fn team(&mut self, team: &Digested<TeamSpec>) -> Result<(), ShipError> {
        let spec = team.get();
        for h in spec.harnesses.values() {
            if let Some(s) = &h.script {
                self.blob(&s.content)?;
            }
            self.files(&h.files)?;
            if let Some(i) = &h.install {
                self.files(&i.files)?;
            }
        }
        self.put(&crate::key::canonical_bytes(spec)).map(drop)
    }

    fn base(&mut self, base: &TaskBase) -> Result<(), ShipError> {
        let (path, digest) = match base {
            TaskBase::Dir { path, digest } => (path, digest),
            TaskBase::Build {
                context, digest, ..
            } => {
                if self.put(context)?.as_str() != digest {
                    return Err(invalid(
                        digest,
                        "the build context does not hash to its digest (a bench bug)",
                    ));
                }
                return Ok(());
            }
            TaskBase::Image { .. } => return Ok(()),
        };
        let changed = || ShipError::TreeChanged {
            path: path.clone(),
            digest: digest.clone(),
        };
        let mut records = Vec::new();
        for e in crate::tasks::tree_entries(path).map_err(|_| changed())? {
            let content = if e.kind == b'l' {
                let target = fs_err::read_link(&e.path).map_err(|_| changed())?;
                target.to_string_lossy().into_owned().into_bytes()
            } else {
                fs_err::read(&e.path).map_err(|_| changed())?
            };
            let d = self.put(&content)?;
            let hash = blake3::Hash::from_hex(d.as_str()).expect("digests are hex");
            records.extend(crate::tasks::tree_record(&e.rel, e.kind, hash.as_bytes()));
        }
        if self.put(&records)?.as_str() != digest {
            return Err(changed());
        }
        Ok(())
    }

    fn grading(&mut self, t: &GradingTask) -> Result<(), ShipError> {
        self.base(t.base())?;
        if let Some(h) = t.harbor() {
            self.put(&h.grading_view_bytes())?;
            self.blob(&h.tests)?;
        }
        self.put(&t.view_bytes()).map(drop)
    }

    fn grade(&mut self, j: &GradeJob) -> Result<(), ShipError> {
        self.grading(&j.task)?;
        match &j.patch {
            PatchInput::Gold(g) => self.put(g.text().as_bytes()).map(drop),
            PatchInput::Stored(d) => self.stored(d),
            PatchInput::Empty => Ok(()),
        }
    }

    fn solve(&mut self, j: &SolveJob) -> Result<(), ShipError> {
        if let Some(h) = &j.harbor {
            self.grading(&h.task)?;
        }
        self.base(j.task.base())?;
        self.put(&j.task.view_bytes())?;
        self.team(&j.team)?;
        if let Some(g) = &j.gold_patch {
            self.put(g.text().as_bytes())?;
        }
        for b in j.predictions.values().flatten() {
            self.blob(b)?;
        }
        if let Some(c) = &j.confirm {
            self.grade(c)?;
        }
        Ok(())
    }
}

/// Stores every part of `job` (of key `key`) in `store`, the job under its key, and returns
/// their digests: what a worker reads, and so what the remote must hold before the job is sent.
pub fn stage(job: &NodeJob, key: &str, store: &Store) -> Result<Vec<Digest>, ShipError> {
    let mut s = Stager {
        store,
        digests: BTreeSet::new(),
    };
    let bytes = match job {
        NodeJob::Grade(j) => {
            s.grade(j)?;
            serde_json::to_vec(j)
        }
        NodeJob::Solve(j) => {
            s.solve(j)?;
            serde_json::to_vec(j)
        }
        NodeJob::Sample(_) => return Err(ShipError::NotShipped { kind: "sample" }),
        NodeJob::Report(_) => return Err(ShipError::NotShipped { kind: "report" }),
    }
    .expect("jobs serialize");
    let d = s.put(&bytes)?;
    if d.as_str() != key {
        return Err(invalid(
            key,
            "the job does not hash to its key (a bench bug)",
        ));
    }
    Ok(s.digests.into_iter().collect())
}

/// Where a worker reads a job's parts: each call returns the bytes of `digest`, verified.
#[async_trait::async_trait]
pub trait Source: Send + Sync {
    async fn bytes(&self, digest: &Digest) -> Result<Vec<u8>, ShipError>;
    /// A directory where verified base trees are kept, one per digest.
    fn trees(&self) -> PathBuf;
}

/// A store as a source (the parts are in it already).
pub struct StoreSource<'a>(pub &'a Store);

#[async_trait::async_trait]
impl Source for StoreSource<'_> {
    async fn bytes(&self, digest: &Digest) -> Result<Vec<u8>, ShipError> {
        self.0.get_blob(digest).map_err(|e| ShipError::Missing {
            digest: digest.to_string(),
            message: e.to_string(),
        })
    }

    fn trees(&self) -> PathBuf {
        self.0.root().join("trees")
    }
}

/// Reads a job's parts back.
struct Rebuilder<'a> {
    source: &'a dyn Source,
}

impl Rebuilder<'_> {
    async fn get(&self, digest: &str) -> Result<Vec<u8>, ShipError> {
        self.source.bytes(&digest_of(digest)?).await
    }

    async fn text(&self, digest: &str) -> Result<String, ShipError> {
        String::from_utf8(self.get(digest).await?).map_err(|_| invalid(digest, "not UTF-8 text"))
    }

    async fn blob(&self, b: &Blob) -> Result<Blob, ShipError> {
        let bytes = self.get(b.digest()).await?;
        Ok(Blob::new(bytes))
    }

    async fn files(&self, files: &mut [InstallFile]) -> Result<(), ShipError> {
        for f in files {
            f.content = self.blob(&f.content).await?;
        }
        Ok(())
    }

    async fn team(&self, team: &Digested<TeamSpec>) -> Result<Digested<TeamSpec>, ShipError> {
        let bytes = self.get(team.digest()).await?;
        let mut spec: TeamSpec = serde_json::from_slice(&bytes)
            .map_err(|e| invalid(team.digest(), format!("not a team: {e}")))?;
        for h in spec.harnesses.values_mut() {
            if let Some(s) = &mut h.script {
                s.content = self.blob(&s.content).await?;
            }
            self.files(&mut h.files).await?;
            if let Some(i) = &mut h.install {
                self.files(&mut i.files).await?;
            }
        }
        let rebuilt = Digested::new(spec);
        if rebuilt.digest() != team.digest() {
            return Err(invalid(
                team.digest(),
                "the team reads back as another team",
            ));
        }
        Ok(rebuilt)
    }

    /// The verified tree of `digest` in the trees directory (materialized once).
    async fn tree(&self, digest: &str) -> Result<PathBuf, ShipError> {
        let root = self.source.trees();
        let dest = root.join(digest_of(digest)?.as_str());
        if dest.is_dir() {
            return Ok(dest);
        }
        let records = self.get(digest).await?;
        let entries = parse_tree(digest, &records)?;
        let tmp = root.join(format!(".tmp-{}-{digest}", std::process::id()));
        let _ = fs_err::remove_dir_all(&tmp);
        let io = |e: std::io::Error| ShipError::Store(format!("{}: {e}", tmp.display()));
        fs_err::create_dir_all(&tmp).map_err(io)?;
        for (rel, kind, content) in entries {
            let bytes = self.get(&content).await?;
            write_entry(&tmp, &rel, kind, &bytes).map_err(io)?;
        }
        let actual = crate::tasks::tree_digest(&tmp).map_err(|e| invalid(digest, e.to_string()))?;
        if actual != digest {
            let _ = fs_err::remove_dir_all(&tmp);
            return Err(invalid(digest, "the tree reads back as another tree"));
        }
        match fs_err::rename(&tmp, &dest) {
            Ok(()) => Ok(dest),
            // Another worker materialized it first: theirs was verified too.
            Err(_) if dest.is_dir() => {
                let _ = fs_err::remove_dir_all(&tmp);
                Ok(dest)
            }
            Err(e) => Err(io(e)),
        }
    }

    async fn task(&self, t: Task) -> Result<Arc<Task>, ShipError> {
        let t = match &t.base {
            TaskBase::Dir { digest, .. } => {
                let path = self.tree(&digest.clone()).await?;
                t.with_tree(path)
            }
            TaskBase::Build { digest, .. } => {
                let context = self.get(&digest.clone()).await?;
                t.with_context(context)
            }
            TaskBase::Image { .. } => t,
        };
        Ok(Arc::new(t))
    }

    /// The Harbor spec whose grading view is stored under `digest`, with its tests.
    async fn harbor(&self, digest: &str) -> Result<crate::tasks::Harbor, ShipError> {
        let bytes = self.get(digest).await?;
        let view: crate::tasks::ShippedGradingView = serde_json::from_slice(&bytes)
            .map_err(|e| invalid(digest, format!("not a Harbor grading view: {e}")))?;
        let tests = self.get(&view.tests.clone()).await?;
        let spec = view
            .into_spec(tests, digest)
            .ok_or_else(|| invalid(digest, "the Harbor grading view reads back as another"))?;
        Ok(crate::tasks::Harbor(Arc::new(spec)))
    }

    async fn grading(&self, v: &GradingTask) -> Result<GradingTask, ShipError> {
        let bytes = self.get(v.digest()).await?;
        let harbor = match crate::tasks::harbor_digest(&bytes) {
            Some(d) => Some(self.harbor(&d).await?),
            None => None,
        };
        let t = Task::from_grading_view(v.digest(), &bytes, harbor.as_ref())?;
        Ok(GradingTask::new(&self.task(t).await?))
    }

    async fn gold(&self, g: &GoldPatch) -> Result<GoldPatch, ShipError> {
        let text = self.text(g.digest()).await?;
        Ok(GoldPatch::new(&Arc::new(Task::from_gold_patch(text))))
    }

    async fn grade(&self, j: &GradeJob) -> Result<GradeJob, ShipError> {
        let mut out = j.clone();
        out.task = self.grading(&j.task).await?;
        // The job's JSON names a patch by digest; a gold patch is the one this job's task view
        // holds, an empty one has no bytes, any other is read from the store by the grade.
        out.patch = match &j.patch {
            PatchInput::Stored(d) if *d == crate::key::digest(b"") => PatchInput::Empty,
            PatchInput::Stored(d) => {
                self.get(d).await?;
                PatchInput::Stored(d.clone())
            }
            p => p.clone(),
        };
        Ok(out)
    }

    async fn solve(&self, j: &SolveJob) -> Result<SolveJob, ShipError> {
        let mut out = j.clone();
        // A trial's grading task first: its spec is the one the solver view's agent facts
        // name.
        if let (Some(h), Some(o)) = (&j.harbor, &mut out.harbor) {
            o.task = self.grading(&h.task).await?;
        }
        let harbor = out.harbor.as_ref().and_then(|h| h.task.harbor()).cloned();
        let harbor = harbor.map(|spec| crate::tasks::Harbor(Arc::new(spec)));
        let bytes = self.get(j.task.digest()).await?;
        let t = Task::from_solver_view(j.task.digest(), &bytes, harbor.as_ref())?;
        out.task = SolverTask::new(&self.task(t).await?);
        out.team = self.team(&j.team).await?;
        if let Some(g) = &j.gold_patch {
            out.gold_patch = Some(self.gold(g).await?);
        }
        for p in out.predictions.values_mut().flatten() {
            *p = self.blob(p).await?;
        }
        if let Some(c) = &j.confirm {
            out.confirm = Some(Box::new(self.grade(c).await?));
        }
        Ok(out)
    }
}

/// The job of `kind` whose key is `key`, rebuilt from `source` with every part it reads, or
/// why not. The rebuilt job's key is `key` again.
pub async fn rebuild(kind: Kind, key: &Digest, source: &dyn Source) -> Result<NodeJob, ShipError> {
    let bytes = source.bytes(key).await?;
    let parse_err =
        |e: serde_json::Error| invalid(key.as_str(), format!("not a {} job: {e}", kind.name()));
    let r = Rebuilder { source };
    let job = match kind {
        Kind::Grade => NodeJob::Grade(Box::new(
            r.grade(&serde_json::from_slice(&bytes).map_err(parse_err)?)
                .await?,
        )),
        Kind::Solve => NodeJob::Solve(Box::new(
            r.solve(&serde_json::from_slice(&bytes).map_err(parse_err)?)
                .await?,
        )),
        Kind::Sample => return Err(ShipError::NotShipped { kind: "sample" }),
        Kind::Report => return Err(ShipError::NotShipped { kind: "report" }),
    };
    if job.key() != key.as_str() {
        return Err(invalid(
            key.as_str(),
            "the job reads back under another key",
        ));
    }
    Ok(job)
}

/// A tree's entries from its records: (relative path, kind, content digest). Refused: a path
/// that is absolute, empty, has an empty, `.` or `..` component, is not UTF-8, or lies under
/// another entry (a link or file cannot hold entries, so no entry can be written through a
/// link); entries out of order or repeated.
fn parse_tree(digest: &str, mut rest: &[u8]) -> Result<Vec<(String, u8, String)>, ShipError> {
    let mut out: Vec<(String, u8, String)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while !rest.is_empty() {
        let nul = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| invalid(digest, "a tree entry without its end"))?;
        let rel = std::str::from_utf8(&rest[..nul])
            .map_err(|_| invalid(digest, "a tree path that is not UTF-8"))?
            .to_string();
        let tail = &rest[nul + 1..];
        if tail.len() < 33 {
            return Err(invalid(
                digest,
                format!("the tree entry {rel} is cut short"),
            ));
        }
        let kind = tail[0];
        if !matches!(kind, b'l' | b'x' | b'f') {
            return Err(invalid(
                digest,
                format!("the tree entry {rel} has an unknown kind"),
            ));
        }
        let content = blake3::Hash::from_bytes(tail[1..33].try_into().expect("32 bytes"));
        let bad_component = rel
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..");
        if rel.starts_with('/') || bad_component {
            return Err(invalid(
                digest,
                format!("the tree path {rel:?} leaves its directory"),
            ));
        }
        if let Some((prev, _, _)) = out.last()
            && *prev >= rel
        {
            return Err(invalid(
                digest,
                format!("the tree entries {prev:?} and {rel:?} are out of order"),
            ));
        }
        let mut ancestors = rel.match_indices('/').map(|(i, _)| &rel[..i]);
        if ancestors.any(|a| seen.contains(a)) {
            return Err(invalid(
                digest,
                format!("the tree path {rel:?} lies under another entry"),
            ));
        }
        seen.insert(rel.clone());
        out.push((rel, kind, content.to_hex().to_string()));
        rest = &tail[33..];
    }
    Ok(out)
}

/// Writes one verified entry under `root` (its parents made as plain directories).
fn write_entry(root: &Path, rel: &str, kind: u8, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent)?;
    }
    match kind {
        b'l' => std::os::unix::fs::symlink(String::from_utf8_lossy(bytes).as_ref(), &path),
        _ => {
            fs_err::write(&path, bytes)?;
            let mode = if kind == b'x' { 0o755 } else { 0o644 };
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(mode))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use super::*;
    use crate::jobs::key_coverage::{facts, task, team};
    use crate::jobs::{Job, ProtocolId, SolveJob};

    /// Another machine's store, filled from `from` only as the worker asks (as the remote would).
    struct Remote<'a> {
        from: &'a Store,
        to: Store,
        asked: Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl Source for Remote<'_> {
        async fn bytes(&self, digest: &Digest) -> Result<Vec<u8>, ShipError> {
            self.asked.lock().unwrap().push(digest.to_string());
            let bytes = StoreSource(self.from).bytes(digest).await?;
            self.to.put_blob(&bytes).unwrap();
            StoreSource(&self.to).bytes(digest).await
        }
        fn trees(&self) -> PathBuf {
            self.to.root().join("trees")
        }
    }

    fn stores() -> (tempfile::TempDir, Store, Store) {
        let dir = tempfile::tempdir().unwrap();
        let a = Store::open(&dir.path().join("a")).unwrap();
        let b = Store::open(&dir.path().join("b")).unwrap();
        (dir, a, b)
    }

    fn grade(t: &Arc<Task>, patch: PatchInput) -> GradeJob {
        GradeJob::new(
            ProtocolId::SweBenchLive,
            facts(),
            GradingTask::new(t),
            patch,
            std::time::Duration::from_secs(60),
            crate::types::AuditMode::Strict,
        )
    }

    fn solve(t: &Arc<Task>) -> SolveJob {
        let mut j = SolveJob::new(
            facts(),
            SolverTask::new(t),
            Digested::new(team()),
            Some(GoldPatch::new(t)),
            BTreeMap::from([("preds".to_string(), Some(Blob::new(b"diff".to_vec())))]),
            std::time::Duration::from_secs(60),
            1,
        );
        j.confirm = Some(Box::new(grade(t, PatchInput::Empty)));
        j
    }

    /// A task whose base is a local tree: nested files, an executable, a link.
    fn dir_task(root: &Path) -> Arc<Task> {
        use std::os::unix::fs::PermissionsExt;
        let repo = root.join("repo");
        fs_err::create_dir_all(repo.join("src/deep")).unwrap();
        fs_err::write(repo.join("src/deep/a.py"), "x = 1\n").unwrap();
        fs_err::write(repo.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
        fs_err::set_permissions(repo.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("src/deep/a.py", repo.join("link")).unwrap();
        let digest = crate::tasks::tree_digest(&repo).unwrap();
        let mut t = (*task()).clone();
        t.base = TaskBase::Dir { path: repo, digest };
        Arc::new(t)
    }

    #[tokio::test]
    async fn a_solve_job_is_rebuilt_from_its_key_on_another_store_with_every_part() {
        let (_d, a, b) = stores();
        let t = task();
        let job = NodeJob::Solve(Box::new(solve(&t)));
        let key = job.key();
        let staged = stage(&job, &key, &a).unwrap();
        let remote = Remote {
            from: &a,
            to: b,
            asked: Mutex::new(Vec::new()),
        };
        let NodeJob::Solve(back) = rebuild(Kind::Solve, &Digest::parse(&key).unwrap(), &remote)
            .await
            .unwrap()
        else {
            panic!("a solve job")
        };
        assert_eq!(back.key(), key);
        assert_eq!(back.task.view_bytes(), SolverTask::new(&t).view_bytes());
        assert_eq!(back.gold_patch.unwrap().text(), "gold");
        assert_eq!(back.predictions["preds"].as_ref().unwrap().bytes(), b"diff");
        let h = &back.team.get().harnesses["cli"];
        assert_eq!(h.script.as_ref().unwrap().content.bytes(), b"print()");
        assert_eq!(h.install.as_ref().unwrap().files[0].content.bytes(), b"x");
        assert_eq!(back.confirm.unwrap().task.fail_to_pass(), ["a"]);
        // The worker asked for exactly what was staged, nothing else.
        let asked: BTreeSet<String> = remote.asked.lock().unwrap().iter().cloned().collect();
        let staged: BTreeSet<String> = staged.iter().map(|d| d.to_string()).collect();
        assert_eq!(asked, staged);
    }

    #[tokio::test]
    async fn a_grade_job_on_a_local_tree_gets_the_same_tree_back() {
        let (d, a, b) = stores();
        let t = dir_task(d.path());
        let job = NodeJob::Grade(Box::new(grade(&t, PatchInput::Gold(GoldPatch::new(&t)))));
        let key = job.key();
        stage(&job, &key, &a).unwrap();
        let remote = Remote {
            from: &a,
            to: b,
            asked: Mutex::new(Vec::new()),
        };
        let NodeJob::Grade(back) = rebuild(Kind::Grade, &Digest::parse(&key).unwrap(), &remote)
            .await
            .unwrap()
        else {
            panic!("a grade job")
        };
        let TaskBase::Dir { path, digest } = back.task.base() else {
            panic!("a local tree")
        };
        assert!(path.starts_with(remote.to.root()));
        assert_eq!(&crate::tasks::tree_digest(path).unwrap(), digest);
        assert_eq!(
            fs_err::read_link(path.join("link")).unwrap(),
            Path::new("src/deep/a.py")
        );
        let patch = crate::stages::patch_bytes(&back, &remote.to).unwrap();
        assert_eq!(patch, b"gold");
    }

    #[tokio::test]
    async fn a_tree_that_writes_outside_its_directory_is_refused() {
        let (d, a, _b) = stores();
        let evil = a.put_blob(b"owned").unwrap();
        let hash = blake3::Hash::from_hex(&evil).unwrap();
        for rel in ["../escape", "/etc/x", "a/../../b", "a//b", ""] {
            let records = crate::tasks::tree_record(rel, b'f', hash.as_bytes());
            let digest = a.put_blob(&records).unwrap();
            let mut t = (*task()).clone();
            t.base = TaskBase::Dir {
                path: PathBuf::new(),
                digest,
            };
            let job = grade(&Arc::new(t), PatchInput::Empty);
            let bytes = serde_json::to_vec(&job).unwrap();
            // The job and its view are stored as a coordinator would; the tree is the attack.
            let key = a.put_blob(&bytes).unwrap();
            let view = GradingTask::new(&Arc::new({
                let mut t = (*task()).clone();
                t.base = job.task.base().clone();
                t
            }));
            a.put_blob(&view.view_bytes()).unwrap();
            let err = rebuild(Kind::Grade, &Digest::parse(&key).unwrap(), &StoreSource(&a))
                .await
                .unwrap_err()
                .to_string();
            assert!(err.contains("leaves its directory"), "{rel}: {err}");
            assert!(!d.path().join("escape").exists());
        }
        // A link, then a file through it.
        let mut records = crate::tasks::tree_record("a", b'l', hash.as_bytes());
        records.extend(crate::tasks::tree_record("a/b", b'f', hash.as_bytes()));
        let err = parse_tree("t", &records).unwrap_err().to_string();
        assert!(err.contains("lies under another entry"), "{err}");
    }

    #[tokio::test]
    async fn a_view_that_reads_back_as_another_view_is_refused() {
        let (_d, a, _b) = stores();
        let t = task();
        // The right view's content, pretty-printed: it parses, under its own digest, but the
        // task it makes hashes back to the canonical digest, not this one.
        let value: serde_json::Value =
            serde_json::from_slice(&SolverTask::new(&t).view_bytes()).unwrap();
        let pretty = serde_json::to_vec_pretty(&value).unwrap();
        let digest = a.put_blob(&pretty).unwrap();
        let mut job = serde_json::to_value(solve(&t)).unwrap();
        job["task"] = serde_json::Value::String(digest);
        let key = a.put_blob(&serde_json::to_vec(&job).unwrap()).unwrap();
        let err = rebuild(Kind::Solve, &Digest::parse(&key).unwrap(), &StoreSource(&a))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("reads back as another view"), "{err}");
    }

    #[tokio::test]
    async fn a_missing_part_or_a_job_of_another_kind_is_a_clear_error() {
        let (_d, a, b) = stores();
        let t = task();
        let job = NodeJob::Solve(Box::new(solve(&t)));
        let key = job.key();
        stage(&job, &key, &a).unwrap();
        let key = Digest::parse(&key).unwrap();
        let err = rebuild(Kind::Solve, &key, &StoreSource(&b))
            .await
            .unwrap_err();
        assert!(matches!(err, ShipError::Missing { .. }), "{err}");
        let err = rebuild(Kind::Grade, &key, &StoreSource(&a))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not a grade job"), "{err}");
    }

    /// A Harbor task: a build context, a spec whose grading view names its tests.
    fn harbor_task() -> Arc<Task> {
        let text = "[agent]\ntimeout_sec = 30\n[verifier]\ntimeout_sec = 60\n";
        let context = b"a tarball of environment/".to_vec();
        Arc::new(Task {
            harbor: Some(crate::tasks::Harbor(Arc::new(crate::tasks::HarborSpec {
                config: crate::datasets::harbor::parse_config(text, "task.toml").unwrap(),
                workdir: "/app".into(),
                tests: Blob::new(b"a tarball of tests/".to_vec()),
                solution: None,
                services: Vec::new(),
            }))),
            ..Task::blank(
                "hb-1".into(),
                TaskBase::Build {
                    digest: crate::key::digest(&context),
                    context: Arc::new(context),
                    from: vec!["bench-test-base:1".into()],
                },
            )
        })
    }

    #[tokio::test]
    async fn a_harbor_trial_is_rebuilt_with_its_context_spec_and_tests() {
        let (_d, a, b) = stores();
        let t = harbor_task();
        let mut trial = solve(&t);
        trial.confirm = None;
        trial.harbor = Some(crate::jobs::HarborTrialJob {
            protocol: 1,
            task: GradingTask::new(&t),
        });
        let job = NodeJob::Solve(Box::new(trial));
        let key = job.key();
        let staged = stage(&job, &key, &a).unwrap();
        let remote = Remote {
            from: &a,
            to: b,
            asked: Mutex::new(Vec::new()),
        };
        let NodeJob::Solve(back) = rebuild(Kind::Solve, &Digest::parse(&key).unwrap(), &remote)
            .await
            .unwrap()
        else {
            panic!("a solve job")
        };
        assert_eq!(back.key(), key);
        let h = back.harbor.as_ref().unwrap();
        let spec = h.task.harbor().unwrap();
        assert_eq!(spec.tests.bytes(), b"a tarball of tests/");
        assert_eq!(spec.config.verifier.timeout_sec, 60.0);
        for base in [h.task.base(), back.task.base()] {
            let TaskBase::Build { context, from, .. } = base else {
                panic!("a build context: {base:?}")
            };
            assert_eq!(context.as_slice(), b"a tarball of environment/");
            assert_eq!(from, &["bench-test-base:1"]);
        }
        assert_eq!(back.task.view_bytes(), SolverTask::new(&t).view_bytes());
        let asked: BTreeSet<String> = remote.asked.lock().unwrap().iter().cloned().collect();
        let staged: BTreeSet<String> = staged.iter().map(|d| d.to_string()).collect();
        assert_eq!(asked, staged);
    }

    #[tokio::test]
    async fn a_harbor_grading_view_whose_facts_were_changed_is_refused() {
        let (_d, a, _b) = stores();
        let t = harbor_task();
        let job = NodeJob::Grade(Box::new(grade(&t, PatchInput::Empty)));
        let key = job.key();
        stage(&job, &key, &a).unwrap();
        // Another verifier timeout under the grading digest's name: the spec reads back as
        // another, and is refused.
        let spec = t.harbor.as_ref().unwrap();
        let view: serde_json::Value = serde_json::from_slice(&spec.grading_view_bytes()).unwrap();
        let mut forged = view.clone();
        forged["config"]["verifier"]["timeout_sec"] = serde_json::json!(6000.0);
        let forged_bytes = serde_json::to_vec(&forged).unwrap();
        let source = Forged {
            store: &a,
            digest: spec.grading_digest(),
            bytes: forged_bytes,
        };
        let err = rebuild(Kind::Grade, &Digest::parse(&key).unwrap(), &source)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("reads back as another"), "{err}");
        // An unknown field is refused too.
        let mut extra = view;
        extra["config"]["verifier"]["shell"] = serde_json::json!("bash");
        let source = Forged {
            store: &a,
            digest: spec.grading_digest(),
            bytes: serde_json::to_vec(&extra).unwrap(),
        };
        let err = rebuild(Kind::Grade, &Digest::parse(&key).unwrap(), &source)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a Harbor grading view"), "{err}");
    }

    /// A store whose bytes of one digest are replaced (as a source that did not verify would
    /// serve them).
    struct Forged<'a> {
        store: &'a Store,
        digest: String,
        bytes: Vec<u8>,
    }

    #[async_trait::async_trait]
    impl Source for Forged<'_> {
        async fn bytes(&self, digest: &Digest) -> Result<Vec<u8>, ShipError> {
            if digest.as_str() == self.digest {
                return Ok(self.bytes.clone());
            }
            StoreSource(self.store).bytes(digest).await
        }
        fn trees(&self) -> PathBuf {
            self.store.root().join("trees")
        }
    }
}
