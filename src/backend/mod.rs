//! Where commands run. `local`: host processes in throwaway git workspaces (this module). The
//! `docker` backend (bollard) is not part of this build yet: manifests that ask for it validate
//! and plan, and `apply` refuses them with a clear error.

mod exec;
mod workspace;

pub use exec::{ExecResult, exec, sweep_workspaces};
pub use workspace::{Workspace, git_env};
