//! Output as typed events: what happens during an apply is an [`Event`] (`event.rs`), emitted
//! through an [`Events`] handle by the dispatcher, the executors and the backends, and
//! rendered by the one [`Reporter`] (`reporter.rs`): bars on a terminal, lines in a log, or
//! JSON lines for tools; a [`Sink`] may record the stream too (the store's event log). Counting
//! per stage is `tally.rs`'s. Nothing here decides what runs.

mod event;
mod reporter;
mod tally;

use std::sync::{Arc, Mutex};

pub use event::{
    BackendLoad, BackendSummary, CacheHit, EVENTS_FORMAT, Event, Failure, HostSummary, ImageBuilt,
    ImageKind, ImagePull, Level, NodeFinished, NodePlaced, NodeRetried, NodeShared, NodeStarted,
    Note, Outcome, Placement, RemoteCounts, ReportSummary, RunFinished, RunStarted, RunStatus,
    StageCounts, StagePlan, TeamHeadline, events_schema_text,
};
pub use reporter::{Format, Reporter, headline_table};
pub use tally::Tally;

/// Where events go: a cheap handle on the one reporter (and the sinks that record the stream),
/// cloned into whatever emits (the dispatcher, backends, the image pulls). Emitting renders the
/// event at once, under a lock held for that one event, so the stream's order is the order of
/// the calls, in the reporter and in every sink alike.
#[derive(Clone)]
pub struct Events {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    reporter: Reporter,
    sinks: Vec<Box<dyn Sink>>,
}

/// Something that records the event stream besides the reporter (the store's event log of an
/// apply, `run/event_log.rs`). It sees every event, in the stream's order.
pub trait Sink: Send {
    /// Records `e`; an error is reported once as a warning (the sink then records nothing
    /// more: it is its own to stop).
    fn record(&mut self, e: &Event) -> Result<(), String>;
}

impl Events {
    pub fn new(reporter: Reporter) -> Events {
        Events {
            inner: Arc::new(Mutex::new(Inner {
                reporter,
                sinks: Vec::new(),
            })),
        }
    }

    /// These events, also recorded by `sink`.
    pub fn with_sink(self, sink: Box<dyn Sink>) -> Events {
        self.inner().sinks.push(sink);
        self
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn emit(&self, e: Event) {
        let failures: Vec<String> = {
            let mut inner = self.inner();
            inner.reporter.render(&e);
            inner
                .sinks
                .iter_mut()
                .filter_map(|s| s.record(&e).err())
                .collect()
        };
        for why in failures {
            self.warning(why);
        }
    }

    /// A note for people (`message` without its `note:` prefix).
    pub fn note(&self, message: impl Into<String>) {
        self.emit(Event::Note(Note {
            level: Level::Note,
            message: message.into(),
        }));
    }

    /// A warning: something that weakens what the run means.
    pub fn warning(&self, message: impl Into<String>) {
        self.emit(Event::Note(Note {
            level: Level::Warning,
            message: message.into(),
        }));
    }

    /// The terminal's bars, for other bars to join (see [`Reporter::multi_progress`]).
    pub fn multi_progress(&self) -> Option<indicatif::MultiProgress> {
        self.inner().reporter.multi_progress()
    }

    /// Whether the stream is JSON lines (then every node's event is wanted, even on paths that
    /// otherwise only count).
    pub fn is_json(&self) -> bool {
        self.inner().reporter.is_json()
    }
}

impl Default for Events {
    /// Plain lines on stderr: for a backend or a library call made outside an apply.
    fn default() -> Events {
        Events::new(Reporter::lines())
    }
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Events")
    }
}
