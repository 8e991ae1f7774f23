use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // A local sandbox's jail runs bench as its commands' server (backend/jail_server.rs).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == bench::backend::jail_server::SERVE_ARG)
    {
        return match bench::backend::jail_server::serve() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench: the jail's server failed: {e}");
                ExitCode::from(bench::exit_codes::ERROR)
            }
        };
    }
    quiet_on_closed_stdout();
    let cli = bench::cli::Cli::parse();
    match bench::commands::run(cli) {
        Ok(code) => {
            bench::timings::mark("returned");
            bench::timings::usage();
            ExitCode::from(code)
        }
        Err(report) => {
            bench::commands::print_error(&report);
            ExitCode::from(bench::exit_codes::ERROR)
        }
    }
}

/// A reader that stops early (`bench plan --explain FILE | head -1`) ends bench as it ends any
/// Unix filter: quietly, with the exit code of a process killed by SIGPIPE. Rust ignores SIGPIPE
/// (so a socket or a child's closed stdin is an error, not a death), which makes `println!`
/// panic on a closed stdout; that one panic is turned into the quiet exit, every other panic
/// is reported as before.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(i32::from(bench::exit_codes::STDOUT_CLOSED));
        }
        default(info);
    }));
}

#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
