//! The readers on what the real CLIs wrote: `tests/fixtures/trajectories/` holds stored
//! trajectories recorded by the real-CLI tests (see its README), one per harness.

use std::collections::BTreeMap;

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trajectories")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn plain_output_is_one_text_message() {
    let t = parse(b"===== worker: fixer =====\nfixed it\n", &BTreeMap::new());
    assert_eq!(t.runs.len(), 1);
    assert_eq!(t.runs[0].format, "text");
    assert_eq!(t.runs[0].steps[0].text.as_deref(), Some("fixed it\n"));
}
