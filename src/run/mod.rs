//! Running a manifest: loading its datasets, planning, and the apply dispatcher.

mod apply;
mod datasets;
mod plan;
mod progress;

pub use apply::{ApplyOptions, ApplyResult, apply, report_inputs};
pub use datasets::{load_datasets, load_summaries};
pub use plan::{AgentImagePlan, PlanEntry, PlanReport, plan};
pub use progress::Progress;

use crate::manifest::{Agent, Manifest, UsageFormat};

/// Whether an agent's cost can be known: the harness reports dollars, or reports tokens for a
/// model in the pricing table, or drives no model at all.
pub fn priced(m: &Manifest, agent: &Agent) -> bool {
    let h = &m.harnesses[&agent.harness];
    match h.usage {
        Some(UsageFormat::ClaudeJson | UsageFormat::Aider | UsageFormat::MiniSweAgent) => true,
        Some(UsageFormat::CodexJsonl) => agent
            .model
            .as_ref()
            .is_some_and(|mo| m.pricing.contains_key(mo)),
        None => agent.model.is_none(),
    }
}
