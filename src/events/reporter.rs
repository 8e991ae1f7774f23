//! The one reporter: renders the event stream for a terminal (indicatif bars per stage on
//! stderr), for plain logs (a line per event on stderr, when stderr is not a terminal or under
//! CI), or as JSON lines on stdout (`--message-format json`). It owns the rendering state
//! (bars, counts, the load line); it decides nothing about the run.
//!
//! Data goes to stdout (the headline tables and the reports' paths after an apply, or the JSON
//! lines), progress and notes to stderr.

use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::event::{
    Event, ImageKind, Level, NodeFinished, Outcome, Placement, ReportSummary, RunFinished,
    RunStarted, StageCounts, StagePlan, TeamHeadline,
};
use super::tally::Tally;

/// How the stream is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For people: bars on a terminal, lines otherwise.
    Human,
    /// One JSON object per event, per line, on stdout.
    Json,
}

/// Where human output goes.
enum Sink {
    Terminal {
        mp: MultiProgress,
        bars: BTreeMap<String, ProgressBar>,
        load: Option<ProgressBar>,
    },
    Lines {
        /// When the load line was last printed (it is printed at most every 10 s).
        load_printed: Option<Instant>,
    },
    Json,
}

/// Renders events.
pub struct Reporter {
    sink: Sink,
    quiet: bool,
    order: Vec<String>,
    plans: BTreeMap<String, StagePlan>,
    tally: Tally,
    /// Nodes started or shared and not ended, by address, and their count per stage.
    running: HashSet<String>,
    running_per_stage: BTreeMap<String, u64>,
    /// Stages whose final counts came (their bar's length is then exact).
    finished: HashSet<String>,
    last_load: String,
}

impl Reporter {
    /// A reporter in `format`. Human: bars when stderr is a terminal and `CI` is unset (and not
    /// `quiet`), lines otherwise; `quiet` keeps only warnings, failures and the final summary.
    pub fn new(format: Format, quiet: bool) -> Reporter {
        let sink = match format {
            Format::Json => Sink::Json,
            Format::Human => {
                let tty = std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
                if tty && !quiet {
                    Sink::Terminal {
                        mp: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
                        bars: BTreeMap::new(),
                        load: None,
                    }
                } else {
                    Sink::Lines { load_printed: None }
                }
            }
        };
        Reporter {
            sink,
            quiet,
            order: Vec::new(),
            plans: BTreeMap::new(),
            tally: Tally::default(),
            running: HashSet::new(),
            running_per_stage: BTreeMap::new(),
            finished: HashSet::new(),
            last_load: String::new(),
        }
    }

    /// Plain lines on stderr, whatever stderr is (libraries and tests that build a backend
    /// without an apply).
    pub fn lines() -> Reporter {
        Reporter {
            sink: Sink::Lines { load_printed: None },
            ..Reporter::new(Format::Json, false)
        }
    }

    /// The bars' container on a terminal: other bars (a pull's layers) join it so that one
    /// place draws stderr.
    pub fn multi_progress(&self) -> Option<MultiProgress> {
        match &self.sink {
            Sink::Terminal { mp, .. } => Some(mp.clone()),
            _ => None,
        }
    }

    /// Whether this reporter prints JSON lines.
    pub fn is_json(&self) -> bool {
        matches!(self.sink, Sink::Json)
    }

    /// Renders one event.
    pub fn render(&mut self, e: &Event) {
        self.tally.observe(e);
        if matches!(self.sink, Sink::Json) {
            let mut out = std::io::stdout().lock();
            // A closed stdout (a tool that stopped reading) must not stop the apply.
            let _ = serde_json::to_writer(&mut out, e);
            let _ = out.write_all(b"\n");
            let _ = out.flush();
            return;
        }
        match e {
            Event::RunStarted(r) => self.run_started(r),
            Event::NodeStarted(n) => {
                self.start(&n.stage, &n.address);
                if !self.terminal() {
                    self.line(format!("start   {}", n.address));
                }
            }
            Event::NodeShared(n) => self.start(&n.stage, &n.address),
            Event::CacheHit(h) => self.redraw(&h.stage),
            Event::NodeFinished(f) => self.node_finished(f),
            Event::NodeRetried(r) => {
                self.stop(&r.stage, &r.address);
                self.line(format!("retry   {}  {}", r.address, r.reason));
            }
            Event::NodePlaced(p) => match &p.placement {
                Placement::Resubmitted { .. } => self.line(format!(
                    "resubmit {}  {}",
                    p.address,
                    p.placement.describe()
                )),
                _ if !self.terminal() => {
                    self.line(format!("placed  {}  {}", p.address, p.placement.describe()))
                }
                _ => {}
            },
            Event::Note(n) => match n.level {
                Level::Note => self.line(format!("note: {}", n.message)),
                Level::Warning => self.always(format!("warning: {}", n.message)),
            },
            Event::ImageBuilt(b) => self.line(match (b.kind, &b.base) {
                (ImageKind::Agent, Some(base)) => {
                    format!("built agent image {} (on {})", b.image, short(base))
                }
                (ImageKind::Agent, None) => format!("built agent image {}", b.image),
                (ImageKind::Environment, _) => format!("built task environment {}", b.image),
            }),
            Event::ImagePull(p) => self.line(p.line.clone()),
            Event::BackendLoad(l) => self.load(&l.line),
            Event::BackendSummary(s) => {
                let parts: Vec<String> = s
                    .hosts
                    .iter()
                    .map(|h| {
                        let mut p = format!("{} {} sandboxes", h.host, h.sandboxes);
                        if h.unreachable {
                            p.push_str(&format!(", unreachable ({} nodes moved)", h.nodes_moved));
                        }
                        p
                    })
                    .collect();
                self.line(format!("hosts   {}", parts.join("; ")));
            }
            Event::StageFinished(c) => {
                self.finished.insert(c.stage.clone());
                self.redraw(&c.stage);
            }
            Event::RunFinished(r) => self.run_finished(r),
        }
    }

    fn terminal(&self) -> bool {
        matches!(self.sink, Sink::Terminal { .. })
    }

    fn run_started(&mut self, r: &RunStarted) {
        self.order = r.stages.iter().map(|s| s.stage.clone()).collect();
        self.plans = r
            .stages
            .iter()
            .map(|s| (s.stage.clone(), s.clone()))
            .collect();
        if let Sink::Terminal { mp, bars, .. } = &mut self.sink {
            let style =
                ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg} eta {eta}")
                    .expect("template is valid")
                    .progress_chars("=> ");
            for s in &r.stages {
                let b = mp.add(ProgressBar::new(s.to_run + s.cached + s.shared));
                b.set_style(style.clone());
                b.set_prefix(s.stage.clone());
                bars.insert(s.stage.clone(), b);
            }
        } else {
            let parts: Vec<String> = r
                .stages
                .iter()
                .map(|s| {
                    let shared = if s.shared > 0 {
                        format!(" (+{} sharing a run)", s.shared)
                    } else {
                        String::new()
                    };
                    let most = if s.estimated && s.to_run > 0 {
                        "at most "
                    } else {
                        ""
                    };
                    format!(
                        "{} {most}{} to run{shared}, {} cached",
                        s.stage, s.to_run, s.cached
                    )
                })
                .collect();
            self.line(format!("plan    {}", parts.join("; ")));
        }
        for s in &r.stages {
            self.redraw(&s.stage);
        }
    }

    fn start(&mut self, stage: &str, address: &str) {
        if self.running.insert(address.to_string()) {
            *self.running_per_stage.entry(stage.to_string()).or_default() += 1;
        }
        self.redraw(stage);
    }

    fn stop(&mut self, stage: &str, address: &str) {
        if self.running.remove(address)
            && let Some(n) = self.running_per_stage.get_mut(stage)
        {
            *n = n.saturating_sub(1);
        }
        self.redraw(stage);
    }

    fn node_finished(&mut self, f: &NodeFinished) {
        self.stop(&f.stage, &f.address);
        match f.outcome {
            Outcome::Done if !self.terminal() => {
                let detail = match &f.shared_with {
                    Some(w) => format!("{} (same key as {w})", f.detail),
                    None => f.detail.clone(),
                };
                self.line(format!("done    {}  {detail}", f.address));
            }
            Outcome::Done | Outcome::Cancelled => {}
            Outcome::Failed => self.line(format!("FAILED  {}  {}", f.address, f.detail)),
            Outcome::NotRun => self.line(format!("not run (budget)  {}  {}", f.address, f.detail)),
        }
    }

    /// The bar of `stage`: its length is the plan's count (at most, while estimated) or, once
    /// the stage ended, what it really had; its position the nodes that ended.
    fn redraw(&self, stage: &str) {
        let Sink::Terminal { bars, .. } = &self.sink else {
            return;
        };
        let Some(b) = bars.get(stage) else { return };
        let c = self.tally.get(stage);
        let running = self.running_per_stage.get(stage).copied().unwrap_or(0);
        let ended = c.total();
        let planned = self
            .plans
            .get(stage)
            .map_or(0, |p| p.to_run + p.cached + p.shared);
        let finished = self.finished.contains(stage);
        let len = if finished {
            ended
        } else {
            planned.max(ended + running)
        };
        b.set_length(len);
        b.set_position(ended);
        let estimated = !finished && self.plans.get(stage).is_some_and(|p| p.estimated);
        b.set_message(format!(
            "{}{}",
            counts_text(&c, Some(running)),
            if estimated { " (total at most)" } else { "" }
        ));
    }

    fn load(&mut self, line: &str) {
        if self.quiet || self.last_load == line {
            return;
        }
        match &mut self.sink {
            Sink::Terminal { mp, load, .. } => {
                let bar = load.get_or_insert_with(|| {
                    let b = mp.add(ProgressBar::new_spinner());
                    b.set_style(ProgressStyle::with_template("{msg}").expect("template is valid"));
                    b
                });
                bar.set_message(line.to_string());
            }
            Sink::Lines { load_printed } => {
                if load_printed.is_some_and(|t| t.elapsed() < Duration::from_secs(10)) {
                    return;
                }
                *load_printed = Some(Instant::now());
                eprintln!("{line}");
            }
            Sink::Json => {}
        }
        self.last_load = line.to_string();
    }

    /// A progress or note line (not when quiet).
    fn line(&self, text: String) {
        if !self.quiet {
            self.always(text);
        }
    }

    /// A line on stderr, drawn above the bars on a terminal.
    fn always(&self, text: String) {
        match &self.sink {
            Sink::Terminal { mp, .. } => {
                let _ = mp.println(text);
            }
            _ => eprintln!("{text}"),
        }
    }

    fn run_finished(&mut self, r: &RunFinished) {
        if let Sink::Terminal { bars, load, .. } = &self.sink {
            // Abandoned, not finished: a finished bar is drawn full, which after Ctrl-C would
            // claim work that never ran.
            for b in bars.values() {
                b.abandon();
            }
            if let Some(b) = load {
                b.abandon();
            }
        } else if !self.quiet {
            let parts: Vec<String> = r
                .stages
                .iter()
                .map(|c| format!("{}: {}", c.stage, counts_text(c, None)))
                .collect();
            eprintln!("summary  {}", parts.join("; "));
        }
        let mut stdout = std::io::stdout().lock();
        for report in &r.reports {
            let _ = write!(stdout, "{}", headline_table(report));
            let _ = writeln!(stdout, "report: {}", report.path);
            if let Some(p) = &report.promotion {
                let _ = writeln!(stdout, "promotion: {p}");
            }
            for w in &report.warnings {
                eprintln!("warning: {}: {w}", report.path);
            }
        }
        let _ = stdout.flush();
        drop(stdout);
        if let (Some(remote), false) = (&r.remote, self.quiet) {
            eprintln!(
                "remote cache: {} served ({} blobs, {}), {} uploaded",
                remote.served,
                remote.blobs,
                bytesize::ByteSize(remote.bytes).display().iec(),
                remote.uploaded
            );
        }
        if !r.failures.is_empty() {
            eprintln!(
                "{} nodes failed (not cached; the next apply retries them):",
                r.failures.len()
            );
            for f in &r.failures {
                eprintln!("  {}: {}", f.address, f.error);
                eprintln!("      inspect: {}", f.inspect);
            }
        }
        if r.status == super::event::RunStatus::Interrupted {
            eprintln!("interrupted: completed work is kept; run apply again to resume");
        }
    }
}

/// `cached 3 running 1 done 2 ...` (bars, with `running`) or `3 cached, 2 done, ...` (the
/// summary line).
fn counts_text(c: &StageCounts, running: Option<u64>) -> String {
    let mut parts = Vec::new();
    let mut part = |n: u64, what: &str, always: bool| {
        if always || n > 0 {
            parts.push(match running {
                Some(_) => format!("{what} {n}"),
                None => format!("{n} {what}"),
            });
        }
    };
    part(c.cached, "cached", true);
    part(c.remote, "remote", false);
    if let Some(r) = running {
        part(r, "running", true);
    }
    part(c.done, "done", true);
    part(c.shared, "shared", false);
    part(c.failed, "failed", true);
    part(
        c.not_run,
        if running.is_some() {
            "not run"
        } else {
            "not run (budget)"
        },
        false,
    );
    part(c.cancelled, "cancelled", false);
    parts.join(if running.is_some() { " " } else { ", " })
}

/// The headline table of a report: team, resolved of total, rate with its interval, cost.
pub fn headline_table(r: &ReportSummary) -> String {
    if r.teams.is_empty() {
        return String::new();
    }
    let rows: Vec<[String; 4]> = r.teams.iter().map(headline_row).collect();
    let head = [
        "team".to_string(),
        "resolved".to_string(),
        "rate [95% CI]".to_string(),
        "cost".to_string(),
    ];
    let mut widths = head.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&head).chain(&rows) {
        let line = format!(
            "{:<w0$}  {:>w1$}  {:<w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn headline_row(t: &TeamHeadline) -> [String; 4] {
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    let rate = format!(
        "{} [{}, {}] {}",
        pct(t.rate),
        pct(t.ci_low),
        pct(t.ci_high),
        t.interval
    );
    let cost = if t.cost_lower_bound {
        format!(
            "≥ ${:.2} ({} of {} runs priced)",
            t.cost_usd, t.priced_runs, t.runs
        )
    } else {
        format!("${:.2}", t.cost_usd)
    };
    let mut resolved = format!("{}/{}", t.resolved, t.tasks);
    if t.errored > 0 {
        resolved.push_str(&format!(" ({} errored)", t.errored));
    }
    [t.team.clone(), resolved, rate, cost]
}

fn short(id: &str) -> &str {
    let h = id.strip_prefix("sha256:").unwrap_or(id);
    &h[..12.min(h.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headline_table_aligns_its_columns_and_marks_lower_bounds() {
        let team = |name: &str, resolved, lower| TeamHeadline {
            team: name.into(),
            resolved,
            tasks: 8,
            rate: resolved as f64 / 8.0,
            ci_low: 0.1,
            ci_high: 0.9,
            interval: "wilson".into(),
            cost_usd: 1.5,
            cost_lower_bound: lower,
            priced_runs: if lower { 3 } else { 8 },
            runs: 8,
            errored: 0,
        };
        let text = headline_table(&ReportSummary {
            path: "r/report.md".into(),
            teams: vec![team("oracle", 8, false), team("fixer", 3, true)],
            promotion: None,
            warnings: Vec::new(),
        });
        assert_eq!(
            text,
            "team    resolved  rate [95% CI]                 cost\n\
             oracle       8/8  100.0% [10.0%, 90.0%] wilson  $1.50\n\
             fixer        3/8  37.5% [10.0%, 90.0%] wilson   ≥ $1.50 (3 of 8 runs priced)\n"
        );
    }

    #[test]
    fn counts_read_as_the_plan_counts() {
        let c = StageCounts {
            stage: "grade".into(),
            cached: 1,
            done: 17,
            shared: 15,
            not_run: 2,
            ..Default::default()
        };
        assert_eq!(
            counts_text(&c, None),
            "1 cached, 17 done, 15 shared, 0 failed, 2 not run (budget)"
        );
        assert_eq!(
            counts_text(&c, Some(3)),
            "cached 1 running 3 done 17 shared 15 failed 0 not run 2"
        );
    }
}
