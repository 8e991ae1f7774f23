//! Where commands run. `local`: host processes in throwaway git workspaces (`exec`,
//! `workspace`). `docker`: containers on a Docker daemon through bollard (`docker`).

pub mod docker;
mod exec;
mod workspace;

pub use exec::{ExecResult, exec, sweep_workspaces};
pub use workspace::{Workspace, git_env};
