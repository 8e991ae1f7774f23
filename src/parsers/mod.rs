//! Built-in test-log parsers and the runner for dataset-supplied Python parser scripts.
//!
//! A *log parser* turns the console output of a test run into a map from test name to
//! [`TestStatus`]. bench ships one built-in parser per common test framework (see
//! [`builtin_parser_names`] and [`parse_log`]); datasets such as SWE-bench-Live MultiLang
//! instead ship a Python `parser(log)` function, which [`run_script_parser`] executes in an
//! isolated subprocess. This module only declares the submodules and re-exports their API;
//! each submodule documents the log format it reads and how it names tests.

mod cargo;
mod common;
mod ctest;
mod dotnet;
mod go;
mod jest;
mod junit_xml;
mod maven;
mod node_test;
mod pytest;
mod registry;
pub(crate) use registry::in_pieces;
mod script;
pub mod swebench;
mod tap;
mod unittest;
mod versions;
mod vitest;

#[cfg(test)]
mod tests;

pub use common::{
    Statuses, TestStatus, normalize_live_status, statuses_to_json, write_statuses_json,
};
pub use registry::{
    ParserError, ReadLogError, builtin_parser_names, parse_log, parse_log_stream, write_log_json,
};
pub use script::{ScriptError, ScriptLimits, run_script_parser};
pub use versions::{SCRIPT_RUNNER_VERSION, is_builtin, parser_ref_name, parser_version};
