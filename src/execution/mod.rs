//! Remote execution: a node run somewhere else than the apply (Bazel's shape). `ship.rs`: a
//! job's input root, stored under the digests its key already uses, and the job rebuilt from
//! its key alone. `runner.rs`: the seam between the dispatcher and where a node runs.

pub mod runner;
pub mod ship;
pub mod worker;
