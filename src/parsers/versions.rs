//! The implementation version of each built-in parser, part of the keys of the grades it
//! serves. Bump a parser's version whenever its output on any log changes; the golden test
//! (`tests/implementations.rs`) fails when the output on its fixtures changes and the version
//! does not.

/// Versions by built-in parser name. A name missing here is version 1.
const VERSIONS: &[(&str, u32)] = &[
    ("cargo", 1),
    ("cargo-json", 1),
    ("ctest", 1),
    ("dotnet", 1),
    ("go", 1),
    ("go-json", 1),
    ("jest", 1),
    ("junit-xml", 2),
    ("maven", 1),
    ("node-test", 2),
    ("pytest", 2),
    ("pytest-swebench", 2),
    ("swebench-ant", 1),
    ("swebench-bpmn-js", 1),
    ("swebench-calypso", 1),
    ("swebench-carbon", 1),
    ("swebench-cargo", 1),
    ("swebench-chart-js", 1),
    ("swebench-cucumber", 1),
    ("swebench-django", 1),
    ("swebench-doctest", 1),
    ("swebench-eslint", 1),
    ("swebench-googletest", 1),
    ("swebench-gotest", 1),
    ("swebench-gradle-custom", 1),
    ("swebench-grommet", 1),
    ("swebench-highlightjs", 1),
    ("swebench-jest", 1),
    ("swebench-jest-json", 1),
    ("swebench-jq", 1),
    ("swebench-karma", 1),
    ("swebench-lighthouse-json", 1),
    ("swebench-lighthouse-mocha", 1),
    ("swebench-marked", 1),
    ("swebench-matplotlib", 1),
    ("swebench-maven", 1),
    ("swebench-micropython-test", 1),
    ("swebench-minitest", 1),
    ("swebench-next-v1", 1),
    ("swebench-next-v2", 1),
    ("swebench-openlayers", 1),
    ("swebench-p5js", 1),
    ("swebench-phpunit", 1),
    ("swebench-prismjs", 1),
    ("swebench-pytest", 1),
    ("swebench-pytest-options", 1),
    ("swebench-pytest-v2", 1),
    ("swebench-quarto-cli", 1),
    ("swebench-react-pdf", 1),
    ("swebench-redis", 1),
    ("swebench-rspec-transformed-json", 1),
    ("swebench-ruby-unit", 1),
    ("swebench-seaborn", 1),
    ("swebench-sympy", 1),
    ("swebench-tap", 1),
    ("swebench-vitest", 1),
    ("tap", 3),
    ("unittest", 3),
    ("vitest", 3),
];

/// The version of the runner of datasets' Python parser scripts (`script.rs`: the wrapper, the
/// limits and the status rule). The script itself is part of the task.
pub const SCRIPT_RUNNER_VERSION: u32 = 1;

/// Whether `log_parser` names a built-in parser (else it is Python source).
pub fn is_builtin(log_parser: &str) -> bool {
    let t = log_parser.trim();
    !t.contains('\n') && !t.contains("def ")
}

/// The parser's name as keys hold it: the built-in name, or `script`.
pub fn parser_ref_name(log_parser: &str) -> &str {
    if is_builtin(log_parser) {
        log_parser.trim()
    } else {
        "script"
    }
}

/// The implementation version serving `log_parser`.
pub fn parser_version(log_parser: &str) -> u32 {
    if !is_builtin(log_parser) {
        return SCRIPT_RUNNER_VERSION;
    }
    let name = log_parser.trim();
    VERSIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(1, |(_, v)| *v)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_builtin_parser_has_a_version() {
        for name in super::super::builtin_parser_names() {
            assert!(
                super::VERSIONS.iter().any(|(n, _)| n == name),
                "parser `{name}` has no entry in parsers/versions.rs"
            );
        }
    }
}
