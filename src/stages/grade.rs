//! The grade executor: a fresh sandbox of the job's task, the job's protocol, the verdict, and
//! the logs stored as blobs. Gold checks, empty-patch checks and agents' patches all grade here.

use std::collections::BTreeMap;

use tokio_util::sync::CancellationToken;

use super::{WorkError, WorkOutput};
use crate::backend::{Backend, Network, Phase, SandboxSpec};
use crate::harness::scrub;
use crate::jobs::{GradeJob, PatchInput};
use crate::protocols::GradeError;
use crate::store::{Output, Store};

/// The bytes of the patch a grade job names: the gold patch, nothing, or a verified blob.
pub fn patch_bytes(job: &GradeJob, store: &Store) -> Result<Vec<u8>, WorkError> {
    match &job.patch {
        PatchInput::Gold(g) => Ok(g.text().as_bytes().to_vec()),
        PatchInput::Empty => Ok(Vec::new()),
        PatchInput::Stored(d) => {
            let corrupt = |e: &dyn std::fmt::Display| WorkError::CorruptInput {
                digest: d.clone(),
                message: format!("cannot read the patch to grade: {e}"),
            };
            let digest = crate::types::Digest::parse(d).map_err(|e| corrupt(&e))?;
            store.get_blob(&digest).map_err(|e| corrupt(&e))
        }
    }
}

/// Grades the job's patch in a fresh sandbox (a Harbor task is verified in `stages/harbor.rs`
/// instead).
pub async fn grade(
    job: &GradeJob,
    store: &Store,
    backend: &dyn Backend,
    address: &str,
    key: &str,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    let patch = patch_bytes(job, store)?;
    let base = backend.base_commit(job.task.base());
    let before_strip = crate::protocols::before_strip(job);
    let spec = SandboxSpec {
        base: job.task.base(),
        phase: Phase::Grade,
        network: if job.network {
            Network::Open
        } else {
            Network::None
        },
        image: None,
        address,
        key,
        repo_dir: job.task.repo_dir(),
        hardening: job.hardening.as_ref(),
        stripped: base.as_deref(),
        // SWE-bench Pro reads its hidden tests from the image's history before the strip.
        before_strip: before_strip.as_deref(),
        task_env: None,
    };
    let mut graded = clean_grade(job, &patch, backend, &spec, base.as_deref(), cancel).await?;
    // The forgery check: a clean verdict that differs from the in-sandbox one takes two more
    // clean grades; the majority of the clean ones counts, and the disagreement is flagged.
    if let Some(in_sandbox) = job.confirm {
        let mut clean = vec![graded.output.resolved];
        if graded.output.resolved != in_sandbox {
            for _ in 0..2 {
                let again =
                    clean_grade(job, &patch, backend, &spec, base.as_deref(), cancel).await?;
                clean.push(again.output.resolved);
            }
            let majority = clean.iter().filter(|r| **r).count() >= 2;
            graded.output.resolved = majority;
            let said = |r: bool| if r { "resolved" } else { "unresolved" };
            graded.output.audit.push(crate::protocols::AuditFlag {
                path: String::new(),
                reason: format!(
                    "the forgery check disagrees: {} in the agent's own sandbox, {} of {} clean grades resolved (counted {}): something outside the patch changed the outcome",
                    said(in_sandbox),
                    clean.iter().filter(|r| **r).count(),
                    clean.len(),
                    said(majority),
                ),
            });
        }
        graded.output.confirm = Some(crate::jobs::Confirmation {
            in_sandbox,
            disagreement: clean.iter().any(|r| *r != in_sandbox),
            clean,
        });
    }
    let secrets = scrub::secret_values();
    let mut blobs = BTreeMap::new();
    let mut put = |name: &str, bytes: &[u8], clean: bool| -> Result<(), WorkError> {
        let bytes = if clean {
            bytes.to_vec()
        } else {
            scrub::scrub(bytes, &secrets).0
        };
        blobs.insert(
            name.to_string(),
            store.put_blob(&bytes).map_err(WorkError::store)?,
        );
        Ok(())
    };
    for (name, bytes) in &graded.logs {
        put(name, bytes, false)?;
    }
    put(
        "statuses",
        &serde_json::to_vec_pretty(&graded.statuses).expect("statuses serialize"),
        false,
    )?;
    // The patch is kept as graded (its digest is the job's): a stored patch was scrubbed when
    // its solve stored it, and a gold patch is the dataset's.
    put("patch", &patch, true)?;
    Ok(WorkOutput {
        output: Output::Grade(graded.output),
        blobs: blobs.into(),
    })
}

/// One grade of `patch` in a fresh sandbox of `spec`, destroyed on every path.
async fn clean_grade(
    job: &GradeJob,
    patch: &[u8],
    backend: &dyn Backend,
    spec: &SandboxSpec<'_>,
    base: Option<&str>,
    cancel: &CancellationToken,
) -> Result<crate::protocols::Graded, WorkError> {
    let sandbox = backend.create(spec, cancel).await?;
    let result = crate::protocols::grade(job, patch, sandbox.as_ref(), base, cancel).await;
    let removed = sandbox.destroy().await;
    // Grading output is the patch's and the task's: it is scrubbed like an agent's before
    // anything of it is stored or shown.
    let graded = result.map_err(|e| match e {
        GradeError::Task(m) => WorkError::Infra(scrub::scrub_str(&m)),
        GradeError::Sandbox(s) => s.into(),
    })?;
    removed?;
    Ok(graded)
}
