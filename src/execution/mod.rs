//! Remote execution: nodes run as jobs of an existing engine, placed there by the dispatcher
//! (DESIGN.md section 7, Bazel's shape). The engine is placement only, never part of a key.
//!
//! - `ship.rs`: a job's input root, stored under the digests its key already uses, and the job
//!   rebuilt from its key alone.
//! - `runner.rs`: the seam between the dispatcher and where a node runs (in process, shipped).
//! - `worker.rs`: `bench worker`, which runs one shipped job and uploads its signed record.
//! - `slurm.rs`: a typed client of the Slurm commands (submit, watch, cancel).
//! - `slurm_runner.rs`: the runner that places nodes on Slurm.

pub mod runner;
pub mod ship;
pub mod slurm;
pub mod slurm_runner;
pub mod worker;
