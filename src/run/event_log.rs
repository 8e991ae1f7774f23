//! The store's event log of an apply: every event of the last apply of a manifest, one JSON
//! object per line (the lines of `bench apply --message-format json`, as
//! `schemas/events.schema.json` describes them), written as the events happen to
//! `index/<hash of the manifest's path>.events.jsonl`, so that `bench view` can follow a running
//! apply. The log starts at the apply's `run_started` (an apply's first event; what is said
//! before it, such as image pulls, is not logged) and ends with its `run_finished`; the next
//! apply of the manifest starts it again. Not the run's provenance (that is `runs/<id>.json`)
//! nor anything an apply reads.

use std::io::Write;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::events::{Event, Sink};
use crate::store::Store;

/// The event log of `manifest`'s last apply on `store`.
pub fn event_log_path(store: &Store, manifest: &Path) -> PathBuf {
    store.manifest_file(manifest, "events.jsonl")
}

/// Records the stream of `bench apply` in its store's event log.
#[derive(Debug, Default)]
pub struct EventLog {
    file: Option<fs_err::File>,
    /// Writing failed once: nothing more is written.
    broken: bool,
}

impl EventLog {
    pub fn new() -> EventLog {
        EventLog::default()
    }

    fn open(started: &crate::events::RunStarted) -> Result<fs_err::File, String> {
        let store = Store::open_existing(Path::new(&started.store))
            .ok_or_else(|| format!("the store {} cannot be opened", started.store))?;
        let path = event_log_path(&store, Path::new(&started.manifest));
        fs_err::File::create(&path).map_err(|e| e.to_string())
    }
}

impl Sink for EventLog {
    fn record(&mut self, e: &Event) -> Result<(), String> {
        if self.broken {
            return Ok(());
        }
        if let Event::RunStarted(started) = e {
            self.file = None;
            match EventLog::open(started) {
                Ok(f) => self.file = Some(f),
                Err(why) => {
                    self.broken = true;
                    return Err(format!(
                        "the event log is not written (bench view cannot follow this apply): {why}"
                    ));
                }
            }
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        let mut line = serde_json::to_vec(e).expect("events serialize");
        line.push(b'\n');
        // One write per line: a reader sees whole lines, and at worst a last one cut short.
        if let Err(err) = file.write_all(&line) {
            self.broken = true;
            self.file = None;
            return Err(format!(
                "the event log is no longer written (bench view cannot follow the rest of this apply): {err}"
            ));
        }
        if matches!(e, Event::RunFinished(_)) {
            self.file = None;
        }
        Ok(())
    }
}

/// Why an event log cannot be read.
#[derive(Debug, Error)]
pub enum EventLogError {
    #[error("cannot read the event log {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("line {line} of the event log {path} is not an event: {reason}")]
    Line {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

/// A reader that follows an event log: each [`EventLogReader::read`] parses only the lines
/// written since the last (the log of a running apply grows by a few lines a second, and is
/// read once a second), and starts over when the log was started again by another apply (its
/// first line changed) or cut.
#[derive(Debug)]
pub struct EventLogReader {
    path: PathBuf,
    /// The bytes parsed so far: whole lines.
    offset: u64,
    /// The log's first line as it was read (its `run_started`).
    head: Vec<u8>,
    /// The lines parsed so far.
    lines: usize,
    events: Vec<Event>,
}

impl EventLogReader {
    pub fn new(path: PathBuf) -> EventLogReader {
        EventLogReader {
            path,
            offset: 0,
            head: Vec::new(),
            lines: 0,
            events: Vec::new(),
        }
    }

    /// The log's events so far (`None`: there is no log).
    pub fn read(&mut self) -> Result<Option<&[Event]>, EventLogError> {
        use std::io::{Read, Seek, SeekFrom};
        let path = self.path.clone();
        let io = |source| EventLogError::Io {
            path: path.clone(),
            source,
        };
        let mut file = match fs_err::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                *self = EventLogReader::new(self.path.clone());
                return Ok(None);
            }
            Err(e) => return Err(io(e)),
        };
        let len = file.metadata().map_err(io)?.len();
        let mut head = vec![0u8; self.head.len()];
        let same = len >= self.offset && file.read_exact(&mut head).is_ok() && head == self.head;
        if !same {
            *self = EventLogReader::new(self.path.clone());
        }
        file.seek(SeekFrom::Start(self.offset)).map_err(io)?;
        let mut tail = Vec::new();
        file.read_to_end(&mut tail).map_err(io)?;
        let Some(end) = tail.iter().rposition(|b| *b == b'\n') else {
            return Ok(Some(&self.events));
        };
        for line in tail[..end].split(|b| *b == b'\n') {
            if self.lines == 0 {
                self.head = line.to_vec();
            }
            self.lines += 1;
            if line.is_empty() {
                continue;
            }
            let e = serde_json::from_slice(line).map_err(|e| EventLogError::Line {
                path: self.path.clone(),
                line: self.lines,
                reason: e.to_string(),
            })?;
            self.events.push(e);
        }
        self.offset += end as u64 + 1;
        Ok(Some(&self.events))
    }
}

/// The events of the log at `path` (`None`: there is none). A last line without its newline is
/// being written: it is left out.
pub fn read_event_log(path: &Path) -> Result<Option<Vec<Event>>, EventLogError> {
    let bytes = match fs_err::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(EventLogError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let whole = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(end) => &bytes[..=end],
        None => &[][..],
    };
    let mut events = Vec::new();
    for (i, line) in whole.split(|b| *b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let e = serde_json::from_slice(line).map_err(|e| EventLogError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            reason: e.to_string(),
        })?;
        events.push(e);
    }
    Ok(Some(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Level, Note, RunStarted};

    fn started(store: &Path) -> Event {
        Event::RunStarted(RunStarted {
            format: crate::events::EVENTS_FORMAT,
            run_id: "r1".into(),
            manifest: "/x/m.toml".into(),
            store: store.display().to_string(),
            stages: vec![],
        })
    }

    fn note(text: &str) -> Event {
        Event::Note(Note {
            level: Level::Note,
            message: text.into(),
        })
    }

    #[test]
    fn the_log_holds_the_last_apply_from_its_run_started_as_events_happen() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let path = event_log_path(&store, Path::new("/x/m.toml"));
        let mut log = EventLog::new();
        log.record(&note("before the run: not logged")).unwrap();
        assert!(read_event_log(&path).unwrap().is_none());
        log.record(&started(dir.path())).unwrap();
        log.record(&note("one")).unwrap();
        // Read while the apply runs: every event so far.
        assert_eq!(
            read_event_log(&path).unwrap().unwrap(),
            vec![started(dir.path()), note("one")]
        );
        // A second apply starts the log again.
        log.record(&started(dir.path())).unwrap();
        log.record(&note("two")).unwrap();
        assert_eq!(
            read_event_log(&path).unwrap().unwrap(),
            vec![started(dir.path()), note("two")]
        );
    }

    #[test]
    fn a_line_being_written_is_left_out_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let line = serde_json::to_string(&note("a")).unwrap();
        fs_err::write(&path, format!("{line}\n{{\"event\":\"no")).unwrap();
        assert_eq!(read_event_log(&path).unwrap().unwrap(), vec![note("a")]);
        fs_err::write(&path, format!("{line}\nnot json\n")).unwrap();
        let err = read_event_log(&path).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("log.jsonl"), "{err}");
    }

    #[test]
    fn the_reader_follows_the_log_and_starts_over_with_the_next_apply() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let path = event_log_path(&store, Path::new("/x/m.toml"));
        let mut reader = EventLogReader::new(path.clone());
        assert_eq!(reader.read().unwrap(), None);
        let mut log = EventLog::new();
        log.record(&started(dir.path())).unwrap();
        log.record(&note("one")).unwrap();
        let got = reader.read().unwrap().unwrap().to_vec();
        assert_eq!(got, vec![started(dir.path()), note("one")]);
        // A line being written is not read yet; once whole, it is.
        let mut f = fs_err::OpenOptions::new().append(true).open(&path).unwrap();
        let line = serde_json::to_string(&note("two")).unwrap();
        f.write_all(&line.as_bytes()[..5]).unwrap();
        assert_eq!(reader.read().unwrap().unwrap().len(), 2);
        f.write_all(&line.as_bytes()[5..]).unwrap();
        f.write_all(b"\n").unwrap();
        assert_eq!(reader.read().unwrap().unwrap().last(), Some(&note("two")));
        // The next apply starts the log again, longer than the reader had read: all of it.
        let mut next = started(dir.path());
        if let Event::RunStarted(s) = &mut next {
            s.run_id = "r2".into();
        }
        log.record(&next).unwrap();
        for i in 0..5 {
            log.record(&note(&format!("again {i}"))).unwrap();
        }
        let got = reader.read().unwrap().unwrap().to_vec();
        assert_eq!(got.len(), 6);
        assert_eq!(got[0], next);
        assert_eq!(got, read_event_log(&path).unwrap().unwrap());
        fs_err::remove_file(&path).unwrap();
        assert_eq!(reader.read().unwrap(), None);
    }

    #[test]
    fn a_store_that_cannot_be_opened_is_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = EventLog::new();
        let err = log.record(&started(&dir.path().join("nope"))).unwrap_err();
        assert!(err.contains("not written"), "{err}");
        assert!(log.record(&note("x")).is_ok());
    }
}
