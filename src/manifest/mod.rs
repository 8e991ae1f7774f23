//! Manifests: reading TOML (with `extends`), checking structure against the schema, validating
//! meaning, and the model the rest of bench uses.

mod check;
mod diagnostic;
mod model;
mod schema;
mod tree;
mod types;
mod validate;

pub use diagnostic::{ManifestError, RenderedDiag};
pub use model::*;
pub use schema::{manifest_schema, manifest_schema_text};
pub use validate::{load, parse_duration};
