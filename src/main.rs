use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = bench::cli::Cli::parse();
    match bench::app::run(cli) {
        Ok(code) => {
            bench::timings::mark("returned");
            ExitCode::from(code)
        }
        Err(report) => {
            bench::app::print_error(&report);
            ExitCode::from(bench::exit_codes::ERROR)
        }
    }
}

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
