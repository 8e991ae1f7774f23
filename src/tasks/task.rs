//! The task model every dataset reader produces, and the digests that enter node keys: the
//! solver-visible digest (what an agent may see) and the grading digest (what grading reads).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

/// Where a task's base tree comes from.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TaskBase {
    /// A directory on this machine (local tasks); `digest` hashes its files and modes.
    Dir {
        #[serde(skip)]
        path: PathBuf,
        digest: String,
    },
    /// A container image holding the repository at its base commit.
    Image { image: String, base_commit: String },
    /// An image built from a build context (a Harbor task's `environment/`): `digest` hashes
    /// the context tarball, `from` names the images its Dockerfile starts from (resolved to IDs
    /// by the backend, so a rebuilt base image is another environment).
    Build {
        #[serde(skip)]
        context: Arc<Vec<u8>>,
        digest: String,
        from: Vec<String>,
    },
}

/// One benchmark task.
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    pub instance_id: String,
    pub repo: String,
    pub language: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    pub problem_statement: String,
    pub base: TaskBase,
    /// The reference patch.
    pub gold_patch: String,
    /// The hidden tests.
    pub test_patch: String,
    /// Commands run after both patches and before the tests, joined with " ; ".
    pub rebuild_cmds: Vec<String>,
    /// Commands run first in every fresh repository of the task: before the agent in its
    /// workspace, before the candidate when grading (brain bench's `setup`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub setup_cmds: Vec<String>,
    /// Commands run after both patches, joined with " ; " (local tasks: one command).
    pub test_cmds: Vec<String>,
    /// Commands whose output is the test log (SWE-bench-Live); empty: the test output itself.
    pub print_cmds: Vec<String>,
    /// A built-in parser name (`pytest`, `unittest`, ...) or Python source defining `parser(log)`.
    pub log_parser: String,
    pub fail_to_pass: Vec<String>,
    pub pass_to_pass: Vec<String>,
    /// The repository directory inside the task's image when it is not the backend's default
    /// (`/testbed`): `/app` for SWE-bench Pro.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo_dir: Option<String>,
    /// SWE-bench Pro's grading inputs (`None` for other formats).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pro: Option<super::ProSpec>,
    /// A Harbor task's inputs (`None` for other formats), by digest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub harbor: Option<super::Harbor>,
    /// Memoized digests (computed on first use).
    #[serde(skip)]
    pub digests: TaskDigests,
}

/// Memoized digests of a task. A clone starts empty, so an edited copy of a task never carries
/// the original's digests.
#[derive(Debug, Default)]
pub struct TaskDigests {
    solver: std::sync::OnceLock<Arc<str>>,
    grading: std::sync::OnceLock<Arc<str>>,
    gold: std::sync::OnceLock<Arc<str>>,
}

impl Clone for TaskDigests {
    fn clone(&self) -> Self {
        TaskDigests::default()
    }
}

/// Longest string field of a grading view that `plan --explain` records inline.
const EXPLAIN_INLINE_BYTES: usize = 2048;
/// Longest list field (of test names) of a grading view that it records inline.
const EXPLAIN_INLINE_ITEMS: usize = 64;

#[derive(Serialize)]
struct SolverView<'a> {
    instance_id: &'a str,
    repo: &'a str,
    problem_statement: &'a str,
    base: &'a TaskBase,
    #[serde(skip_serializing_if = "Option::is_none")]
    repo_dir: &'a Option<String>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    setup_cmds: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    harbor: Option<String>,
}

/// The version of the grading view of a task ([`Task::grading_digest`], in every gold check's
/// and grade's key): 2 holds the test lists as sorted sets (1 held them in their dataset's
/// order, so a reordered `PASS_TO_PASS` reran its grades).
pub const GRADING_VIEW: u32 = 2;

#[derive(Serialize)]
struct GradingView<'a> {
    /// The view's version ([`GRADING_VIEW`]).
    view: u32,
    instance_id: &'a str,
    base: &'a TaskBase,
    test_patch: &'a str,
    rebuild_cmds: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    setup_cmds: &'a [String],
    test_cmds: &'a [String],
    print_cmds: &'a [String],
    log_parser: &'a str,
    /// Sets: their order carries no meaning, so it is not in the digest.
    fail_to_pass: BTreeSet<&'a str>,
    pass_to_pass: BTreeSet<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repo_dir: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pro: &'a Option<super::ProSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    harbor: Option<String>,
}

impl Task {
    /// A task with only its id and base: every other field empty (a toy's, or a shipped view's
    /// start, whose other fields come from the view).
    pub fn blank(instance_id: String, base: TaskBase) -> Task {
        Task {
            instance_id,
            repo: String::new(),
            language: None,
            created_at: String::new(),
            problem_statement: String::new(),
            base,
            gold_patch: String::new(),
            test_patch: String::new(),
            rebuild_cmds: Vec::new(),
            setup_cmds: Vec::new(),
            test_cmds: Vec::new(),
            print_cmds: Vec::new(),
            log_parser: String::new(),
            fail_to_pass: Vec::new(),
            pass_to_pass: Vec::new(),
            repo_dir: None,
            pro: None,
            harbor: None,
            digests: TaskDigests::default(),
        }
    }

    /// Sorts and deduplicates the test lists: they are sets (a test passes or fails whatever
    /// its place in a list), so a reordered list is the same task, with the same digests and the
    /// same verdict lists. [`TaskSet::new`] does it for every task it holds.
    pub fn normalize_test_lists(&mut self) {
        for list in [&mut self.fail_to_pass, &mut self.pass_to_pass] {
            list.sort_unstable();
            list.dedup();
        }
    }

    /// Digest of what an agent may see: never tests, test lists or the gold patch.
    pub fn solver_digest(&self) -> String {
        self.solver_digest_shared().to_string()
    }

    /// [`Task::solver_digest`], shared (every job of the task holds it).
    pub fn solver_digest_shared(&self) -> Arc<str> {
        self.digests
            .solver
            .get_or_init(|| self.compute_solver_digest().into())
            .clone()
    }

    fn solver_view(&self) -> SolverView<'_> {
        SolverView {
            instance_id: &self.instance_id,
            repo: &self.repo,
            problem_statement: &self.problem_statement,
            base: &self.base,
            repo_dir: &self.repo_dir,
            setup_cmds: &self.setup_cmds,
            harbor: self.harbor.as_ref().map(|h| h.agent_digest()),
        }
    }

    /// The solver view's canonical bytes: their blake3 is [`Task::solver_digest`]. A shipped
    /// job's task is stored as these ([`Task::from_solver_view`] reads them back).
    pub fn solver_view_bytes(&self) -> Vec<u8> {
        crate::key::canonical_bytes(&self.solver_view())
    }

    /// The grading view's canonical bytes: their blake3 is [`Task::grading_digest`].
    pub fn grading_view_bytes(&self) -> Vec<u8> {
        crate::key::canonical_bytes(&self.grading_view())
    }

    fn compute_solver_digest(&self) -> String {
        crate::key::digest_of(&self.solver_view())
    }

    /// What `plan --explain` shows of the solver view: every field its digest hashes, by name,
    /// so an edit reads as `task: problem_statement ...`, not as one digest against another.
    pub fn solver_explain(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.solver_view()).expect("task views serialize");
        v["digest"] = serde_json::Value::String(self.solver_digest());
        v
    }

    /// Digest of the reference patch.
    pub fn gold_digest(&self) -> String {
        self.gold_digest_shared().to_string()
    }

    /// [`Task::gold_digest`], shared.
    pub fn gold_digest_shared(&self) -> Arc<str> {
        self.digests
            .gold
            .get_or_init(|| crate::key::digest(self.gold_patch.as_bytes()).into())
            .clone()
    }

    /// Digest of what grading reads.
    pub fn grading_digest(&self) -> String {
        self.grading_digest_shared().to_string()
    }

    /// [`Task::grading_digest`], shared.
    pub fn grading_digest_shared(&self) -> Arc<str> {
        self.digests
            .grading
            .get_or_init(|| self.compute_grading_digest().into())
            .clone()
    }

    fn compute_grading_digest(&self) -> String {
        crate::key::digest_of(&self.grading_view())
    }

    /// What `plan --explain` shows of the grading view: every field its digest hashes, by name;
    /// a long field (a big test patch, a list of hundreds of tests) as its digest and size, so
    /// stored records stay small.
    pub fn grading_explain(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.grading_view()).expect("task views serialize");
        if let serde_json::Value::Object(fields) = &mut v {
            for (name, field) in fields.iter_mut() {
                let size = match &*field {
                    serde_json::Value::String(s) if s.len() > EXPLAIN_INLINE_BYTES => {
                        format!("{} bytes", s.len())
                    }
                    serde_json::Value::Array(a) if a.len() > EXPLAIN_INLINE_ITEMS => {
                        format!("{} entries", a.len())
                    }
                    _ => continue,
                };
                let digest = crate::key::digest_of(&*field);
                *field = serde_json::Value::String(format!(
                    "{} ({size}) of {name}",
                    &digest[..digest.len().min(12)]
                ));
            }
            fields.insert(
                "digest".to_string(),
                serde_json::Value::String(self.grading_digest()),
            );
        }
        v
    }

    fn grading_view(&self) -> GradingView<'_> {
        GradingView {
            view: GRADING_VIEW,
            instance_id: &self.instance_id,
            base: &self.base,
            test_patch: &self.test_patch,
            rebuild_cmds: &self.rebuild_cmds,
            setup_cmds: &self.setup_cmds,
            test_cmds: &self.test_cmds,
            print_cmds: &self.print_cmds,
            log_parser: &self.log_parser,
            fail_to_pass: self.fail_to_pass.iter().map(String::as_str).collect(),
            pass_to_pass: self.pass_to_pass.iter().map(String::as_str).collect(),
            repo_dir: &self.repo_dir,
            pro: &self.pro,
            harbor: self.harbor.as_ref().map(|h| h.grading_digest()),
        }
    }

    /// Digest of the whole record: the same value as `crate::key::digest_of(self)`, computed
    /// without building a `serde_json::Value` (a mirror struct with the fields in sorted order
    /// serializes to the same canonical bytes; a unit test holds the two together). Datasets of
    /// 100,000 rows digest every task on each load.
    pub fn digest(&self) -> String {
        #[derive(Serialize)]
        struct DirView<'a> {
            digest: &'a str,
            kind: &'static str,
        }
        #[derive(Serialize)]
        struct ImageView<'a> {
            base_commit: &'a str,
            image: &'a str,
            kind: &'static str,
        }
        #[derive(Serialize)]
        struct BuildView<'a> {
            digest: &'a str,
            from: &'a [String],
            kind: &'static str,
        }
        #[derive(Serialize)]
        #[serde(untagged)]
        enum BaseView<'a> {
            Dir(DirView<'a>),
            Image(ImageView<'a>),
            Build(BuildView<'a>),
        }
        #[derive(Serialize)]
        struct Sorted<'a> {
            base: BaseView<'a>,
            created_at: &'a str,
            fail_to_pass: &'a [String],
            gold_patch: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            harbor: &'a Option<super::Harbor>,
            instance_id: &'a str,
            language: &'a Option<String>,
            log_parser: &'a str,
            pass_to_pass: &'a [String],
            print_cmds: &'a [String],
            #[serde(skip_serializing_if = "Option::is_none")]
            pro: &'a Option<super::ProSpec>,
            problem_statement: &'a str,
            rebuild_cmds: &'a [String],
            repo: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            repo_dir: &'a Option<String>,
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            setup_cmds: &'a [String],
            test_cmds: &'a [String],
            test_patch: &'a str,
        }
        let base = match &self.base {
            TaskBase::Dir { digest, .. } => BaseView::Dir(DirView {
                digest,
                kind: "dir",
            }),
            TaskBase::Image { image, base_commit } => BaseView::Image(ImageView {
                base_commit,
                image,
                kind: "image",
            }),
            TaskBase::Build { digest, from, .. } => BaseView::Build(BuildView {
                digest,
                from,
                kind: "build",
            }),
        };
        let bytes = serde_json::to_vec(&Sorted {
            base,
            created_at: &self.created_at,
            fail_to_pass: &self.fail_to_pass,
            gold_patch: &self.gold_patch,
            harbor: &self.harbor,
            instance_id: &self.instance_id,
            language: &self.language,
            log_parser: &self.log_parser,
            pass_to_pass: &self.pass_to_pass,
            print_cmds: &self.print_cmds,
            pro: &self.pro,
            problem_statement: &self.problem_statement,
            rebuild_cmds: &self.rebuild_cmds,
            repo: &self.repo,
            repo_dir: &self.repo_dir,
            setup_cmds: &self.setup_cmds,
            test_cmds: &self.test_cmds,
            test_patch: &self.test_patch,
        })
        .expect("tasks serialize");
        crate::key::digest(&bytes)
    }
}

/// A dataset's tasks by id, and the snapshot digest that enters the sample key.
#[derive(Debug, Clone)]
pub struct TaskSet {
    pub tasks: BTreeMap<String, Arc<Task>>,
    pub snapshot: String,
}

impl TaskSet {
    /// Builds a set and its snapshot digest (over every task's full digest, by id).
    pub fn new(tasks: Vec<Task>) -> TaskSet {
        let tasks: BTreeMap<String, Arc<Task>> = tasks
            .into_iter()
            .map(|mut t| {
                t.normalize_test_lists();
                (t.instance_id.clone(), Arc::new(t))
            })
            .collect();
        // Digests on two threads: large datasets spend most of their load time here.
        let all: Vec<(&str, &Arc<Task>)> = tasks.iter().map(|(k, t)| (k.as_str(), t)).collect();
        let (a, b) = all.split_at(all.len() / 2);
        let digest_all = |part: &[(&'_ str, &Arc<Task>)]| {
            part.iter().map(|(_, t)| t.digest()).collect::<Vec<_>>()
        };
        let (da, db) = std::thread::scope(|s| {
            let h = s.spawn(|| digest_all(b));
            (digest_all(a), h.join().expect("digest thread"))
        });
        let digests: BTreeMap<&str, String> = all
            .iter()
            .map(|(k, _)| *k)
            .zip(da.into_iter().chain(db))
            .collect();
        // A BTreeMap serializes in key order, so its JSON is already canonical: the same bytes
        // as `digest_of`, without building a `Value` of every entry.
        TaskSet {
            snapshot: crate::key::digest(&serde_json::to_vec(&digests).expect("digests serialize")),
            tasks,
        }
    }

    /// Binds the snapshot to where the rows came from (a Hub `repo@revision`): another revision
    /// is another snapshot even if its rows are identical.
    pub fn with_origin(mut self, origin: &str) -> TaskSet {
        self.snapshot = crate::key::digest_of(&(origin, &self.snapshot));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(base: TaskBase) -> Task {
        Task {
            instance_id: "o__r-1".into(),
            repo: "o/r".into(),
            language: Some("rust".into()),
            created_at: "2025-09-07T21:34:16Z".into(),
            problem_statement: "bug \"quoted\" \u{e9}".into(),
            base,
            gold_patch: "diff\n".into(),
            test_patch: "t\n".into(),
            rebuild_cmds: vec!["make".into()],
            test_cmds: vec!["make test".into()],
            print_cmds: vec![],
            log_parser: "pytest".into(),
            fail_to_pass: vec!["a".into()],
            pass_to_pass: vec!["b".into(), "c".into()],
            repo_dir: None,
            pro: None,
            setup_cmds: Vec::new(),
            harbor: None,
            digests: Default::default(),
        }
    }

    #[test]
    fn fast_digest_is_the_canonical_digest() {
        for t in [
            task(TaskBase::Dir {
                path: "/x".into(),
                digest: "d".into(),
            }),
            task(TaskBase::Image {
                image: "img".into(),
                base_commit: "abc".into(),
            }),
            Task {
                language: None,
                ..task(TaskBase::Image {
                    image: "i".into(),
                    base_commit: "c".into(),
                })
            },
            Task {
                repo_dir: Some("/app".into()),
                pro: Some(crate::tasks::ProSpec {
                    before_repo_set_cmd: "git checkout x -- t".into(),
                    instance_info: "Instance ID: x".into(),
                    parser_py: "print(1)".into(),
                    run_script: "echo".into(),
                    selected_test_files: vec!["t".into()],
                }),
                ..task(TaskBase::Image {
                    image: "i".into(),
                    base_commit: "c".into(),
                })
            },
            Task {
                harbor: Some(crate::tasks::Harbor(Arc::new(crate::tasks::HarborSpec {
                    config: crate::datasets::harbor::parse_config("", "task.toml").unwrap(),
                    workdir: "/app".into(),
                    tests: crate::types::Blob::new(b"tests".to_vec()),
                    solution: None,
                    services: Vec::new(),
                }))),
                ..task(TaskBase::Build {
                    context: Arc::new(b"ctx".to_vec()),
                    digest: "c".into(),
                    from: vec!["base:1".into()],
                })
            },
        ] {
            assert_eq!(t.digest(), crate::key::digest_of(&t));
        }
        let set = TaskSet::new(vec![
            task(TaskBase::Dir {
                path: "/x".into(),
                digest: "d".into(),
            }),
            Task {
                instance_id: "a__b-2".into(),
                ..task(TaskBase::Dir {
                    path: "/x".into(),
                    digest: "e".into(),
                })
            },
        ]);
        let digests: BTreeMap<&str, String> = set
            .tasks
            .iter()
            .map(|(k, t)| (k.as_str(), crate::key::digest_of(&**t)))
            .collect();
        assert_eq!(set.snapshot, crate::key::digest_of(&digests));
    }

    #[test]
    fn harbor_tests_are_in_the_grading_digest_not_the_solver_digest() {
        let spec = |tests: &[u8], agent: &str| {
            let text = format!("[agent]\ntimeout_sec = {agent}\n");
            Task {
                harbor: Some(crate::tasks::Harbor(Arc::new(crate::tasks::HarborSpec {
                    config: crate::datasets::harbor::parse_config(&text, "task.toml").unwrap(),
                    workdir: "/app".into(),
                    tests: crate::types::Blob::new(tests.to_vec()),
                    solution: None,
                    services: Vec::new(),
                }))),
                ..task(TaskBase::Image {
                    image: "i".into(),
                    base_commit: String::new(),
                })
            }
        };
        let a = spec(b"t1", "10");
        let b = spec(b"t2", "10");
        let c = spec(b"t1", "20");
        assert_eq!(a.solver_digest(), b.solver_digest());
        assert_ne!(a.grading_digest(), b.grading_digest());
        assert_ne!(a.solver_digest(), c.solver_digest());
        assert_ne!(a.digest(), b.digest());
    }
}
