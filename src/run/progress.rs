//! Progress on stderr: a bar per stage (indicatif) on a terminal, plain lines otherwise. Data
//! never goes to stdout from here.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Default, Clone, Copy)]
struct Counts {
    total: u64,
    cached: u64,
    running: u64,
    done: u64,
    failed: u64,
    /// Not launched: a budget halted the stage (not a failure: apply exits 0).
    not_run: u64,
}

/// Reports node events.
pub struct Progress {
    bars: Option<(MultiProgress, BTreeMap<String, ProgressBar>)>,
    counts: BTreeMap<String, Counts>,
    quiet: bool,
    /// The backend's load line (a pool's hosts): a bar of its own on a terminal, else a line
    /// when it changed, at most every 10 s.
    load: Option<(Option<ProgressBar>, String, Option<std::time::Instant>)>,
}

impl Progress {
    /// Bars when stderr is a terminal (and `NO_COLOR`/`CI` do not ask otherwise), lines when not.
    pub fn new(stages: &[String], quiet: bool) -> Progress {
        let tty = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
        let bars = (tty && !quiet).then(|| {
            let mp = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let style =
                ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg} eta {eta}")
                    .expect("template is valid")
                    .progress_chars("=> ");
            let bars = stages
                .iter()
                .map(|s| {
                    let b = mp.add(ProgressBar::new(0));
                    b.set_style(style.clone());
                    b.set_prefix(s.clone());
                    (s.clone(), b)
                })
                .collect();
            (mp, bars)
        });
        Progress {
            bars,
            counts: stages
                .iter()
                .map(|s| (s.clone(), Counts::default()))
                .collect(),
            quiet,
            load: None,
        }
    }

    /// Shows the backend's load (`None`: a backend without one, nothing shown).
    pub fn load(&mut self, line: Option<String>) {
        let Some(line) = line else { return };
        if self.quiet {
            return;
        }
        let (bar, last, printed) = self.load.get_or_insert_with(|| {
            let bar = self.bars.as_ref().map(|(mp, _)| {
                let b = mp.add(ProgressBar::new_spinner());
                b.set_style(ProgressStyle::with_template("{msg}").expect("template is valid"));
                b
            });
            (bar, String::new(), None)
        });
        if *last == line {
            return;
        }
        match bar {
            Some(b) => b.set_message(line.clone()),
            None if printed.is_none_or(|t| t.elapsed() >= std::time::Duration::from_secs(10)) => {
                eprintln!("{line}");
                *printed = Some(std::time::Instant::now());
            }
            None => return,
        }
        *last = line;
    }

    /// A running node that will run again (its host was lost): no longer running.
    pub fn requeued(&mut self, stage: &str) {
        let c = self.counts.entry(stage.to_string()).or_default();
        c.running = c.running.saturating_sub(1);
        self.redraw(stage);
    }

    fn redraw(&self, stage: &str) {
        if let (Some((_, bars)), Some(c)) = (&self.bars, self.counts.get(stage)) {
            let b = &bars[stage];
            b.set_length(c.total);
            b.set_position(c.cached + c.done + c.failed + c.not_run);
            let not_run = if c.not_run > 0 {
                format!(" not run {}", c.not_run)
            } else {
                String::new()
            };
            b.set_message(format!(
                "cached {} running {} done {} failed {}{not_run}",
                c.cached, c.running, c.done, c.failed
            ));
        }
    }

    fn line(&self, text: String) {
        if self.quiet {
            return;
        }
        match &self.bars {
            Some((mp, _)) => {
                let _ = mp.println(text);
            }
            None => eprintln!("{text}"),
        }
    }

    pub fn added(&mut self, stage: &str, cached: bool) {
        let c = self.counts.entry(stage.to_string()).or_default();
        c.total += 1;
        if cached {
            c.cached += 1;
        }
        self.redraw(stage);
    }

    pub fn started(&mut self, stage: &str, address: &str) {
        self.counts.entry(stage.to_string()).or_default().running += 1;
        self.redraw(stage);
        if self.bars.is_none() {
            self.line(format!("start   {address}"));
        }
    }

    pub fn finished(&mut self, stage: &str, address: &str, ok: bool, detail: &str) {
        let c = self.counts.entry(stage.to_string()).or_default();
        c.running = c.running.saturating_sub(1);
        if ok {
            c.done += 1;
        } else {
            c.failed += 1;
        }
        self.redraw(stage);
        let tag = if ok { "done  " } else { "FAILED" };
        if self.bars.is_none() || !ok {
            self.line(format!("{tag}  {address}  {detail}"));
        }
    }

    /// A node the budget kept from launching: not a failure.
    pub fn not_run(&mut self, stage: &str, address: &str, reason: &str) {
        self.counts.entry(stage.to_string()).or_default().not_run += 1;
        self.redraw(stage);
        self.line(format!("not run (budget)  {address}  {reason}"));
    }

    /// A message line (warnings, summaries).
    pub fn note(&self, text: &str) {
        self.line(text.to_string());
    }

    pub fn finish(&self) {
        if let Some((_, bars)) = &self.bars {
            for b in bars.values() {
                b.finish();
            }
            if let Some((Some(b), _, _)) = &self.load {
                b.finish();
            }
        }
        if self.bars.is_none() && !self.quiet {
            let parts: Vec<String> = self
                .counts
                .iter()
                .map(|(s, c)| {
                    let not_run = if c.not_run > 0 {
                        format!(", {} not run (budget)", c.not_run)
                    } else {
                        String::new()
                    };
                    format!(
                        "{s}: {} cached, {} done, {} failed{not_run}",
                        c.cached, c.done, c.failed
                    )
                })
                .collect();
            eprintln!("summary  {}", parts.join("; "));
        }
    }
}
