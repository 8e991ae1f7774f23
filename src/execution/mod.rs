//! Remote execution: nodes run as jobs of an existing engine, placed there by the dispatcher
//! (DESIGN.md section 7). `slurm.rs`: a typed client of the Slurm commands (submit, watch,
//! cancel). Not here: what a job runs or how its result comes back (the worker, the shared
//! cache), nor any key: the engine is placement only.

pub mod slurm;
