//! Remote execution: a node run somewhere else than the apply (Bazel's shape). `ship.rs`: a
//! job's input root, stored under the digests its key already uses, and the job rebuilt from
//! its key alone.

pub mod ship;
