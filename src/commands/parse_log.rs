//! `bench parse-log`: a test log through a built-in parser or a dataset's script.

use std::path::Path;

use miette::{IntoDiagnostic, Report, miette};

use crate::exit_codes;

pub(super) fn parse_log(
    parser: Option<&str>,
    script: Option<&Path>,
    file: &Path,
) -> Result<u8, Report> {
    crate::timings::mark("start");
    match (parser, script) {
        (Some(p), None) => {
            // Line-local parsers read the file in chunks (a big one in a piece per core); the
            // JSON is written as it renders.
            let f = fs_err::File::open(file).into_diagnostic()?;
            let size = f.metadata().map_or(0, |m| m.len());
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            crate::parsers::write_log_json(p, f.file(), size, None, &mut out).map_err(
                |e| match e {
                    crate::parsers::ReadLogError::Parser(_) => miette!(
                        help = format!(
                            "built-in parsers: {}",
                            crate::parsers::builtin_parser_names().join(", ")
                        ),
                        "{e}"
                    ),
                    _ => miette!("{e}"),
                },
            )?;
            std::io::Write::flush(&mut out).into_diagnostic()?;
        }
        (None, Some(s)) => {
            let bytes = fs_err::read(file).into_diagnostic()?;
            // Valid UTF-8 (the usual case) is taken as is, without the slower lossy pass.
            let log = match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            };
            let source = fs_err::read_to_string(s).into_diagnostic()?;
            let raw = crate::parsers::run_script_parser(&source, &log, &Default::default())
                .map_err(|e| miette!("parser script {} failed: {e}", s.display()))?;
            let statuses = raw
                .iter()
                .map(|(k, v)| (k.clone(), crate::protocols::script_status(v)))
                .collect();
            println!("{}", crate::parsers::statuses_to_json(&statuses));
        }
        _ => {
            return Err(miette!(
                help = "e.g. bench parse-log --parser pytest test.log",
                "give --parser NAME or --script FILE"
            ));
        }
    }
    Ok(exit_codes::OK)
}
