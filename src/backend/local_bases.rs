//! A local task's base repository, made once per backend (one apply) and copied into each of
//! its workspaces: a task's gold check, solves and grades used to make the same repository
//! (copy the base tree, `git init`, `git add -A`, commit) and run the same fail-closed history
//! check in every workspace, about twenty git processes each time.
//!
//! Now the first workspace of a base tree makes it under the store's `tmp/bases-*` (hidden from
//! every jail, as the whole store is): a workspace made and checked by `repo::clean` exactly as
//! any other, then kept (the maker is `local.rs`'s; this file keeps what it made). Every
//! workspace of the task is a `cp -a` of it (reflinks where the filesystem has them). A workspace starts as a byte copy of a checked repository that no
//! command ever ran in, so its own check is that one (as a docker grading sandbox started from
//! its stripped image: [`super::Sandbox::checked_at_start`]). Bases are kept within a disk
//! budget (least recently used first out, never one being copied). The directory goes with the
//! backend; a dead run's is swept with its workspaces.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use super::sandbox::SandboxError;

/// A base repository made and checked: where it is, its one commit, and its check's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    pub repo: PathBuf,
    pub commit: String,
    pub report: String,
    /// Its directory's bytes (the tree and its `.git`), filled in by [`Bases::get`].
    pub bytes: u64,
}

type Key = (PathBuf, String);
type Slot = Arc<OnceCell<Result<Arc<Base>, String>>>;

/// The bases made, and when each was last asked for.
#[derive(Debug, Default)]
struct Kept {
    slots: HashMap<Key, Slot>,
    used: HashMap<Key, u64>,
    tick: u64,
}

/// The base repositories of one backend, made on first use and kept while they fit in
/// `budget` bytes (the least recently used one not being copied goes first; a base removed is
/// made again when asked for).
#[derive(Debug)]
pub struct Bases {
    tmp: PathBuf,
    /// `tmp/bases-*`, once the first base was made.
    dir: Mutex<Option<PathBuf>>,
    kept: Mutex<Kept>,
    /// Bytes of bases kept at most (`None`: an eighth of the free space where the first base
    /// is made, at most 8 GiB).
    budget: Mutex<Option<u64>>,
}

/// The most bytes of base repositories a backend keeps by default.
const MAX_BUDGET: u64 = 8 << 30;

impl Bases {
    /// Bases under `tmp`.
    pub fn new(tmp: PathBuf) -> Bases {
        Bases {
            tmp,
            dir: Mutex::new(None),
            kept: Mutex::new(Kept::default()),
            budget: Mutex::new(None),
        }
    }

    /// The same, keeping at most `budget` bytes of bases.
    #[cfg(test)]
    fn with_budget(tmp: PathBuf, budget: u64) -> Bases {
        let b = Bases::new(tmp);
        *b.budget.lock().unwrap_or_else(|e| e.into_inner()) = Some(budget);
        b
    }

    /// The checked base repository of the tree at `path` (whose files and modes hash to
    /// `digest`), made by the first caller with `make` (given the directory to make it in);
    /// every other waits for it. A failure is every caller's (the same tree fails the same
    /// way); a cancel is not kept, so the next caller makes it. Kept from removal while the
    /// caller holds it (copies it).
    pub async fn get<F, Fut>(
        &self,
        path: &Path,
        digest: &str,
        make: F,
    ) -> Result<Arc<Base>, SandboxError>
    where
        F: FnOnce(PathBuf) -> Fut,
        Fut: Future<Output = Result<Base, SandboxError>>,
    {
        let key = (path.to_path_buf(), digest.to_string());
        let slot = {
            let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            kept.tick += 1;
            let tick = kept.tick;
            kept.used.insert(key.clone(), tick);
            kept.slots.entry(key.clone()).or_default().clone()
        };
        let made = slot
            .get_or_try_init(|| async {
                match make(self.dir()?).await {
                    Ok(mut base) => {
                        base.bytes = base.repo.parent().map_or(0, bytes_under);
                        Ok(Ok(Arc::new(base)))
                    }
                    Err(SandboxError::Cancelled) => Err(SandboxError::Cancelled),
                    Err(SandboxError::Failed(e)) => Ok(Err(e)),
                }
            })
            .await;
        let base = match made {
            Ok(Ok(base)) => base.clone(),
            Ok(Err(e)) => return Err(SandboxError::Failed(e.clone())),
            // Cancelled before it was made: the next caller makes it.
            Err(e) => return Err(e),
        };
        drop(slot);
        self.evict(&key);
        Ok(base)
    }

    /// Removes the least recently used bases, other than `keep` and those being copied or
    /// made, while the bases kept exceed the budget.
    fn evict(&self, keep: &Key) {
        let budget = *self.budget.lock().unwrap_or_else(|e| e.into_inner());
        let Some(budget) = budget else {
            return;
        };
        let mut gone = Vec::new();
        {
            let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            let size = |s: &Slot| s.get().and_then(|r| r.as_ref().ok()).map_or(0, |b| b.bytes);
            let mut total: u64 = kept.slots.values().map(size).sum();
            let mut order: Vec<(u64, Key)> = kept
                .used
                .iter()
                .filter(|(k, _)| *k != keep)
                .map(|(k, t)| (*t, k.clone()))
                .collect();
            order.sort();
            for (_, k) in order {
                if total <= budget {
                    break;
                }
                // Only the map holds the slot (no caller is waiting on it or copying its base).
                let free = kept.slots.get(&k).is_some_and(|s| {
                    Arc::strong_count(s) == 1
                        && s.get()
                            .is_some_and(|r| r.as_ref().is_ok_and(|b| Arc::strong_count(b) == 1))
                });
                if !free {
                    continue;
                }
                if let Some(s) = kept.slots.remove(&k) {
                    kept.used.remove(&k);
                    total -= size(&s);
                    if let Some(Ok(b)) = s.get() {
                        gone.push(b.repo.parent().map(Path::to_path_buf).unwrap_or_default());
                    }
                }
            }
        }
        for d in gone {
            let _ = fs_err::remove_dir_all(d);
        }
    }

    fn dir(&self) -> Result<PathBuf, SandboxError> {
        let mut dir = self.dir.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = dir.as_ref() {
            return Ok(d.clone());
        }
        let d = tempfile::Builder::new()
            .prefix("bases-")
            .tempdir_in(&self.tmp)
            .map_err(|e| {
                SandboxError::Failed(format!(
                    "cannot create a directory in {}: {e}",
                    self.tmp.display()
                ))
            })?
            .keep();
        let d = super::jail::absolute(&d);
        *dir = Some(d.clone());
        let mut budget = self.budget.lock().unwrap_or_else(|e| e.into_inner());
        if budget.is_none() {
            let free = nix::sys::statvfs::statvfs(&d)
                .map(|s| s.blocks_available() * s.fragment_size())
                .unwrap_or(0);
            *budget = Some((free / 8).min(MAX_BUDGET));
        }
        Ok(d)
    }

    /// Removes every base made (the backend's work is done).
    pub fn clear(&self) {
        let dir = self.dir.lock().unwrap_or_else(|e| e.into_inner()).take();
        *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Kept::default();
        if let Some(d) = dir {
            let _ = fs_err::remove_dir_all(d);
        }
    }
}

impl Drop for Bases {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The bytes of the files under `dir` (symbolic links not followed).
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    for e in fs_err::read_dir(dir).into_iter().flatten().flatten() {
        match e.metadata() {
            Ok(m) if m.is_dir() => total += bytes_under(&e.path()),
            Ok(m) => total += m.len(),
            Err(_) => {}
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(dir: &Path, name: &str, bytes: usize) -> PathBuf {
        let t = dir.join(name);
        fs_err::create_dir_all(&t).unwrap();
        fs_err::write(t.join("f.txt"), name.repeat(bytes / name.len().max(1))).unwrap();
        t
    }

    /// A stand-in maker (the real one, `local.rs`'s, makes and checks a git workspace): the
    /// tree's file copied under `dir`, its hash as the commit.
    async fn copy(dir: PathBuf, tree: PathBuf) -> Result<Base, SandboxError> {
        let root = tempfile::Builder::new()
            .prefix("ws-")
            .tempdir_in(&dir)
            .unwrap()
            .keep();
        let repo = root.join("repo");
        fs_err::create_dir_all(&repo).unwrap();
        let text = fs_err::read(tree.join("f.txt")).unwrap();
        fs_err::write(repo.join("f.txt"), &text).unwrap();
        Ok(Base {
            repo,
            commit: blake3::hash(&text).to_hex().to_string(),
            report: "history check passed".to_string(),
            bytes: 0,
        })
    }

    async fn get(bases: &Bases, t: &Path, digest: &str) -> Result<Arc<Base>, SandboxError> {
        bases.get(t, digest, |d| copy(d, t.to_path_buf())).await
    }

    fn made(tmp: &Path) -> usize {
        fs_err::read_dir(tmp)
            .unwrap()
            .flatten()
            .map(|d| fs_err::read_dir(d.path()).unwrap().count())
            .sum()
    }

    /// Bases beyond the budget go, least recently used first, never one being copied; a base
    /// asked for again after it went is made again, the same commit.
    #[tokio::test]
    async fn bases_beyond_the_budget_go_least_recently_used_first_never_one_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        fs_err::create_dir_all(&tmp).unwrap();
        let (a, b, c) = (
            tree(dir.path(), "a", 10_000),
            tree(dir.path(), "b", 10_000),
            tree(dir.path(), "c", 10_000),
        );
        let one = {
            fs_err::create_dir_all(dir.path().join("probe")).unwrap();
            let probe = Bases::new(dir.path().join("probe"));
            get(&probe, &a, "a").await.unwrap().bytes
        };
        assert!(one >= 10_000, "{one}");
        // Room for two bases and a half.
        let bases = &Bases::with_budget(tmp.clone(), one * 2 + one / 2);
        let first_a = get(bases, &a, "a").await.unwrap();
        let commit_a = first_a.commit.clone();
        drop(first_a);
        get(bases, &b, "b").await.unwrap();
        assert_eq!(made(&tmp), 2);
        // Over budget: `a`, the least recently used, goes.
        let held_c = get(bases, &c, "c").await.unwrap();
        assert_eq!(made(&tmp), 2);
        let kept = bases
            .kept
            .lock()
            .unwrap()
            .slots
            .keys()
            .cloned()
            .collect::<Vec<_>>();
        assert!(!kept.iter().any(|(p, _)| p == &a), "{kept:?}");
        // `a` again: made again (the same commit); `b` goes, not `c`, which is being copied.
        let again = get(bases, &a, "a").await.unwrap();
        assert_eq!(again.commit, commit_a);
        assert!(held_c.repo.join("f.txt").exists());
        assert!(again.repo.join("f.txt").exists());
        assert_eq!(made(&tmp), 2);
        // With nothing free to remove, the budget is exceeded rather than a base in use removed.
        let tiny = &Bases::with_budget(dir.path().join("probe"), 1);
        let x = get(tiny, &a, "a").await.unwrap();
        let y = get(tiny, &b, "b").await.unwrap();
        assert!(x.repo.exists() && y.repo.exists());
        drop((x, y));
        bases.clear();
        assert_eq!(fs_err::read_dir(&tmp).unwrap().count(), 0);
    }

    /// A base that cannot be made fails every caller the same way, its maker run once; a
    /// cancelled make is not kept: the next caller makes it.
    #[tokio::test]
    async fn a_failure_is_every_callers_and_a_cancel_is_nobodys() {
        let dir = tempfile::tempdir().unwrap();
        let a = tree(dir.path(), "a", 100);
        let bases = Bases::new(dir.path().to_path_buf());
        let fail = |_| async { Err(SandboxError::Failed("no such tree".into())) };
        let e = bases.get(&a, "a", fail).await.unwrap_err();
        assert_eq!(e.to_string(), "no such tree");
        let ran = std::sync::atomic::AtomicBool::new(false);
        let e = bases
            .get(&a, "a", |d| {
                ran.store(true, std::sync::atomic::Ordering::SeqCst);
                copy(d, a.clone())
            })
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "no such tree");
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        let cancelled = |_| async { Err(SandboxError::Cancelled) };
        let e = bases.get(&a, "b", cancelled).await.unwrap_err();
        assert!(matches!(e, SandboxError::Cancelled));
        let made = bases.get(&a, "b", |d| copy(d, a.clone())).await.unwrap();
        assert!(made.repo.join("f.txt").exists());
        assert!(made.bytes >= 100, "{}", made.bytes);
    }
}
