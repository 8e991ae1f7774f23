//! The table of built-in parsers: name lookup, the [`parse_log`] entry point (a log held in
//! memory), the [`parse_log_stream`] entry point (a log read in chunks, for the parsers whose
//! format allows it), and the "did you mean" suggestion for unknown names.

use std::borrow::Cow;
use std::io::Read;

use super::common::{Collector, Statuses, clean_log};
use super::swebench::bench as swebench;
use super::{
    cargo, ctest, dotnet, go, jest, junit_xml, maven, node_test, pytest, tap, unittest, vitest,
};

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

/// Errors returned by [`parse_log_stream`].
#[derive(Debug, thiserror::Error)]
pub enum ReadLogError {
    /// No built-in parser has this name.
    #[error(transparent)]
    Parser(#[from] ParserError),
    /// Reading the log failed.
    #[error("failed to read the log: {0}")]
    Io(#[source] std::io::Error),
    /// Writing the output failed ([`write_log_json`]).
    #[error("failed to write the statuses: {0}")]
    Write(#[source] std::io::Error),
}

type ParseFn = fn(&str, &mut Collector);

/// How much of the log a parser needs at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reads {
    /// Each line on its own: no state crosses a line break, so the log can be parsed in
    /// chunks that end at line breaks, with the same result as the whole log.
    Lines,
    /// The whole log (state across lines: a suite header, a status on a later line, XML).
    Whole,
    /// The whole log, uncleaned (the upstream-compatible SWE-bench parsers clean as upstream does).
    Raw,
    /// Each line on its own, uncleaned (the line-local upstream-compatible SWE-bench parsers).
    RawLines,
}

impl Reads {
    /// Whether the log can be parsed in chunks that end at line breaks.
    fn line_local(self) -> bool {
        matches!(self, Reads::Lines | Reads::RawLines)
    }

    /// Whether escape sequences and `\r` are removed before parsing.
    fn cleans(self) -> bool {
        matches!(self, Reads::Lines | Reads::Whole)
    }
}

/// Sorted by name; [`builtin_parser_names`] is derived from it.
const PARSERS: &[(&str, ParseFn, Reads)] = &[
    ("cargo", cargo::parse_human, Reads::Whole),
    ("cargo-json", cargo::parse_json, Reads::Whole),
    ("ctest", ctest::parse, Reads::Lines),
    ("dotnet", dotnet::parse, Reads::Lines),
    ("go", go::parse_verbose, Reads::Lines),
    ("go-json", go::parse_json, Reads::Lines),
    ("jest", jest::parse, Reads::Lines),
    ("junit-xml", junit_xml::parse, Reads::Whole),
    ("maven", maven::parse, Reads::Lines),
    ("node-test", node_test::parse, Reads::Whole),
    ("pytest", pytest::parse_live, Reads::Whole),
    ("pytest-swebench", pytest::parse_swebench, Reads::Whole),
    ("swebench-ant", swebench::ant, Reads::RawLines),
    ("swebench-bpmn-js", swebench::bpmn_js, Reads::Raw),
    ("swebench-calypso", swebench::calypso, Reads::Raw),
    ("swebench-carbon", swebench::carbon, Reads::RawLines),
    ("swebench-cargo", swebench::cargo, Reads::RawLines),
    ("swebench-chart-js", swebench::chart_js, Reads::Raw),
    ("swebench-cucumber", swebench::cucumber, Reads::RawLines),
    ("swebench-django", swebench::django, Reads::Raw),
    ("swebench-doctest", swebench::doctest, Reads::Raw),
    ("swebench-eslint", swebench::eslint, Reads::Raw),
    ("swebench-googletest", swebench::googletest, Reads::RawLines),
    ("swebench-gotest", swebench::gotest, Reads::RawLines),
    (
        "swebench-gradle-custom",
        swebench::gradle_custom,
        Reads::Raw,
    ),
    ("swebench-grommet", swebench::grommet, Reads::Raw),
    ("swebench-highlightjs", swebench::highlightjs, Reads::Raw),
    ("swebench-jest", swebench::jest, Reads::RawLines),
    ("swebench-jest-json", swebench::jest_json, Reads::RawLines),
    ("swebench-jq", swebench::jq, Reads::RawLines),
    ("swebench-karma", swebench::karma, Reads::Raw),
    (
        "swebench-lighthouse-json",
        swebench::lighthouse_json,
        Reads::Raw,
    ),
    (
        "swebench-lighthouse-mocha",
        swebench::lighthouse_mocha,
        Reads::Raw,
    ),
    ("swebench-marked", swebench::marked, Reads::RawLines),
    ("swebench-matplotlib", swebench::matplotlib, Reads::RawLines),
    ("swebench-maven", swebench::maven, Reads::Raw),
    (
        "swebench-micropython-test",
        swebench::micropython_test,
        Reads::RawLines,
    ),
    ("swebench-minitest", swebench::minitest, Reads::RawLines),
    ("swebench-next-v1", swebench::next_v1, Reads::Raw),
    ("swebench-next-v2", swebench::next_v2, Reads::Raw),
    ("swebench-openlayers", swebench::openlayers, Reads::Raw),
    ("swebench-p5js", swebench::p5js, Reads::Raw),
    ("swebench-phpunit", swebench::phpunit, Reads::Raw),
    ("swebench-prismjs", swebench::prismjs, Reads::Raw),
    ("swebench-pytest", swebench::pytest, Reads::RawLines),
    (
        "swebench-pytest-options",
        swebench::pytest_options,
        Reads::RawLines,
    ),
    ("swebench-pytest-v2", swebench::pytest_v2, Reads::RawLines),
    ("swebench-quarto-cli", swebench::quarto_cli, Reads::Raw),
    ("swebench-react-pdf", swebench::react_pdf, Reads::RawLines),
    ("swebench-redis", swebench::redis, Reads::RawLines),
    (
        "swebench-rspec-transformed-json",
        swebench::rspec_transformed_json,
        Reads::RawLines,
    ),
    ("swebench-ruby-unit", swebench::ruby_unit, Reads::RawLines),
    ("swebench-seaborn", swebench::seaborn, Reads::RawLines),
    ("swebench-sympy", swebench::sympy, Reads::Raw),
    ("swebench-tap", swebench::tap, Reads::RawLines),
    ("swebench-vitest", swebench::vitest, Reads::RawLines),
    ("tap", tap::parse, Reads::Lines),
    ("unittest", unittest::parse, Reads::Whole),
    ("vitest", vitest::parse, Reads::Whole),
];

/// A line parser into two lists: the names of the second win over the first's wherever they
/// are in the log (a pattern's matches, then another's, each over the whole log).
type TwoListsFn = fn(&str, &mut Collector, &mut Collector);

/// Parsers read whole by [`parse_log`] and [`parse_log_stream`] (a match may take the next
/// line as its name, and one pattern's matches win over another's wherever they are) that
/// [`write_log_json`] reads in pieces all the same: each piece of lines into two lists, merged
/// with every first list before every second one, and the log cut only after lines that are
/// none of the third field's (a line of those takes the next as its name).
const TWO_LISTS: &[(&str, TwoListsFn, &[&[u8]])] = &[(
    "swebench-grommet",
    swebench::grommet_lines,
    swebench::GROMMET_JOINS,
)];

/// Bytes read at a time by [`parse_log_stream`]: small enough to stay in cache, large enough
/// that a chunk holds thousands of lines.
const CHUNK: usize = 256 * 1024;

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
    "node-test",
    "pytest",
    "pytest-swebench",
    "swebench-ant",
    "swebench-bpmn-js",
    "swebench-calypso",
    "swebench-carbon",
    "swebench-cargo",
    "swebench-chart-js",
    "swebench-cucumber",
    "swebench-django",
    "swebench-doctest",
    "swebench-eslint",
    "swebench-googletest",
    "swebench-gotest",
    "swebench-gradle-custom",
    "swebench-grommet",
    "swebench-highlightjs",
    "swebench-jest",
    "swebench-jest-json",
    "swebench-jq",
    "swebench-karma",
    "swebench-lighthouse-json",
    "swebench-lighthouse-mocha",
    "swebench-marked",
    "swebench-matplotlib",
    "swebench-maven",
    "swebench-micropython-test",
    "swebench-minitest",
    "swebench-next-v1",
    "swebench-next-v2",
    "swebench-openlayers",
    "swebench-p5js",
    "swebench-phpunit",
    "swebench-prismjs",
    "swebench-pytest",
    "swebench-pytest-options",
    "swebench-pytest-v2",
    "swebench-quarto-cli",
    "swebench-react-pdf",
    "swebench-redis",
    "swebench-rspec-transformed-json",
    "swebench-ruby-unit",
    "swebench-seaborn",
    "swebench-sympy",
    "swebench-tap",
    "swebench-vitest",
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
    ("node", "node-test"),
    ("nodejs", "node-test"),
    ("node-tap", "tap"),
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
    let (parse, reads) = lookup(parser)?;
    let cleaned = if reads.cleans() {
        clean_log(log)
    } else {
        Cow::Borrowed(log)
    };
    let mut collector = Collector::for_log(cleaned.len());
    parse(&cleaned, &mut collector);
    Ok(collector.finish())
}

/// Parses the log that `reader` yields, with the same result as [`parse_log`] on the whole
/// log decoded as UTF-8 (invalid sequences replaced). `size_hint` is the log's expected length
/// (sizes the name table).
///
/// A line-local parser (pytest, go, tap, …) reads the log in chunks of a reused buffer that
/// end at line breaks, so a big log is never held whole: cleaning and UTF-8 decoding are
/// line-local too (no escape sequence or character spans a `\n`). Other parsers read the
/// whole log first.
pub fn parse_log_stream(
    parser: &str,
    reader: &mut dyn Read,
    size_hint: usize,
) -> Result<Statuses, ReadLogError> {
    let (parse, reads) = lookup(parser)?;
    match reads {
        Reads::Lines | Reads::RawLines => parse_chunks(parse, reads, reader, size_hint, CHUNK),
        Reads::Raw => {
            let mut bytes = Vec::with_capacity(size_hint.saturating_add(1));
            reader.read_to_end(&mut bytes).map_err(ReadLogError::Io)?;
            Ok(parse_log(parser, &decode(&bytes))?)
        }
        Reads::Whole => {
            let mut bytes = Vec::with_capacity(size_hint.saturating_add(1));
            reader.read_to_end(&mut bytes).map_err(ReadLogError::Io)?;
            let mut collector = Collector::for_log(bytes.len());
            parse_piece(parse, reads, &bytes, &mut collector);
            Ok(collector.finish())
        }
    }
}

/// Logs smaller than this are parsed on one thread by [`write_log_json`].
const PARALLEL_MIN: u64 = 4 << 20;

/// Parses the log file `file` (`size` bytes) with the built-in parser called `parser` and
/// writes the JSON of [`super::write_statuses_json`] to `out`: the bytes `parse_log_stream`
/// then `write_statuses_json` would write.
///
/// A big log read by a line-local parser is cut at line breaks into `pieces` (`None`: four
/// per core, see below), each read (positioned reads of the same file), parsed and sorted on
/// whichever thread takes it. The sorted pieces are merged as they are written; a name in
/// several pieces takes the status of the last, as in one pass.
pub fn write_log_json(
    parser: &str,
    file: &std::fs::File,
    size: u64,
    pieces: Option<usize>,
    out: &mut dyn std::io::Write,
) -> Result<(), ReadLogError> {
    let (parse, reads) = lookup(parser)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Asked for pieces (tests) they are cut whatever the size. Otherwise four per core of at
    // least 1 MiB each, taken by the threads as they finish (the pieces' work is uneven: a
    // pytest summary names every test again in the last tenth of the log).
    let pieces = match pieces {
        Some(p) => p.clamp(1, 64),
        None if threads < 2 || size < PARALLEL_MIN => 1,
        None => (threads * 4).min((size >> 20) as usize).clamp(2, 64),
    };
    let workers = threads.clamp(1, pieces);
    if let Some(&(_, parse, joins)) = TWO_LISTS.iter().find(|t| t.0 == parser) {
        let bounds = line_bounds(file, size, pieces, joins).map_err(ReadLogError::Io)?;
        let lists = in_pieces(pieces, workers, |i| {
            let (start, end) = (bounds[i], bounds[i + 1]);
            let mut first = Collector::for_piece((end - start) as usize);
            let mut second = Collector::for_piece((end - start) as usize);
            let mut each = |bytes: &[u8]| parse(&decode(bytes), &mut first, &mut second);
            read_lines(&mut FileAt::new(file, start, end), CHUNK, joins, &mut each)?;
            Ok::<_, ReadLogError>((first.finish(), second.finish()))
        })?;
        let (firsts, seconds): (Vec<Statuses>, Vec<Statuses>) = lists.into_iter().unzip();
        let parts: Vec<Statuses> = firsts.into_iter().chain(seconds).collect();
        return write_parts_json(&parts, workers, out);
    }
    if reads == Reads::Raw {
        return write_raw_json(parser, &mut FileAt::new(file, 0, size), size as usize, out);
    }
    if !reads.line_local() || pieces < 2 {
        let statuses = parse_log_stream(parser, &mut FileAt::new(file, 0, size), size as usize)?;
        return super::write_statuses_json(&statuses, out).map_err(ReadLogError::Write);
    }
    let bounds = line_bounds(file, size, pieces, &[]).map_err(ReadLogError::Io)?;
    let parts: Vec<Statuses> = in_pieces(pieces, workers, |i| {
        let (start, end) = (bounds[i], bounds[i + 1]);
        // A piece may name a test per short line (a summary): sized for that, so the name
        // table is not rehashed as it fills.
        let mut collector = Collector::for_piece((end - start) as usize);
        parse_into(
            parse,
            reads,
            &mut FileAt::new(file, start, end),
            CHUNK,
            &mut collector,
        )?;
        Ok::<_, ReadLogError>(collector.finish())
    })?;
    write_parts_json(&parts, workers, out)
}

/// Writes the JSON of `parts` (each a piece's names) merged: each sorted on the threads, then
/// merged as they are written (a name in several takes the status of the last).
fn write_parts_json(
    parts: &[Statuses],
    workers: usize,
    out: &mut dyn std::io::Write,
) -> Result<(), ReadLogError> {
    crate::timings::mark("log pieces parsed");
    let runs = in_pieces(parts.len(), workers, |i| {
        Ok::<_, ReadLogError>(parts[i].sorted())
    })?;
    crate::timings::mark("log pieces sorted");
    write_merged(&runs, workers, out)
}

/// [`write_log_json`] of an upstream-compatible parser read whole: upstream's map (each name
/// once) sorted and written as it is, with no second map of bench's statuses.
fn write_raw_json(
    parser: &str,
    reader: &mut dyn Read,
    size_hint: usize,
    out: &mut dyn std::io::Write,
) -> Result<(), ReadLogError> {
    let Some(parse) = super::swebench::raw_parser(parser) else {
        // Not an upstream parser (none is registered so): the general route.
        let statuses = parse_log_stream(parser, reader, size_hint)?;
        return super::write_statuses_json(&statuses, out).map_err(ReadLogError::Write);
    };
    let mut bytes = Vec::with_capacity(size_hint.saturating_add(1));
    reader.read_to_end(&mut bytes).map_err(ReadLogError::Io)?;
    // `from_utf8`'s check first (word at a time over ASCII), the lossy decoding only for a log
    // that is not UTF-8: the same text either way.
    let raw = parse(&decode(&bytes));
    // As the collector records them: empty names dropped.
    let entries = raw
        .iter()
        .filter(|(name, _)| !name.is_empty())
        .map(|(name, word)| (name, super::swebench::to_status(word)));
    super::common::write_sorted_json(super::common::sorted_by_name(entries), out)
        .map_err(ReadLogError::Write)
}

/// Writes the JSON of sorted `runs` merged (a name in several takes the status of the last).
/// The merge and the JSON are made in ranges of names on the threads, cut at quantiles of the
/// longest run, a batch of one range per thread at a time, each batch written in order before
/// the next is made: the output is never held whole, and the next batch's buffers reuse the
/// memory of the last (no fresh pages for tens of megabytes of JSON).
fn write_merged(
    runs: &[Vec<(&str, super::TestStatus)>],
    workers: usize,
    out: &mut dyn std::io::Write,
) -> Result<(), ReadLogError> {
    let longest: &[_] = runs.iter().max_by_key(|r| r.len()).map_or(&[], |r| r);
    // Ranges of about 16384 names of the longest run (a megabyte or so of JSON), at least
    // two per thread.
    let ranges = if longest.is_empty() {
        1
    } else {
        (longest.len() / 16384).max(workers * 2)
    };
    let cuts: Vec<&str> = (1..ranges)
        .map(|j| longest[longest.len() * j / ranges].0)
        .collect();
    // The buffers of a batch, once written, are the next batch's: its JSON goes into memory
    // already touched, not fresh pages (which the kernel clears first) grown by doubling.
    let spare: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    let range = |j: usize| {
        let sub: Vec<&[(&str, super::TestStatus)]> = runs
            .iter()
            .map(|run| {
                let from = j
                    .checked_sub(1)
                    .map_or(0, |c| run.partition_point(|e| e.0 < cuts[c]));
                let to = cuts
                    .get(j)
                    .map_or(run.len(), |cut| run.partition_point(|e| e.0 < *cut));
                &run[from..to.max(from)]
            })
            .collect();
        // A buffer written before, sized at once for the range's entries (each name escaped
        // by none of its bytes: `,\n  "name": "pass"` is the name and 14 bytes).
        let mut buf = spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let buf = buf.get_or_insert_with(Vec::new);
        buf.clear();
        buf.reserve(
            sub.iter()
                .flat_map(|r| r.iter())
                .map(|e| e.0.len() + 14)
                .sum(),
        );
        for (name, status) in MergeLast::new(&sub) {
            super::common::push_json_entry(buf, name, status);
        }
        Ok::<_, ReadLogError>(std::mem::take(buf))
    };
    let mut started = false;
    for batch in (0..ranges).step_by(workers) {
        let n = workers.min(ranges - batch);
        let chunks = in_pieces(n, workers, |k| range(batch + k))?;
        for chunk in chunks {
            super::common::write_json_entries_part(&mut started, &chunk, out)
                .map_err(ReadLogError::Write)?;
            spare.lock().unwrap_or_else(|e| e.into_inner()).push(chunk);
        }
    }
    crate::timings::mark("log pieces merged");
    super::common::write_json_end(started, out).map_err(ReadLogError::Write)
}

/// `work(0) .. work(n - 1)` on `workers` threads, each taking the next index as it finishes;
/// the results in index order (the first error, if any). Also writes a report's files.
pub(crate) fn in_pieces<T: Send, E: Send>(
    n: usize,
    workers: usize,
    work: impl Fn(usize) -> Result<T, E> + Sync,
) -> Result<Vec<T>, E> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, Result<T, E>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= n {
                            return mine;
                        }
                        mine.push((i, work(i)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a log piece's worker panicked"))
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The byte offsets that cut `size` bytes of `file` into `pieces` runs of whole lines: 0,
/// then the offset after the first line break at or past each even share that ends a line
/// none of `joins`, then `size` (non-decreasing; a piece may be empty).
fn line_bounds(
    file: &std::fs::File,
    size: u64,
    pieces: usize,
    joins: &[&[u8]],
) -> std::io::Result<Vec<u64>> {
    use std::os::unix::fs::FileExt;
    let mut bounds = vec![0];
    let mut window = vec![0u8; 1 << 16];
    for k in 1..pieces as u64 {
        let mut at = (size * k / pieces as u64).max(*bounds.last().expect("starts at 0"));
        let cut = loop {
            if at >= size {
                break size;
            }
            let want = window.len().min((size - at) as usize);
            let n = file.read_at(&mut window[..want], at)?;
            if n == 0 {
                break size;
            }
            match memchr::memchr(b'\n', &window[..n]) {
                Some(i) if joins_at(file, at + i as u64, joins)? => at += i as u64 + 1,
                Some(i) => break at + i as u64 + 1,
                None => at += n as u64,
            }
        };
        bounds.push(cut);
    }
    bounds.push(size);
    Ok(bounds)
}

/// Whether the line that ends at the line break at `end` of `file` is one of `joins`.
fn joins_at(file: &std::fs::File, end: u64, joins: &[&[u8]]) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let Some(longest) = joins.iter().map(|w| w.len() as u64 + 1).max() else {
        return Ok(false);
    };
    let from = end.saturating_sub(longest);
    let mut before = vec![0u8; (end - from) as usize];
    file.read_exact_at(&mut before, from)?;
    Ok(ends_with_line_of(&before, from == 0, joins))
}

/// Whether the last line of `before` (text up to a line break; `whole`: from the text's
/// start) is one of `joins`.
fn ends_with_line_of(before: &[u8], whole: bool, joins: &[&[u8]]) -> bool {
    joins.iter().any(|w| {
        before.ends_with(w)
            && match before.len().checked_sub(w.len() + 1) {
                Some(k) => before[k] == b'\n',
                None => whole && before.len() == w.len(),
            }
    })
}

/// Reads bytes `pos..end` of a file with positioned reads (threads share the file).
struct FileAt<'a> {
    file: &'a std::fs::File,
    pos: u64,
    end: u64,
}

impl<'a> FileAt<'a> {
    fn new(file: &'a std::fs::File, pos: u64, end: u64) -> Self {
        FileAt { file, pos, end }
    }
}

impl Read for FileAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let want = buf.len().min(self.end.saturating_sub(self.pos) as usize);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Merges runs each sorted by name with unique names: every name once, in order, with the
/// status of the last run that has it.
///
/// All names share their first `at` bytes (the common prefix of the smallest and the largest),
/// so each run's head is compared by its 16 bytes after them as an integer
/// ([`super::common::name_digits`], `u128::MAX` for a run that is done: no UTF-8 text has
/// those bytes), and by its bytes after the prefix only when the digits tie (test names that
/// differ only in a copy or case number past a long shared stem tie on 8 bytes, rarely on 16).
///
/// The run that gave the last name and the smallest head digit of the others are kept: while
/// that run's next digit is below it, its head is the next name and no run is scanned (names
/// come in stretches from one run, such as a test's cases).
struct MergeLast<'s, 'a> {
    runs: &'s [&'s [(&'a str, super::TestStatus)]],
    heads: Vec<usize>,
    digits: Vec<u128>,
    at: usize,
    last: usize,
    below: u128,
}

impl<'s, 'a> MergeLast<'s, 'a> {
    fn new(runs: &'s [&'s [(&'a str, super::TestStatus)]]) -> Self {
        let smallest = runs.iter().filter_map(|r| r.first()).map(|e| e.0).min();
        let largest = runs.iter().filter_map(|r| r.last()).map(|e| e.0).max();
        let at = match (smallest, largest) {
            (Some(a), Some(b)) => a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count(),
            _ => 0,
        };
        let mut merge = MergeLast {
            runs,
            heads: vec![0; runs.len()],
            digits: vec![u128::MAX; runs.len()],
            at,
            last: 0,
            below: 0,
        };
        for r in 0..runs.len() {
            merge.load(r);
        }
        merge
    }

    /// Reads run `r`'s head digit.
    fn load(&mut self, r: usize) {
        self.digits[r] = self.runs[r]
            .get(self.heads[r])
            .map_or(u128::MAX, |e| super::common::name_digits(e.0, self.at));
    }

    /// Run `r`'s head name after the shared prefix (digit included: a zero-padded digit does
    /// not tell `a` from `a\0`).
    fn tail(&self, r: usize) -> &'a [u8] {
        &self.runs[r][self.heads[r]].0.as_bytes()[self.at..]
    }
}

impl<'a> Iterator for MergeLast<'_, 'a> {
    type Item = (&'a str, super::TestStatus);

    fn next(&mut self) -> Option<Self::Item> {
        let last = self.last;
        if self.digits.get(last).is_some_and(|&d| d < self.below) {
            // Below every other run's head digit, so below its name, and in no other run.
            let found = self.runs[last][self.heads[last]];
            self.heads[last] += 1;
            self.load(last);
            return Some(found);
        }
        let mut best: Option<usize> = None;
        for (r, &digit) in self.digits.iter().enumerate() {
            if digit == u128::MAX {
                continue;
            }
            best = match best {
                Some(b) if digit > self.digits[b] => Some(b),
                Some(b) if digit == self.digits[b] && self.tail(r) > self.tail(b) => Some(b),
                // Smaller, or equal: the later run's status wins.
                _ => Some(r),
            };
        }
        let b = best?;
        let found = self.runs[b][self.heads[b]];
        let (digit, tail) = (self.digits[b], self.tail(b));
        for r in 0..self.runs.len() {
            // Run `b` holds the name: its own tail is not compared with itself.
            if self.digits[r] == digit && (r == b || self.tail(r) == tail) {
                self.heads[r] += 1;
                self.load(r);
            }
        }
        self.last = b;
        self.below = (self.digits.iter().enumerate())
            .filter(|&(r, _)| r != b)
            .map(|(_, &d)| d)
            .min()
            .unwrap_or(u128::MAX);
        Some(found)
    }
}

/// Reads `reader` into a buffer of (at first) `chunk` bytes and parses every run of complete
/// lines as soon as it is read; a line longer than the buffer grows it. The text after the
/// last line break is parsed last, as [`super::common::lines`] yields it for a whole log
/// (an empty last line included).
fn parse_chunks(
    parse: ParseFn,
    reads: Reads,
    reader: &mut dyn Read,
    size_hint: usize,
    chunk: usize,
) -> Result<Statuses, ReadLogError> {
    let mut collector = Collector::for_log(size_hint);
    parse_into(parse, reads, reader, chunk, &mut collector)?;
    Ok(collector.finish())
}

/// [`parse_chunks`] into a given collector.
fn parse_into(
    parse: ParseFn,
    reads: Reads,
    reader: &mut dyn Read,
    chunk: usize,
    collector: &mut Collector,
) -> Result<(), ReadLogError> {
    read_lines(reader, chunk, &[], &mut |bytes| {
        parse_piece(parse, reads, bytes, collector)
    })
}

/// Reads `reader` into a buffer of (at first) `chunk` bytes and hands `each` every run of
/// complete lines as soon as it is read, the last of which is none of `joins` (a line of
/// those is handed on with the line after it); a run longer than the buffer grows it. The
/// text after the last line break it may cut at is handed on last.
fn read_lines(
    reader: &mut dyn Read,
    chunk: usize,
    joins: &[&[u8]],
    each: &mut dyn FnMut(&[u8]),
) -> Result<(), ReadLogError> {
    let mut buf = vec![0u8; chunk.max(1)];
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadLogError::Io(e)),
        };
        let searched = filled;
        filled += n;
        let cut = memchr::memrchr_iter(b'\n', &buf[searched..filled])
            .map(|i| searched + i)
            .find(|&end| !ends_with_line_of(&buf[..end], true, joins));
        if let Some(end) = cut {
            each(&buf[..end]);
            buf.copy_within(end + 1..filled, 0);
            filled -= end + 1;
        }
    }
    each(&buf[..filled]);
    Ok(())
}

/// A piece of a log as text (invalid UTF-8 replaced).
fn decode(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Decodes (lossily), cleans (unless `reads` is raw) and parses one piece of a log that ends
/// at a line break.
fn parse_piece(parse: ParseFn, reads: Reads, bytes: &[u8], collector: &mut Collector) {
    let text = decode(bytes);
    if reads.cleans() {
        parse(&clean_log(&text), collector);
    } else {
        parse(&text, collector);
    }
}

fn lookup(parser: &str) -> Result<(ParseFn, Reads), ParserError> {
    match PARSERS.iter().find(|(name, _, _)| *name == parser) {
        Some(&(_, parse, reads)) => Ok((parse, reads)),
        None => Err(ParserError::Unknown {
            name: parser.to_owned(),
            suggestion: suggest(parser).map(str::to_owned),
        }),
    }
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
        let table: Vec<&str> = PARSERS.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(table, NAMES);
        let mut sorted = NAMES.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, NAMES);
    }

    /// Every fixture log, read in chunks of several sizes (down to one byte, so every line
    /// crosses a chunk boundary and the buffer grows), parses as the whole log does; also with
    /// an invalid UTF-8 byte and escape sequences next to line breaks.
    #[test]
    fn chunked_reading_matches_the_whole_log() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
        let mut checked = 0;
        for &(name, parse, reads) in PARSERS {
            if !reads.line_local() {
                continue;
            }
            let mut logs: Vec<Vec<u8>> = fs_err::read_dir(root.join(name))
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .map(|p| fs_err::read(p).expect("fixture"))
                .collect();
            let mut odd =
                b"\x1b[32mPASSED\x1b[0m t.py::a\r\nt.py::b \xff PASSED\n\x1b\nok 1 - x\x1b]8;;\n"
                    .to_vec();
            odd.extend(b"--- PASS: TestX (0.00s)\n\xe2\x9c\x93 caf\xc3\xa9 works\n");
            logs.push(odd);
            for log in logs {
                let whole = parse_log(name, &String::from_utf8_lossy(&log)).expect("parser");
                for chunk in [1, 2, 7, 64, 4096] {
                    let got = parse_chunks(parse, reads, &mut log.as_slice(), log.len(), chunk)
                        .expect("in memory");
                    assert_eq!(got, whole, "{name}, chunks of {chunk}");
                    assert_eq!(format!("{got:?}"), format!("{whole:?}"));
                }
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} logs checked");
    }

    /// Upstream's map of a log, through bench's collector (the route of the parsers read whole).
    fn upstream_route(name: &str, log: &str) -> Statuses {
        let parse = super::super::swebench::raw_parser(name).expect("upstream parser");
        let mut collector = Collector::default();
        for (n, w) in parse(log).iter() {
            collector.record(n, super::super::swebench::to_status(w));
        }
        collector.finish()
    }

    /// Every fixture log of every parser (`tests/fixtures/logs/*/*.log`).
    fn fixture_logs() -> Vec<Vec<u8>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
        let mut logs: Vec<Vec<u8>> = Vec::new();
        for dir in fs_err::read_dir(&root)
            .expect("fixtures")
            .filter_map(Result::ok)
        {
            for f in fs_err::read_dir(dir.path()).into_iter().flatten() {
                let path = f.expect("entry").path();
                if path.extension().is_some_and(|x| x == "log") {
                    logs.push(fs_err::read(path).expect("fixture"));
                }
            }
        }
        logs
    }

    /// The line-local upstream parsers, which put each line's name straight into bench's
    /// collector and are read in chunks, give upstream's map of the whole log: on every
    /// fixture log (of every parser) and on adversarial lines glued from their patterns' parts.
    #[test]
    fn raw_line_parsers_match_upstreams_map_of_the_whole_log() {
        let mut logs = fixture_logs();
        assert!(logs.len() > 60, "{} logs", logs.len());
        let pieces = [
            "PASSED",
            "FAILED",
            "SKIPPED",
            "ERROR",
            "XFAIL",
            "[ok]: ",
            "[err]: ",
            "PASS: ",
            "FAIL: ",
            "--- PASS: ",
            "ok 1 ",
            "not ok 2 ",
            "[PASSED] ",
            "[FAILED] ",
            "✓ ",
            "✕ ",
            "○ ",
            "× ",
            "[junit] [PASS] ",
            "[  OK  ] ",
            "[ FAILED ] ",
            " (12 ms)",
            " (0.01s)",
            " - ",
            " - passed",
            " ... ok",
            ": .",
            ": E",
            ". a = 0 s = .",
            "test a ... ok",
            " ....F",
            "tests/a.py::test_x",
            "t[/a/b]",
            "a",
            " ",
            "\t",
            "\r",
            "\x1b[32m",
            "[1m",
            "\u{a0}",
            "é",
            "\n",
            "\n",
            "\n",
            "MouseButton.LEFT",
            " in foo.tcl",
            "skip ",
            "pass ",
            "PASS ",
            "FAIL ",
            "1) ",
            "12)\t",
            " (12ms)",
            " (1.2 s)",
            " (3s)",
        ];
        let mut odd = super::super::swebench::glued_lines(&pieces, 8_000).join("\n");
        odd.push('\n');
        let mut odd = odd.into_bytes();
        odd.extend(b"t.py::b \xff PASSED\nPASSED \xe2\x9c t.py::c\n\xff");
        logs.push(odd);
        let mut checked = 0;
        for &(name, parse, reads) in PARSERS {
            if reads != Reads::RawLines {
                continue;
            }
            for log in &logs {
                let text = String::from_utf8_lossy(log);
                let want = upstream_route(name, &text);
                let whole = parse_log(name, &text).expect("parser");
                assert_eq!(format!("{whole:?}"), format!("{want:?}"), "{name}");
                for chunk in [1, 7, 4096] {
                    let got = parse_chunks(parse, reads, &mut log.as_slice(), log.len(), chunk)
                        .expect("in memory");
                    assert_eq!(format!("{got:?}"), format!("{want:?}"), "{name}, {chunk}");
                }
                checked += usize::from(!want.is_empty());
            }
        }
        assert!(checked > 100, "only {checked} non-empty maps checked");
    }

    /// The file path of `bench parse-log`: every fixture log of every parser, cut into 1 to
    /// 9 pieces (so pieces start mid-file, hold one line or none, and a name recurs across
    /// them), writes the bytes of one pass; and a log where the same tests recur in every
    /// piece with another status takes the last.
    #[test]
    fn pieces_write_the_json_of_one_pass() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
        let dir = tempfile::tempdir().expect("tempdir");
        let mut checked = 0;
        let mut recurring = String::new();
        for round in 0..30 {
            let status = ["PASSED", "FAILED", "SKIPPED"][round % 3];
            for t in 0..20 {
                recurring.push_str(&format!("t.py::test_{t} {status}\nnoise line {round}\n"));
            }
        }
        // Names sharing long prefixes, prefixes of one another and differing only in trailing
        // NULs, spread over every piece (the merge compares 16-byte digits past the prefix):
        // long ones that tie on their digits, short ones within a digit.
        let mut prefixes = String::new();
        for i in 0..400 {
            let status = ["PASSED", "FAILED", "SKIPPED"][i % 3];
            let nuls = "\0".repeat(i % 4);
            let name = format!("tests/unit/pkg_{}/m.py::T::test_{}{nuls}", i % 3, i % 50);
            prefixes.push_str(&format!("{name} {status}\n{status} {name}\n"));
            let short = format!("t{}{nuls}", i % 7);
            prefixes.push_str(&format!("{short} {status}\n{status} {short}\n"));
        }
        for &(name, _, _) in PARSERS {
            let mut logs: Vec<std::path::PathBuf> = fs_err::read_dir(root.join(name))
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect();
            let extra = dir.path().join(format!("{name}-recurring.log"));
            fs_err::write(&extra, &recurring).expect("write");
            logs.push(extra);
            let extra = dir.path().join(format!("{name}-prefixes.log"));
            fs_err::write(&extra, &prefixes).expect("write");
            logs.push(extra);
            for path in logs {
                let bytes = fs_err::read(&path).expect("fixture");
                let whole =
                    parse_log_stream(name, &mut bytes.as_slice(), bytes.len()).expect("parser");
                let mut want = Vec::new();
                crate::parsers::write_statuses_json(&whole, &mut want).expect("in memory");
                let f = fs_err::File::open(&path).expect("open");
                for pieces in 1..=9 {
                    let mut got = Vec::new();
                    write_log_json(name, f.file(), bytes.len() as u64, Some(pieces), &mut got)
                        .expect("parse");
                    assert_eq!(
                        String::from_utf8_lossy(&got),
                        String::from_utf8_lossy(&want),
                        "{name}, {}, {pieces} pieces",
                        path.display()
                    );
                }
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} logs checked");
        let f = fs_err::File::open(dir.path().join("pytest-recurring.log")).expect("open");
        let mut got = Vec::new();
        write_log_json(
            "pytest",
            f.file(),
            recurring.len() as u64,
            Some(4),
            &mut got,
        )
        .expect("parse");
        let got = String::from_utf8(got).expect("utf-8");
        assert!(got.contains("\"t.py::test_7\": \"skip\""), "{got}");
        assert_eq!(got.matches("test_7\"").count(), 1, "{got}");
    }

    /// grommet read in pieces of lines into two lists gives the map of its whole-log regexes:
    /// on every fixture log and on glued lines full of bare `FAIL` / `PASS` lines (whose match
    /// takes the next line, in chains), Unicode spaces after the word and timings, cut into 1
    /// to 9 pieces and read in chunks down to one byte (so nearly every line break is a cut
    /// the reader must refuse or take).
    #[test]
    fn two_list_pieces_match_the_whole_log() {
        let mut logs = fixture_logs();
        let pieces = [
            "FAIL",
            "PASS",
            "FAIL\n",
            "PASS\n",
            "\n",
            "\n",
            "FAIL ",
            "PASS ",
            "FAIL\t",
            "PASS\r",
            "FAIL\u{a0}",
            "PASS\u{2003}",
            "FAIL\u{85}",
            "FAILx",
            "PASSé",
            " FAIL",
            "a",
            "src/b.test.js",
            " (12 ms)",
            " (1.5 s)",
            "(3s)",
            " ",
            "é",
            "\u{a0}",
            "\r",
        ];
        for seed_lines in [300, 3_000] {
            let mut odd = super::super::swebench::glued_lines(&pieces, seed_lines).join("\n");
            odd.push_str("\nFAIL\n");
            logs.push(odd.into_bytes());
        }
        logs.push(b"FAIL\nFAIL\nFAIL\nPASS\nPASS x\nFAIL\n\xff\nPASS".to_vec());
        logs.push(b"PASS\nFAIL a\nFAIL\nPASS a\nFAIL".to_vec());
        let dir = tempfile::tempdir().expect("tempdir");
        let (_, parse, joins) = TWO_LISTS[0];
        let mut checked = 0;
        for (k, log) in logs.iter().enumerate() {
            let whole = parse_log("swebench-grommet", &String::from_utf8_lossy(log)).expect("p");
            let mut want = Vec::new();
            crate::parsers::write_statuses_json(&whole, &mut want).expect("in memory");
            let path = dir.path().join(format!("{k}.log"));
            fs_err::write(&path, log).expect("write");
            let f = fs_err::File::open(&path).expect("open");
            for pieces in 1..=9 {
                let mut got = Vec::new();
                write_log_json(
                    "swebench-grommet",
                    f.file(),
                    log.len() as u64,
                    Some(pieces),
                    &mut got,
                )
                .expect("parse");
                assert_eq!(
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want),
                    "log {k}, {pieces} pieces"
                );
            }
            for chunk in [1, 2, 7, 4096] {
                let (mut first, mut second) = (Collector::default(), Collector::default());
                let mut each = |b: &[u8]| parse(&decode(b), &mut first, &mut second);
                read_lines(&mut log.as_slice(), chunk, joins, &mut each).expect("in memory");
                let mut both = Collector::default();
                for (n, s) in first
                    .finish()
                    .sorted()
                    .into_iter()
                    .chain(second.finish().sorted())
                {
                    both.record(n, s);
                }
                assert_eq!(
                    format!("{:?}", both.finish()),
                    format!("{whole:?}"),
                    "log {k}, chunks of {chunk}"
                );
            }
            checked += usize::from(!whole.is_empty());
        }
        assert!(checked > 5, "only {checked} non-empty maps checked");
    }

    #[test]
    fn edit_distance_counts_transpositions_once() {
        assert_eq!(edit_distance("pytset", "pytest"), 1);
        assert_eq!(edit_distance("", "go"), 2);
        assert_eq!(edit_distance("go", "go"), 0);
        assert_eq!(edit_distance("cargo", "cargo-json"), 5);
    }
}
