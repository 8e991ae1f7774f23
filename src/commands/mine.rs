//! `bench mine`: tasks mined from a repository's own fix commits.

use std::path::Path;

use miette::{Report, miette};

use crate::exit_codes;

/// `bench mine`: progress on stderr, the summary of every candidate on stdout.
pub(super) fn mine(
    repo: &Path,
    since: Option<&str>,
    grep: &str,
    out: &Path,
    limit: Option<usize>,
    timeout: &str,
) -> Result<u8, Report> {
    let since = since
        .map(crate::mine::parse_since)
        .transpose()
        .map_err(|e| miette!("bad --since: {e}"))?;
    let timeout = humantime::parse_duration(timeout)
        .map_err(|e| miette!("bad --timeout `{timeout}`: {e} (e.g. `10m`, `90s`)"))?;
    if limit == Some(0) {
        return Err(miette!("bad --limit: 0 keeps no task; give 1 or more"));
    }
    let opts = crate::mine::MineOptions {
        repo: repo.to_path_buf(),
        since,
        grep: grep.to_string(),
        out: out.to_path_buf(),
        limit,
        timeout,
    };
    let judged =
        crate::mine::mine(&opts, &|line| eprintln!("{line}")).map_err(|e| miette!("{e}"))?;
    print!("{}", crate::mine::summary(&judged, out));
    Ok(exit_codes::OK)
}
