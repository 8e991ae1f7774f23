//! bench: declarative, cached pipelines for coding-agent benchmarks.
//!
//! A manifest (`manifest`) expands into a DAG of nodes (`graph`), each keyed by a content hash
//! (`key`) and cached in a content-addressed store (`store`). `run` plans and applies;
//! `stages` holds each node kind's work, on the backends of `backend`.

pub mod backend;
pub mod cache;
pub mod cli;
pub mod commands;
pub mod datasets;
pub mod events;
pub mod execution;
pub mod exit_codes;
pub mod files;
pub mod graph;
pub mod harness;
pub mod jobs;
pub mod key;
pub mod manifest;
pub mod mine;
pub mod parsers;
pub mod protocols;
pub mod regular_file;
pub mod report;
pub mod run;
pub mod stages;
pub mod store;
pub mod tasks;
pub mod timings;
pub mod types;
pub mod view;
