//! CLI examples with their output, checked by trycmd: each `tests/cli/NAME.toml` runs the real
//! binary (in `NAME.in/` when it exists) and compares stdout and stderr with `NAME.stdout` and
//! `NAME.stderr`. The book shows these files (docs/cli.md includes them), so its examples are
//! what bench prints. `TRYCMD=overwrite cargo nextest run --test cli` rewrites them after an
//! intended change. Beside them, outputs that need an applied store first (the report's
//! `plan --explain` reason).

#[test]
fn cli_examples() {
    trycmd::TestCases::new()
        .register_bin("bench", std::path::Path::new(env!("CARGO_BIN_EXE_bench")))
        .case("tests/cli/*.toml");
}

mod common;

/// Issue 49, item 9: the report node's `plan --explain` reason names what changed in its inputs
/// (`inputs: filters[0].seed 7 -> 8`), not the whole list as JSON cut off at 80 characters;
/// removing a team names the pairs that left.
#[test]
fn the_report_s_explain_reason_names_the_changed_input() {
    let sb = common::Sandbox::quickstart();
    let o = sb.bench(&["apply", "quickstart.toml"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let report_reasons = |sb: &common::Sandbox| -> Vec<String> {
        let o = sb.bench(&["plan", "--explain", "quickstart.toml"]);
        let out = common::stdout(&o);
        out.lines()
            .skip_while(|l| l.trim() != "+ report")
            .skip(1)
            .take_while(|l| l.starts_with("      "))
            .map(|l| l.trim().to_string())
            .collect()
    };
    sb.edit("quickstart.toml", "seed = 7", "seed = 8");
    assert_eq!(report_reasons(&sb), vec!["inputs: filters[0].seed 7 -> 8"]);
    sb.edit("quickstart.toml", "seed = 8", "seed = 7");
    sb.edit(
        "quickstart.toml",
        "teams = [\"oracle\", \"nop\", \"fixer\"]",
        "teams = [\"oracle\", \"nop\"]",
    );
    let reasons = report_reasons(&sb);
    assert!(
        reasons.contains(&"inputs: pairs[quickstart__roman-1 fixer] removed".to_string()),
        "{reasons:#?}"
    );
    assert!(
        reasons
            .iter()
            .all(|r| !r.contains("[{") && !r.contains("{\"")),
        "{reasons:#?}"
    );
}
