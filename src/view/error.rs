//! Why the viewer could not open an experiment or serve a page.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("{path} is neither a manifest nor a report directory (no report.json in it)")]
    NotAnExperiment { path: PathBuf },
    #[error(
        "no store holds the report in {dir}: looked in {looked} (pass --store if it is elsewhere)"
    )]
    ReportNotInStore { dir: PathBuf, looked: String },
    #[error("{manifest} has no report stage: add one (`kind = \"report\"`) and apply it")]
    NoReportStage { manifest: PathBuf },
    #[error("the report record {key} in {store} is unreadable: {reason}")]
    BadRecord {
        store: PathBuf,
        key: String,
        reason: String,
    },
    #[error("cannot load the manifest {path}")]
    Manifest {
        path: PathBuf,
        #[source]
        source: Box<crate::manifest::ManifestError>,
    },
    #[error(
        "{dir} is not empty and not an export of `bench view --static` (no data/experiment.js written by bench): bench replaces only an earlier export"
    )]
    NotAnExport { dir: PathBuf },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    EventLog(#[from] crate::run::EventLogError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
