//! The end of an apply as an event: its counts, the headline numbers of the reports it wrote
//! (read back from each `report.json`), its failures with the command that inspects each, and
//! the remote cache's part. Building the value only; the reporter renders it.

use std::path::{Path, PathBuf};

use crate::events::{
    Failure, RemoteCounts, ReportSummary, RunFinished, RunStatus, StageCounts, TeamHeadline,
};
use crate::report::document::ReportDocument;

use super::remote::RemoteSummary;

/// What `run_finished` says of an apply.
pub struct Ending<'a> {
    pub run_id: &'a str,
    pub status: RunStatus,
    pub exit_code: u8,
    pub stages: Vec<StageCounts>,
    pub reports: &'a [PathBuf],
    pub failed: &'a [(String, String)],
    /// The manifest as the command line named it (for the inspect commands).
    pub manifest: &'a Path,
    pub remote: Option<&'a RemoteSummary>,
}

/// The `run_finished` event of an apply.
pub fn run_finished(e: Ending<'_>) -> RunFinished {
    RunFinished {
        run_id: e.run_id.to_string(),
        status: e.status,
        exit_code: e.exit_code,
        stages: e.stages,
        reports: e.reports.iter().map(|p| report_summary(p)).collect(),
        failures: e
            .failed
            .iter()
            .map(|(address, error)| Failure {
                address: address.clone(),
                error: error.clone(),
                inspect: inspect_command(e.manifest, address),
            })
            .collect(),
        remote: e.remote.map(|r| RemoteCounts {
            url: r.url.clone(),
            served: r.served as u64,
            blobs: r.blobs as u64,
            bytes: r.bytes,
            uploaded: r.uploaded as u64,
            not_uploaded: r.not_uploaded as u64,
        }),
    }
}

/// The command that shows a node's inputs and its last error.
pub fn inspect_command(manifest: &Path, address: &str) -> String {
    format!(
        "bench status {} --node {}",
        quote(&manifest.display().to_string()),
        quote(address)
    )
}

/// `s` as a shell word: as is when it holds only safe characters, else single-quoted.
fn quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._:@=+,-".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        crate::backend::shell_quote(s)
    }
}

/// A report's headline from the `report.json` beside `report_md` (no rows if it cannot be
/// read: the path is still worth printing).
pub fn report_summary(report_md: &Path) -> ReportSummary {
    let doc = fs_err::read(report_md.with_file_name("report.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<ReportDocument>(&b).ok());
    ReportSummary {
        path: report_md.display().to_string(),
        teams: doc
            .as_ref()
            .map(|d| {
                d.teams
                    .iter()
                    .map(|t| TeamHeadline {
                        team: t.name.clone(),
                        resolved: t.resolved,
                        tasks: t.tasks,
                        rate: t.rate,
                        ci_low: t.ci_low,
                        ci_high: t.ci_high,
                        interval: t.headline_interval.clone(),
                        cost_usd: t.cost.total_priced_usd,
                        cost_lower_bound: t.cost.lower_bound,
                        priced_runs: t.cost.priced_runs,
                        runs: t.cost.runs,
                        errored: t.errored,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        warnings: doc
            .as_ref()
            .and_then(ReportDocument::empty_warning)
            .into_iter()
            .collect(),
        promotion: doc.and_then(|d| d.promotion).map(|p| p.summary),
    }
}
