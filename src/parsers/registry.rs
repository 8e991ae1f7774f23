//! The table of built-in parsers: name lookup, the [`parse_log`] entry point, and the
//! "did you mean" suggestion for unknown names.

use super::common::{Collector, Statuses, clean_log};
use super::{cargo, ctest, dotnet, go, jest, junit_xml, maven, pytest, tap, unittest, vitest};

/// Errors returned by [`parse_log`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParserError {
    /// No built-in parser has this name.
    #[error("unknown log parser `{name}`{}", did_you_mean(.suggestion))]
    Unknown {
        /// The name that was asked for.
        name: String,
        /// The closest built-in name, if one is close enough.
        suggestion: Option<String>,
    },
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::new(),
    }
}

type ParseFn = fn(&str, &mut Collector);

/// Sorted by name; [`builtin_parser_names`] is derived from it.
const PARSERS: &[(&str, ParseFn)] = &[
    ("cargo", cargo::parse_human),
    ("cargo-json", cargo::parse_json),
    ("ctest", ctest::parse),
    ("dotnet", dotnet::parse),
    ("go", go::parse_verbose),
    ("go-json", go::parse_json),
    ("jest", jest::parse),
    ("junit-xml", junit_xml::parse),
    ("maven", maven::parse),
    ("pytest", pytest::parse_live),
    ("pytest-swebench", pytest::parse_swebench),
    ("tap", tap::parse),
    ("unittest", unittest::parse),
    ("vitest", vitest::parse),
];

const NAMES: &[&str] = &[
    "cargo",
    "cargo-json",
    "ctest",
    "dotnet",
    "go",
    "go-json",
    "jest",
    "junit-xml",
    "maven",
    "pytest",
    "pytest-swebench",
    "tap",
    "unittest",
    "vitest",
];

/// Other names people are likely to type, mapped to the parser to suggest. Only used for
/// the suggestion in [`ParserError::Unknown`]; they are not accepted as parser names.
const ALIASES: &[(&str, &str)] = &[
    ("django", "unittest"),
    ("golang", "go"),
    ("gotest", "go"),
    ("junit", "junit-xml"),
    ("xml", "junit-xml"),
    ("surefire", "maven"),
    ("mvn", "maven"),
    ("rust", "cargo"),
    ("libtest", "cargo"),
    ("node", "tap"),
    ("node-test", "tap"),
    ("nunit", "dotnet"),
    ("xunit", "dotnet"),
    ("mstest", "dotnet"),
    ("cmake", "ctest"),
    ("python", "pytest"),
    ("swebench", "pytest-swebench"),
];

/// Names of the built-in parsers, sorted.
pub fn builtin_parser_names() -> &'static [&'static str] {
    NAMES
}

/// Parses `log` with the built-in parser called `parser`.
///
/// The log is first cleaned: ANSI escape sequences and every `\r` are removed. Each parser
/// then maps the framework's statuses onto [`TestStatus`] (see the parser's module docs for
/// its format, naming rule and mapping). When the same test name occurs several times, **the
/// last occurrence wins**. Every rendering of the result is sorted by name. An unrecognised log is not an error:
/// it yields an empty map.
pub fn parse_log(parser: &str, log: &str) -> Result<Statuses, ParserError> {
    let Some(&(_, parse)) = PARSERS.iter().find(|(name, _)| *name == parser) else {
        return Err(ParserError::Unknown {
            name: parser.to_owned(),
            suggestion: suggest(parser).map(str::to_owned),
        });
    };
    let cleaned = clean_log(log);
    let mut collector = Collector::for_log(cleaned.len());
    parse(&cleaned, &mut collector);
    Ok(collector.finish())
}

/// The built-in name closest to `name`, if any is close enough to be a plausible typo.
fn suggest(name: &str) -> Option<&'static str> {
    let wanted = name.trim().to_lowercase().replace('_', "-");
    if let Some(exact) = NAMES.iter().find(|n| **n == wanted) {
        return Some(exact);
    }
    if let Some((_, target)) = ALIASES.iter().find(|(alias, _)| *alias == wanted) {
        return Some(target);
    }
    let (best, distance) = NAMES
        .iter()
        .map(|n| (*n, edit_distance(&wanted, n)))
        .min_by_key(|&(_, d)| d)?;
    let allowed = (wanted.chars().count() / 3).max(2);
    (distance <= allowed).then_some(best)
}

/// Optimal-string-alignment distance: insertions, deletions, substitutions and transpositions
/// of adjacent characters each cost 1 (so `pytset` is 1 away from `pytest`).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = v;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn table_and_names_agree_and_are_sorted() {
        let table: Vec<&str> = PARSERS.iter().map(|(n, _)| *n).collect();
        assert_eq!(table, NAMES);
        let mut sorted = NAMES.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, NAMES);
    }

    #[test]
    fn edit_distance_counts_transpositions_once() {
        assert_eq!(edit_distance("pytset", "pytest"), 1);
        assert_eq!(edit_distance("", "go"), 2);
        assert_eq!(edit_distance("go", "go"), 0);
        assert_eq!(edit_distance("cargo", "cargo-json"), 5);
    }
}
