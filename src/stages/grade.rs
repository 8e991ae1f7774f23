//! The grade executor: a fresh sandbox of the job's task, the job's protocol, the verdict, and
//! the logs stored as blobs. Gold checks, empty-patch checks and agents' patches all grade here.

use std::collections::BTreeMap;

use tokio_util::sync::CancellationToken;

use super::{WorkError, WorkOutput};
use crate::backend::{Backend, Phase, SandboxSpec};
use crate::harness::scrub;
use crate::jobs::{GradeJob, PatchInput};
use crate::protocols::GradeError;
use crate::store::{Output, Store};

/// The bytes of the patch a grade job names: the gold patch, nothing, or a verified blob.
pub fn patch_bytes(job: &GradeJob, store: &Store) -> Result<Vec<u8>, WorkError> {
    match &job.patch {
        PatchInput::Gold(g) => Ok(g.text().as_bytes().to_vec()),
        PatchInput::Empty => Ok(Vec::new()),
        PatchInput::Stored(d) => store.get_blob(d).map_err(|e| WorkError::CorruptInput {
            digest: d.clone(),
            message: format!("cannot read the patch to grade: {e}"),
        }),
    }
}

/// Grades the job's patch in a fresh sandbox.
pub async fn grade(
    job: &GradeJob,
    store: &Store,
    backend: &dyn Backend,
    address: &str,
    key: &str,
    cancel: &CancellationToken,
) -> Result<WorkOutput, WorkError> {
    if job.protocol.name == crate::jobs::ProtocolId::Harbor {
        return super::harbor::grade(job, store, backend, address, key, cancel).await;
    }
    let patch = patch_bytes(job, store)?;
    let spec = SandboxSpec {
        base: job.task.base(),
        phase: Phase::Grade,
        image: None,
        address,
        key,
        repo_dir: job.task.repo_dir(),
        hardening: job.hardening.as_ref(),
        task_env: None,
    };
    let sandbox = backend.create(&spec, cancel).await?;
    let base = backend.base_commit(job.task.base());
    let result =
        crate::protocols::grade(job, &patch, sandbox.as_ref(), base.as_deref(), cancel).await;
    let removed = sandbox.destroy().await;
    // Grading output is the patch's and the task's: it is scrubbed like an agent's before
    // anything of it is stored or shown.
    let graded = result.map_err(|e| match e {
        GradeError::Task(m) => WorkError::Infra(scrub::scrub_str(&m)),
        GradeError::Sandbox(s) => s.into(),
    })?;
    removed?;
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
        blobs,
    })
}
