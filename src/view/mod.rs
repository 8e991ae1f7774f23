//! `bench view`: a read-only results viewer over the store. One experiment (a manifest's last
//! report, found from the manifest or from its report directory) is shown as pages with stable
//! URLs: the experiment, a task, a pair (task x team x replicate) with its diff, grading and
//! trajectory. The same single-page app runs from the embedded HTTP server (`server`) and from
//! a static export opened from disk (`export`): its data are JavaScript files (`data/...js`,
//! each a `bench.put(path, json)` call) loaded by script tags, which `file://` allows where it
//! blocks `fetch`. Not a place that writes to the store, runs anything, or reads a secret the
//! store does not hold (everything shown comes from the store, scrubbed when it was stored).

mod assets;
mod command;
mod data;
mod diff;
mod error;
mod export;
mod grid;
mod highlight;
mod ids;
mod live;
mod paging;
mod redact;
mod server;
mod source;
pub mod trajectory;

pub use command::command;
pub use data::Viewer;
pub use error::ViewError;
pub use export::{Exported, export};
pub use ids::{decode, encode};
pub use paging::{PAGE_BYTES, Page, read_page};
pub use server::{Served, serve};
pub use source::Experiment;
