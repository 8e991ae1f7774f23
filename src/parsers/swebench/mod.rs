//! The official SWE-bench harness's log parsers (`swebench.harness.log_parsers`, 5.0.2), ported
//! with their quirks: each returns the upstream status map, test name -> the raw status word
//! the parser recorded (`PASSED`, `FAILED`, `SKIPPED`, `ERROR`, `XFAIL`, or whatever word a
//! line started with), because SWE-bench's verdict rules tell these words apart (an `ERROR` is
//! a failure but not under FAIL_ONLY grading; a `SKIPPED` FAIL_TO_PASS test fails while a
//! `SKIPPED` PASS_TO_PASS test is maintained). The swe-bench protocol grades on that map; as
//! bench parsers (`bench parse-log`, other protocols) the words map onto [`TestStatus`]:
//! `PASSED`/`XFAIL` pass, `FAILED`/`ERROR` fail, anything else skip.
//!
//! Not here: the verdict rules (`protocols/swe_bench/grading.rs`), log cleaning (upstream
//! parses the raw log, so the protocol does too; the registry cleans for `parse-log`).

mod c;
mod java;
mod javascript;
mod mocha_json;
mod multilang;
mod multimodal;
mod php;
mod python;
mod ruby;
mod xml_blocks;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::sync::OnceLock;

use regex::Regex;

use super::common::{Collector, TestStatus, lines, space_parens_back};

/// Test name -> the status word upstream's parser recorded: a Python dict's semantics (a later
/// status replaces an earlier one and keeps the name's first position; iteration in insertion
/// order, which upstream's truncated-id prefix match depends on).
///
/// A log names hundreds of thousands of tests, each line's name looked up here: a new name is
/// copied once, back to back with the others in one arena string (no allocation per name),
/// the table holds indices hashed with foldhash (not SipHash), and upstream's status words are
/// kept without a copy.
#[derive(Clone, Default)]
pub struct RawStatuses {
    arena: String,
    entries: Vec<RawEntry>,
    index: hashbrown::HashTable<usize>,
    hasher: foldhash::fast::FixedState,
}

#[derive(Clone)]
struct RawEntry {
    start: usize,
    len: usize,
    word: Cow<'static, str>,
}

/// `word` as a static string when it is one of upstream's status words (nearly always).
fn status_word(word: impl AsRef<str> + Into<String>) -> Cow<'static, str> {
    match word.as_ref() {
        "PASSED" => Cow::Borrowed("PASSED"),
        "FAILED" => Cow::Borrowed("FAILED"),
        "SKIPPED" => Cow::Borrowed("SKIPPED"),
        "ERROR" => Cow::Borrowed("ERROR"),
        "XFAIL" => Cow::Borrowed("XFAIL"),
        _ => Cow::Owned(word.into()),
    }
}

impl RawStatuses {
    pub fn new() -> RawStatuses {
        RawStatuses::default()
    }

    /// An empty map for a log of `bytes` bytes read whole: its table sized for a name per 64
    /// bytes and its arena for names as long as the log (reserved, not touched), so a big
    /// log's map is not regrown (copied into fresh pages) as it fills.
    pub fn for_log(bytes: usize) -> RawStatuses {
        let names = (bytes / 64).min(1 << 20);
        let mut map = RawStatuses {
            index: hashbrown::HashTable::with_capacity(names),
            entries: Vec::with_capacity(names),
            ..RawStatuses::default()
        };
        map.arena.reserve(bytes);
        map
    }

    fn name(&self, i: usize) -> &str {
        let e = &self.entries[i];
        &self.arena[e.start..e.start + e.len]
    }

    fn position(&self, name: &str) -> Option<usize> {
        let hash = self.hasher.hash_one(name);
        self.index.find(hash, |&i| self.name(i) == name).copied()
    }

    /// Records `word` for `name` (a later word replaces an earlier one and keeps the name's
    /// position). One probe of the index finds the name or the slot a new name takes.
    pub fn insert(&mut self, name: impl AsRef<str>, word: impl AsRef<str> + Into<String>) {
        let name = name.as_ref();
        let word = status_word(word);
        let hash = self.hasher.hash_one(name);
        let RawStatuses {
            arena,
            entries,
            index,
            hasher,
        } = self;
        let at = |i: usize| {
            let e: &RawEntry = &entries[i];
            &arena[e.start..e.start + e.len]
        };
        match index.entry(hash, |&i| at(i) == name, |&i| hasher.hash_one(at(i))) {
            hashbrown::hash_table::Entry::Occupied(found) => {
                let i = *found.get();
                entries[i].word = word;
            }
            hashbrown::hash_table::Entry::Vacant(slot) => {
                entries.push(RawEntry {
                    start: arena.len(),
                    len: name.len(),
                    word,
                });
                arena.push_str(name);
                slot.insert(entries.len() - 1);
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.position(name).map(|i| self.entries[i].word.as_ref())
    }

    /// The stored key equal to `name`.
    pub fn key(&self, name: &str) -> Option<&str> {
        self.position(name).map(|i| self.name(i))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// In insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        (0..self.entries.len()).map(|i| (self.name(i), self.entries[i].word.as_ref()))
    }

    /// Sorted by name (what is stored and printed).
    pub fn to_btree(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(n, w)| (n.to_string(), w.to_string()))
            .collect()
    }
}

impl std::fmt::Debug for RawStatuses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Equal when the same names hold the same words in the same order (the index follows).
impl PartialEq for RawStatuses {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl PartialEq<BTreeMap<String, String>> for RawStatuses {
    fn eq(&self, other: &BTreeMap<String, String>) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(n, w)| other.get(n).map(String::as_str) == Some(w))
    }
}

/// A parser of upstream's table.
pub type RawParseFn = fn(&str) -> RawStatuses;

/// bench's name, upstream's function name, the parser. Sorted by bench name.
const TABLE: &[(&str, &str, RawParseFn)] = &[
    ("swebench-ant", "parse_log_ant", java::ant),
    ("swebench-bpmn-js", "parse_log_bpmn_js", multimodal::bpmn_js),
    ("swebench-calypso", "parse_log_calypso", multimodal::calypso),
    ("swebench-carbon", "parse_log_carbon", multimodal::carbon),
    ("swebench-cargo", "parse_log_cargo", multilang::cargo),
    (
        "swebench-chart-js",
        "parse_log_chart_js",
        multimodal::chart_js,
    ),
    ("swebench-cucumber", "parse_log_cucumber", ruby::cucumber),
    ("swebench-django", "parse_log_django", python::django),
    ("swebench-doctest", "parse_log_doctest", c::doctest),
    ("swebench-eslint", "parse_log_eslint", multimodal::eslint),
    ("swebench-googletest", "parse_log_googletest", c::googletest),
    ("swebench-gotest", "parse_log_gotest", multilang::gotest),
    (
        "swebench-gradle-custom",
        "parse_log_gradle_custom",
        java::gradle_custom,
    ),
    ("swebench-grommet", "parse_log_grommet", multimodal::grommet),
    (
        "swebench-highlightjs",
        "parse_log_highlightjs",
        multimodal::highlightjs,
    ),
    ("swebench-jest", "parse_log_jest", javascript::jest),
    (
        "swebench-jest-json",
        "parse_log_jest_json",
        javascript::jest_json,
    ),
    ("swebench-jq", "parse_log_jq", c::jq),
    ("swebench-karma", "parse_log_karma", javascript::karma),
    ("swebench-marked", "parse_log_marked", multimodal::marked),
    (
        "swebench-matplotlib",
        "parse_log_matplotlib",
        python::matplotlib,
    ),
    ("swebench-maven", "parse_log_maven", java::maven),
    (
        "swebench-micropython-test",
        "parse_log_micropython_test",
        c::micropython_test,
    ),
    ("swebench-minitest", "parse_log_minitest", ruby::minitest),
    (
        "swebench-openlayers",
        "parse_log_openlayers",
        multimodal::openlayers,
    ),
    ("swebench-p5js", "parse_log_p5js", multimodal::p5js),
    ("swebench-phpunit", "parse_log_phpunit", php::phpunit),
    ("swebench-prismjs", "parse_log_prismjs", multimodal::prismjs),
    ("swebench-pytest", "parse_log_pytest", python::pytest),
    (
        "swebench-pytest-options",
        "parse_log_pytest_options",
        python::pytest_options,
    ),
    (
        "swebench-pytest-v2",
        "parse_log_pytest_v2",
        python::pytest_v2,
    ),
    (
        "swebench-quarto-cli",
        "parse_log_quarto_cli",
        multimodal::quarto_cli,
    ),
    (
        "swebench-react-pdf",
        "parse_log_react_pdf",
        multimodal::react_pdf,
    ),
    ("swebench-redis", "parse_log_redis", c::redis),
    (
        "swebench-rspec-transformed-json",
        "parse_log_rspec_transformed_json",
        ruby::rspec_transformed_json,
    ),
    ("swebench-ruby-unit", "parse_log_ruby_unit", ruby::ruby_unit),
    ("swebench-seaborn", "parse_log_seaborn", python::seaborn),
    ("swebench-sympy", "parse_log_sympy", python::sympy),
    ("swebench-tap", "parse_log_tap", javascript::tap),
    ("swebench-vitest", "parse_log_vitest", javascript::vitest),
];

/// A per-instance choice: the parser for an instance id, if upstream knows one.
type PickFn = fn(&str) -> Option<&'static str>;

/// Upstream's parsers that pick another parser by the instance (`test_spec.instance_id`):
/// bench's name, upstream's name, the choice (`None`: upstream raises `ValueError: Unknown
/// instance id`). They are resolved when a row is read, so a task names a real parser.
const DISPATCH: &[(&str, &str, PickFn)] = &[
    (
        "swebench-immutable-js",
        "parse_log_immutable_js",
        javascript::immutable_js,
    ),
    ("swebench-jekyll", "parse_log_jekyll", ruby::jekyll),
];

/// The functions upstream's `parse_log_next` and `parse_log_lighthouse` pick by the row's
/// `version`: bench's name, upstream's dispatcher, a version that picks it, the parser. They are
/// resolved when a row is read ([`for_version`]), so a task names a real parser.
const BY_VERSION: &[(&str, &str, &str, RawParseFn)] = &[
    (
        "swebench-lighthouse-json",
        "parse_log_lighthouse",
        "2.0",
        multimodal::lighthouse_json,
    ),
    (
        "swebench-lighthouse-mocha",
        "parse_log_lighthouse",
        "9.5",
        multimodal::lighthouse_mocha,
    ),
    (
        "swebench-next-v1",
        "parse_log_next",
        "1.0",
        multimodal::next_v1,
    ),
    (
        "swebench-next-v2",
        "parse_log_next",
        "1.27",
        multimodal::next_v2,
    ),
];

/// bench's parser for a row whose `log_parser` is upstream's by-version dispatcher `upstream`
/// at `version` (`None`: `upstream` is not one; `Err`: upstream raises for this version).
pub fn for_version(upstream: &str, version: &str) -> Option<Result<&'static str, String>> {
    match upstream {
        "parse_log_next" => Some(Ok(if version == "1.27" {
            "swebench-next-v2"
        } else {
            "swebench-next-v1"
        })),
        "parse_log_lighthouse" => Some(if ["9.5", "10.0", "10.2"].contains(&version) {
            Ok("swebench-lighthouse-mocha")
        } else {
            match version.trim().parse::<f64>() {
                Ok(v) if v >= 3.0 => Ok("swebench-carbon"),
                Ok(_) => Ok("swebench-lighthouse-json"),
                Err(_) => Err(format!(
                    "upstream's parse_log_lighthouse reads the version as a number and raises on {version:?}"
                )),
            }
        }),
        _ => None,
    }
}

/// A version for which upstream's dispatcher picks bench's parser `name` (for tests).
pub fn version_picking(name: &str) -> Option<&'static str> {
    BY_VERSION.iter().find(|t| t.0 == name).map(|t| t.2)
}

/// Upstream's other names for the same functions (`parse_log_flask = parse_log_pytest`, ...),
/// as SWE-rebench's `install_config.log_parser` may name them.
const UPSTREAM_ALIASES: &[(&str, &str)] = &[
    ("parse_log_astroid", "swebench-pytest"),
    ("parse_log_astropy", "swebench-pytest-v2"),
    ("parse_log_flask", "swebench-pytest"),
    ("parse_log_marshmallow", "swebench-pytest"),
    ("parse_log_pydicom", "swebench-pytest-options"),
    ("parse_log_pylint", "swebench-pytest-options"),
    ("parse_log_pvlib", "swebench-pytest"),
    ("parse_log_pyvista", "swebench-pytest"),
    ("parse_log_requests", "swebench-pytest-options"),
    ("parse_log_scikit", "swebench-pytest-v2"),
    ("parse_log_sphinx", "swebench-pytest-v2"),
    ("parse_log_sqlfluff", "swebench-pytest"),
    ("parse_log_xarray", "swebench-pytest"),
];

/// The upstream-compatible parser called `name` (bench's name).
pub fn raw_parser(name: &str) -> Option<RawParseFn> {
    TABLE
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|t| t.2)
        .or_else(|| BY_VERSION.iter().find(|t| t.0 == name).map(|t| t.3))
}

/// bench's name of upstream's parser function `upstream` (`parse_log_pytest` ->
/// `swebench-pytest`; aliases included).
pub fn from_upstream(upstream: &str) -> Option<&'static str> {
    TABLE
        .iter()
        .find(|(_, u, _)| *u == upstream)
        .map(|t| t.0)
        .or_else(|| {
            UPSTREAM_ALIASES
                .iter()
                .find(|(u, _)| *u == upstream)
                .map(|t| t.1)
        })
        .or_else(|| {
            DISPATCH
                .iter()
                .find(|(_, u, _)| *u == upstream)
                .map(|t| t.0)
        })
}

/// The parser that grades `instance_id` when its repository's parser is `name` (bench's
/// name): `name` itself, or for a per-instance parser of upstream (`swebench-jekyll`,
/// `swebench-immutable-js`) the one it picks for this instance. `Err`: a per-instance parser
/// that knows no parser for this instance (upstream raises), with the reason.
pub fn for_instance(name: &str, instance_id: &str) -> Result<String, String> {
    match DISPATCH.iter().find(|(n, _, _)| *n == name) {
        None => Ok(name.to_string()),
        Some((_, upstream, pick)) => pick(instance_id).map(str::to_string).ok_or_else(|| {
            format!(
                "upstream's {upstream} picks a parser by the instance's PR number and knows none for `{instance_id}` (it raises `ValueError: Unknown instance id`)"
            )
        }),
    }
}

/// Whether `name` is a per-instance parser left unresolved (see [`for_instance`]).
pub fn is_dispatch(name: &str) -> bool {
    DISPATCH.iter().any(|(n, _, _)| *n == name)
}

/// Upstream's function name of bench's parser `name`.
pub fn upstream_name(name: &str) -> Option<&'static str> {
    TABLE
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|t| t.1)
        .or_else(|| DISPATCH.iter().find(|(n, _, _)| *n == name).map(|t| t.1))
        .or_else(|| BY_VERSION.iter().find(|t| t.0 == name).map(|t| t.1))
}

/// Every upstream function name bench maps (for error messages).
pub fn upstream_names() -> Vec<&'static str> {
    let mut v: Vec<&str> = TABLE
        .iter()
        .map(|t| t.1)
        .chain(UPSTREAM_ALIASES.iter().map(|t| t.0))
        .chain(DISPATCH.iter().map(|t| t.1))
        .chain(BY_VERSION.iter().map(|t| t.1))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// How a raw status word counts as a bench status.
pub fn to_status(word: &str) -> TestStatus {
    match word {
        "PASSED" | "XFAIL" => TestStatus::Pass,
        "FAILED" | "ERROR" => TestStatus::Fail,
        _ => TestStatus::Skip,
    }
}

fn record(parse: RawParseFn, log: &str, out: &mut Collector) {
    for (name, word) in parse(log).iter() {
        out.record(name, to_status(word));
    }
}

/// Where a line-local parser puts each (name, status word) it reads: upstream's map, or
/// bench's collector (`bench parse-log`, which reads such a log in pieces on every core; the
/// last status of a name wins either way, and the collector drops empty names as [`record`]
/// does).
pub(crate) trait Sink {
    fn put(&mut self, name: &str, word: &str);
}

impl Sink for RawStatuses {
    fn put(&mut self, name: &str, word: &str) {
        self.insert(name, word);
    }
}

impl Sink for Collector {
    fn put(&mut self, name: &str, word: &str) {
        self.record(name, to_status(word));
    }
}

/// Upstream's map of a line-local parser.
fn filled(log: &str, parse: impl FnOnce(&str, &mut RawStatuses)) -> RawStatuses {
    let mut map = RawStatuses::new();
    parse(log, &mut map);
    map
}

/// Each line of `log` (split on `\n` only, as upstream does), stripped, through `line`, a hand
/// matcher of upstream's pattern giving the status word and the name.
fn by_stripped_line<'a>(
    log: &'a str,
    map: &mut impl Sink,
    line: impl Fn(&'a str) -> Option<(&'static str, &'a str)>,
) {
    for l in lines(log) {
        if let Some((word, name)) = line(py_strip(l)) {
            map.put(name, word);
        }
    }
}

macro_rules! adapters {
    ($($m:ident :: $f:ident),* $(,)?) => {$(
        pub(crate) fn $f(log: &str, out: &mut Collector) {
            record(super::$m::$f, log, out)
        }
    )*};
}

/// Line-local parsers straight into the collector (the registry reads their logs in pieces).
macro_rules! line_adapters {
    ($($m:ident :: $into:ident => $f:ident),* $(,)?) => {$(
        pub(crate) fn $f(log: &str, out: &mut Collector) {
            super::$m::$into(log, out)
        }
    )*};
}

/// The parsers as bench parsers (the registry's entries).
pub(crate) mod bench {
    use super::{Collector, record};
    adapters!(
        multimodal::lighthouse_json,
        multimodal::lighthouse_mocha,
        multimodal::next_v1,
        multimodal::next_v2,
        multimodal::prismjs,
        multimodal::quarto_cli,
        multimodal::bpmn_js,
        multimodal::calypso,
        multimodal::chart_js,
        multimodal::eslint,
        multimodal::grommet,
        multimodal::highlightjs,
        multimodal::openlayers,
        multimodal::p5js,
        python::django,
        c::doctest,
        java::gradle_custom,
        javascript::karma,
        java::maven,
        php::phpunit,
        python::sympy,
    );
    line_adapters!(
        java::ant_into => ant,
        multilang::cargo_into => cargo,
        ruby::cucumber_into => cucumber,
        c::googletest_into => googletest,
        multilang::gotest_into => gotest,
        javascript::jest_into => jest,
        javascript::jest_json_into => jest_json,
        c::jq_into => jq,
        python::matplotlib_into => matplotlib,
        c::micropython_test_into => micropython_test,
        ruby::minitest_into => minitest,
        python::pytest_into => pytest,
        python::pytest_options_into => pytest_options,
        python::pytest_v2_into => pytest_v2,
        c::redis_into => redis,
        ruby::rspec_transformed_json_into => rspec_transformed_json,
        ruby::ruby_unit_into => ruby_unit,
        python::seaborn_into => seaborn,
        javascript::tap_into => tap,
        javascript::vitest_into => vitest,
        multimodal::carbon_into => carbon,
        multimodal::carbon_into => react_pdf,
        multimodal::marked_into => marked,
    );
    pub(crate) use super::multimodal::GROMMET_JOINS;

    /// grommet's two lists of a run of whole lines (its FAIL matches, then its PASS matches,
    /// which win): the registry reads its log in pieces cut after lines not of
    /// [`GROMMET_JOINS`].
    pub(crate) fn grommet_lines(log: &str, fails: &mut Collector, passes: &mut Collector) {
        super::multimodal::grommet_lines(log, fails, passes)
    }
}

/// A lazily compiled built-in pattern.
pub(crate) fn lazy(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("built-in pattern"))
}

/// Python's `str.split()` (no argument): runs of Python whitespace separate, none at the ends.
pub(crate) fn py_split(s: &str) -> impl Iterator<Item = &str> {
    s.split(py_space).filter(|p| !p.is_empty())
}

/// Python's `str.isspace` for one character (Unicode White_Space plus the ASCII separators
/// U+001C..U+001F).
pub(crate) fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()`.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(py_space)
}

/// The line after one leading whitespace character, when that leaves at least one character.
pub(crate) fn after_space(s: &str) -> Option<&str> {
    let mut chars = s.chars();
    chars.next().filter(|c| c.is_whitespace())?;
    Some(chars.as_str()).filter(|r| !r.is_empty())
}

/// The name of `(.+?)(?:\s\((\d+\s*m?s)\))?$` on `rest` (group 1): `rest` less a final
/// ` (N ms)` when that leaves at least one character; `None` when the text after the last `(`
/// is not ASCII (its `\d` or `\s` may be Unicode: the caller asks the regex).
pub(crate) fn before_duration(rest: &str) -> Option<&str> {
    before_duration_by(rest, is_duration)
}

/// [`before_duration`] with the duration's own pattern: `is_duration` is given the ASCII text
/// after the last `(`, its `)` included, and says whether all of it is a duration.
pub(crate) fn before_duration_by(rest: &str, is_duration: impl Fn(&str) -> bool) -> Option<&str> {
    let Some(open) = rest.rfind('(') else {
        return Some(rest);
    };
    let duration = &rest[open + 1..];
    if !duration.is_ascii() {
        return None;
    }
    // The group's `(` is the last one (its duration holds none): it is the suffix if a
    // whitespace character precedes it, a name of at least one character precedes that, and
    // an ASCII duration follows.
    let name = rest[..open]
        .char_indices()
        .next_back()
        .filter(|&(i, c)| i > 0 && c.is_whitespace())
        .map(|(i, _)| &rest[..i]);
    Some(match name {
        Some(name) if is_duration(duration) => name,
        _ => rest,
    })
}

/// `\d+\s*m?s\)` matching all of an ASCII `s`.
fn is_duration(s: &str) -> bool {
    let Some(s) = s.strip_suffix(')') else {
        return false;
    };
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let s = s[digits..].trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b');
    digits > 0 && (s == "s" || s == "ms")
}

/// A parser's expected map from (test, status) pairs (the parsers' unit tests).
#[cfg(test)]
fn test_map(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A seeded xorshift generator: each call gives a number below its argument (the parsers'
/// generated test inputs; the same seed, the same inputs).
#[cfg(test)]
pub(crate) fn xorshift(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed | 1;
    move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    }
}

/// Pseudo-random lines glued from `pieces` (up to eight each, a fixed seed): adversarial input
/// for the parsers' hand matchers, which their unit tests hold against the regexes they replace.
#[cfg(test)]
pub(crate) fn glued_lines(pieces: &[&str], count: usize) -> Vec<String> {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    (0..count)
        .map(|_| (0..next(9)).map(|_| pieces[next(pieces.len())]).collect())
        .collect()
}

/// Holds a hand matcher to its regex on every one of `lines`: `hand(line)` must equal
/// `regex(line)`, both on the line as `prepare` makes it (upstream's stripping, or the line
/// as it is). Returns how many lines the regex matched.
#[cfg(test)]
pub(crate) fn assert_hand_matches_regex<'a, T: PartialEq + std::fmt::Debug>(
    lines: &'a [String],
    prepare: impl Fn(&'a str) -> &'a str,
    regex: impl Fn(&'a str) -> Option<T>,
    hand: impl Fn(&'a str) -> Option<T>,
) -> usize {
    let mut matched = 0;
    for line in lines {
        let prepared = prepare(line);
        let want = regex(prepared);
        matched += usize::from(want.is_some());
        assert_eq!(hand(prepared), want, "{line:?}");
    }
    matched
}

/// What a hand matcher's unit test holds it to its regex on: every line of every fixture log,
/// then `count` adversarial lines, each a start, up to eight glued `pieces` and an end.
#[cfg(test)]
pub(crate) fn hand_matcher_lines(
    starts: &[&str],
    pieces: &[&str],
    ends: &[&str],
    count: usize,
) -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
    let mut lines: Vec<String> = Vec::new();
    let mut logs: Vec<std::path::PathBuf> = fs_err::read_dir(root)
        .expect("fixtures")
        .flatten()
        .flat_map(|dir| fs_err::read_dir(dir.path()).into_iter().flatten().flatten())
        .map(|f| f.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    for log in logs {
        let text = String::from_utf8_lossy(&fs_err::read(&log).expect("log")).into_owned();
        lines.extend(text.split('\n').map(String::from));
    }
    let middles = glued_lines(pieces, count);
    for (i, middle) in middles.into_iter().enumerate() {
        let (start, end) = (
            starts[i % starts.len()],
            ends[i / starts.len() % ends.len()],
        );
        lines.push(format!("{start}{middle}{end}"));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_both_ways() {
        for (name, upstream, _) in TABLE {
            assert_eq!(from_upstream(upstream), Some(*name));
            assert_eq!(upstream_name(name), Some(*upstream));
        }
        assert_eq!(from_upstream("parse_log_flask"), Some("swebench-pytest"));
        assert_eq!(from_upstream("parse_log_nope"), None);
        assert_eq!(from_upstream("parse_log_jekyll"), Some("swebench-jekyll"));
        assert_eq!(
            for_instance("swebench-jekyll", "jekyll__jekyll-8047").as_deref(),
            Ok("swebench-minitest")
        );
        assert!(
            for_instance("swebench-immutable-js", "immutable-js__immutable-js-9")
                .unwrap_err()
                .contains("parse_log_immutable_js")
        );
        assert_eq!(
            for_instance("swebench-tap", "x__y-1").as_deref(),
            Ok("swebench-tap")
        );
        let names: Vec<&str> = TABLE.iter().map(|t| t.0).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    #[test]
    fn python_split_and_strip() {
        assert_eq!(
            py_split(" a\tb\u{1f}c  ").collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert_eq!(py_strip("\u{1c} x \n"), "x");
    }
}
