//! Running a manifest: loading its datasets, making its task images ready (`images.rs`),
//! planning, and the apply dispatcher with its pools and budgets.

mod apply;
mod budget;
mod datasets;
mod error;
pub mod event_log;
pub mod images;
pub mod noop;
mod plan;
mod pools;
pub mod programs;
mod ready;
pub mod remote;
mod rerun;
pub mod retention;
pub mod sequence;
pub mod spend;
pub mod summary;

pub use apply::{
    ApplyOptions, ApplyResult, Dispatcher, apply, describe as describe_record, new_run_id,
    new_run_record,
};
pub use budget::{Budget, Budgets};
pub use datasets::{
    Snapshots, TakenSignatures, load_datasets, load_datasets_taken, load_summaries,
    local_snapshots, snapshots_of,
};
pub use error::ApplyError;
pub use event_log::{EventLog, EventLogError, EventLogReader, event_log_path, read_event_log};
pub use plan::{AgentImagePlan, PlanEntry, PlanOptions, PlanReport, PowerPlan, PowerQuery, plan};
pub use pools::{Demand, Pool, Pools};
pub use rerun::RerunSpec;

use crate::manifest::{Agent, Manifest, UsageFormat};

/// The manifest's `[backend]` as the backend module takes it.
pub fn backend_config(m: &Manifest) -> crate::backend::BackendConfig<'_> {
    crate::backend::BackendConfig {
        kind: m.backend.kind,
        host: m.backend.host.as_deref(),
        hosts: &m.backend.hosts,
        images: &m.backend.images,
        resources: crate::backend::Resources {
            cpus: m.backend.cpus,
            memory_bytes: m.backend.memory_bytes,
            pids: m.backend.pids,
        },
        containers: m.limits.containers,
    }
}

/// Whether an agent's cost can be known: the harness reports exact dollars (claude), or reports
/// tokens for a model in the pricing table (codex, aider, mini-swe-agent: their own figures are
/// rounded or estimates), or drives no model at all.
pub fn priced(m: &Manifest, agent: &Agent) -> bool {
    let h = &m.harnesses[&agent.harness];
    match h.usage {
        Some(UsageFormat::ClaudeJson) => true,
        Some(UsageFormat::CodexJsonl | UsageFormat::Aider | UsageFormat::MiniSweAgent) => agent
            .model
            .as_ref()
            .is_some_and(|mo| m.pricing.contains_key(mo)),
        None => agent.model.is_none(),
    }
}
