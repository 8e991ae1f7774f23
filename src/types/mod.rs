//! The floor: plain types that several layers share (the manifest, the backends, the jobs, the
//! graders, the report), so that none of them has to import another's module for them. Nothing
//! here imports a module of bench but `key` (a `Blob` is its digest); nothing here runs
//! anything. The modules that own a concept re-export its types (`manifest::BackendKind`,
//! `jobs::Blob`), so either path names the same type.
//!
//! Not here: anything with behaviour beyond naming, parsing and printing a value.

mod agent;
mod backend;
mod blob;
mod dataset;
mod digest;
mod grading;
mod report;
mod sample;

pub use agent::{Agent, Harness, HarnessKind, Price, Runtime, Tokens, Topology, UsageFormat};
pub use backend::{BackendFacts, BackendKind, DockerHostSpec, DockerTls, InstallFile, InstallSpec};
pub use blob::Blob;
pub use dataset::DatasetFormat;
pub use digest::{BadDigest, DIGEST_LEN, Digest};
pub use grading::{AuditFlag, AuditMode, HarborVerifier, Resolution};
pub use report::Promote;
pub use sample::SampleFilters;
