//! The commands, one file each (as uv's `commands/`), and their dispatcher: each loads what it needs, calls the library, prints data on stdout and
//! diagnostics on stderr, and returns an exit code (see `exit_codes.rs`).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use miette::{GraphicalReportHandler, GraphicalTheme, Report, miette};

use crate::cli::{Cli, Command};
use crate::events::{Events, Format, Reporter};
use crate::exit_codes;
use crate::graph::{Graph, Mode};
use crate::manifest::{self, Manifest};
use crate::run;
use crate::run::sequence::resolve_images;
use crate::store::{Store, default_store_path};

mod cache;
mod clean;
mod export;
mod gc;
mod mine;
mod parse_log;
mod plan;
mod pull;
mod report;
mod status;
mod tasks;
mod verify;
mod worker;

/// Prints an error with miette: colours and unicode on a terminal, plain text otherwise.
pub fn print_error(report: &Report) {
    let tty = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let theme = if tty {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let mut out = String::new();
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
    if handler.render_report(&mut out, report.as_ref()).is_err() {
        out = format!("{report:?}");
    }
    eprint!("{out}");
}

fn load(file: &Path) -> Result<Manifest, Report> {
    manifest::load(file).map_err(Report::new)
}

fn store_path(cli_store: &Option<PathBuf>, m: &Manifest) -> PathBuf {
    cli_store
        .clone()
        .unwrap_or_else(|| default_store_path(&m.dir))
}

/// Runs a command.
pub fn run(cli: Cli) -> Result<u8, Report> {
    match &cli.command {
        Command::Validate { file } => {
            let m = load(file)?;
            println!(
                "{}: valid ({} stages, {} teams)",
                file.display(),
                m.stages.len(),
                m.teams.len()
            );
            Ok(exit_codes::OK)
        }
        Command::Schema { report, events } => {
            if *events {
                print!("{}", crate::events::events_schema_text());
            } else if *report {
                print!("{}", crate::report::document::report_schema_text());
            } else {
                print!("{}", manifest::manifest_schema_text());
            }
            Ok(exit_codes::OK)
        }
        Command::Report { files, json } => report::compare_reports(&cli, files, *json),
        Command::Plan {
            file,
            explain,
            json,
            detect,
            baseline_rate,
            rerun,
            timeout,
        } => {
            let power = plan::power_query(detect.as_deref(), baseline_rate.as_deref())?;
            let rerun = rerun.as_deref().map(|r| (r, timeout.as_deref()));
            plan::plan(&cli, file, *explain, *json, power, rerun)
        }
        Command::Apply {
            file,
            quiet,
            verify,
            strict,
            message_format,
            rerun,
            timeout,
        } => {
            let format = match message_format {
                crate::cli::MessageFormat::Human => Format::Human,
                crate::cli::MessageFormat::Json => Format::Json,
            };
            run::sequence::apply_manifest(
                cli.store.as_deref(),
                file,
                Events::new(Reporter::new(format, *quiet))
                    .with_sink(Box::new(run::EventLog::new())),
                run::sequence::ApplyFlags {
                    verify: *verify,
                    strict: *strict,
                    rerun: rerun.as_deref(),
                    timeout: timeout.as_deref(),
                },
            )
        }
        Command::Verify { file } => verify::verify(&cli, file),
        Command::Status {
            file,
            node: Some(address),
            json,
        } => status::status_node(&cli, file, address, *json),
        Command::Status { file, json, .. } => status::status(&cli, file, *json),
        Command::Gc {
            files,
            delete,
            keep_runs,
            images,
            pulled,
            json,
        } => gc::gc(
            &cli,
            files,
            (*delete, *keep_runs),
            (*images, *pulled),
            *json,
        ),
        Command::Pull { file, quiet } => pull::pull(&cli, file, *quiet),
        Command::Tasks { file, json } => tasks::tasks(&cli, file, *json),
        Command::Export { file, teams, out } => export::export(&cli, file, teams, out.as_deref()),
        Command::Clean { file } => clean::clean(file.as_deref()),
        Command::Mine {
            repo,
            since,
            grep,
            out,
            limit,
            timeout,
        } => mine::mine(repo, since.as_deref(), grep, out, *limit, timeout),
        Command::ParseLog {
            parser,
            script,
            file,
        } => parse_log::parse_log(parser.as_deref(), script.as_deref(), file),
        Command::Cache { action } => cache::run(&cli, action),
        Command::Worker { .. } => worker::run(&cli.command),
        Command::View {
            target,
            port,
            static_dir,
            compare,
        } => crate::view::command(
            cli.store.as_deref(),
            target,
            compare.as_deref(),
            *port,
            static_dir.as_deref(),
        ),
    }
}

/// What every command that reads results works from: the manifest with its backend facts
/// resolved (docker image IDs), its store (if one exists), and its datasets.
struct Loaded {
    m: Manifest,
    store_root: PathBuf,
    store: Option<Store>,
    datasets: BTreeMap<String, crate::tasks::TaskSet>,
    unavailable: Vec<String>,
}

/// Loads a manifest, opens its existing store, reads its datasets (without fetching) and
/// resolves its backend facts: the same for plan, status, report, export and gc, so all of
/// them compute the keys apply computes.
fn load_for_reading(cli_store: &Option<PathBuf>, file: &Path) -> Result<Loaded, Report> {
    let mut m = load(file)?;
    let store_root = store_path(cli_store, &m);
    let store = Store::open_existing(&store_root);
    let (datasets, unavailable) =
        run::load_datasets(&m, store.as_ref(), false).map_err(|e| miette!("{e}"))?;
    resolve_images(&mut m, &datasets, &Events::default())?;
    Ok(Loaded {
        m,
        store_root,
        store,
        datasets,
        unavailable,
    })
}

/// A graph of `l` in plan mode, expanded as far as the store allows.
fn planned<'a>(l: &'a Loaded) -> Result<Graph<'a>, Report> {
    let mut graph =
        Graph::new(&l.m, l.store.as_ref(), &l.datasets, Mode::Plan).map_err(|e| miette!("{e}"))?;
    while !graph.advance().is_empty() {}
    Ok(graph)
}
