//! Where commands run, behind one seam (`sandbox.rs`: the [`Sandbox`] and [`Backend`] traits).
//! `local.rs`: throwaway git workspaces on the host, each in one bubblewrap jail (`jail.rs`,
//! `jail_server.rs`), copied from a task's base repository made once (`local_bases.rs`). `docker_backend.rs`: containers on a
//! Docker daemon, with agent images, over the bollard primitives of `docker.rs`, and a Harbor
//! task's compose services beside them (`services.rs`). `repo.rs`: the
//! repository steps every sandbox shares (strip, check, snapshot, diff). `pull.rs`: task images
//! pulled before anything runs (`image_ref.rs`, `credentials.rs`, `registry.rs`), and `disk.rs`:
//! whether the daemon has the disk for them.

pub mod credentials;
pub mod disk;
pub mod docker;
mod docker_backend;
pub mod egress;
mod exec;
mod hardening;
pub mod image_ref;
pub mod jail;
pub mod jail_server;
mod local;
mod local_bases;
mod open;
pub mod pool;
mod prepared_root;
pub mod pull;
pub mod registry;
pub mod repo;
mod sandbox;
mod services;
mod workspace;

pub use docker_backend::{
    AGENT_REPO, DockerBackend, ENV_REPO, Resources, STRIPPED_REPO, agent_tag, docker_facts,
    stripped_tag,
};
pub use exec::{ExecResult, exec, sweep_workspaces};
pub use hardening::Hardening;
pub use local::{LocalBackend, LocalSandbox, files_under};
pub use open::{
    BackendConfig, OpenSpec, images_present, machine_fact, open, resolve_images, warm_up,
};
pub use prepared_root::register as prepare_jail_root;
pub use sandbox::{
    Backend, Network, Phase, Sandbox, SandboxError, SandboxPaths, SandboxSpec, TaskEnv,
};
pub use services::SERVICE_REPO;
pub use workspace::{git_env, shell_quote};
