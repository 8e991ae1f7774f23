//! CLI examples with their output, checked by trycmd: each `tests/cli/NAME.toml` runs the real
//! binary (in `NAME.in/` when it exists) and compares stdout and stderr with `NAME.stdout` and
//! `NAME.stderr`. The book shows these files (docs/cli.md includes them), so its examples are
//! what bench prints. `TRYCMD=overwrite cargo nextest run --test cli` rewrites them after an
//! intended change.

#[test]
fn cli_examples() {
    trycmd::TestCases::new()
        .register_bin("bench", std::path::Path::new(env!("CARGO_BIN_EXE_bench")))
        .case("tests/cli/*.toml");
}
