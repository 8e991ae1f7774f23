//! Tasks: the common task model, dataset readers, and the seeded sample.

mod digest_cache;
pub mod dir_stamp;
mod harbor;
pub mod limits;
mod local;
mod pro;
mod sample;
mod shipped;
mod task;

pub use digest_cache::DigestCache;
pub use harbor::{
    AgentConfig, EnvironmentConfig, HARBOR_WORKDIR, Harbor, HarborConfig, HarborSpec, Healthcheck,
    McpServer, NetworkPolicy, PackageInfo, ServiceBuild, ServiceHealth, ServiceSpec,
    ShippedGradingView, VerifierConfig,
};
pub use limits::FileLimits;
pub use local::{
    LANGUAGES, LocalTaskError, TaskTomlCheck, TreeEntry, check_local_dir, load_local_dir,
    load_local_dir_cached, tree_digest, tree_digest_limited, tree_entries, tree_record,
};
pub use pro::{PRO_REPO_DIR, ProSpec};
pub use sample::{Filter, SampleRow, sample, sample_rank, sample_rows};
pub use shipped::{ShippedTaskError, harbor_digest};
pub use task::{GRADING_VIEW, Task, TaskBase, TaskDigests, TaskSet};
