//! The manifest's JSON Schema, generated from the serde types (`bench schema`, and the checked-in
//! `schemas/manifest.schema.json` that TOML editors use for completion).

use super::types::ManifestFile;

/// The schema as a JSON value.
pub fn manifest_schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<ManifestFile>();
    schema.to_value()
}

/// The schema as pretty JSON text with a trailing newline (the checked-in file's content).
pub fn manifest_schema_text() -> String {
    let mut text =
        serde_json::to_string_pretty(&manifest_schema()).expect("a schema serializes as JSON");
    text.push('\n');
    text
}
