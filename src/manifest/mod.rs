//! Manifests: reading TOML (with `extends`), checking structure against the schema, validating
//! meaning, and the model the rest of bench uses.

mod check;
mod diagnostic;
mod model;
pub mod presets;
mod read;
mod schema;
mod tree;
mod types;
mod validate;

pub use diagnostic::{ManifestError, RenderedDiag};
pub use model::*;
pub use read::MAX_MANIFEST_BYTES;
pub use schema::{manifest_schema, manifest_schema_text};
pub use tree::MAX_EXTENDS_DEPTH;
pub use validate::{load, load_trusting, parse_duration};
