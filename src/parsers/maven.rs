//! Maven Surefire console logs (`mvn test`), Surefire 2.x and 3.x.
//!
//! Surefire prints one line per test that did not pass — and, with
//! `-Dsurefire.reportFormat=plain`, one line per test:
//!
//! ```text
//! [INFO] com.example.AppTest.adds -- Time elapsed: 0.001 s                    (3.x)
//! [ERROR] com.example.AppTest.broken -- Time elapsed: 0.01 s <<< FAILURE!     (3.x)
//! [ERROR] com.example.AppTest.boom -- Time elapsed: 0 s <<< ERROR!            (3.x)
//! [WARNING] com.example.AppTest.later -- Time elapsed: 0 s <<< SKIPPED!       (3.x)
//! broken(com.example.AppTest)  Time elapsed: 0.01 sec  <<< FAILURE!           (2.x)
//! ```
//!
//! `<<< FAILURE!` and `<<< ERROR!` → fail, `<<< SKIPPED!` → skip, no marker → pass, except
//! that a 3.x line without marker at `[WARNING]` level is a skip.
//!
//! # Naming
//!
//! `<fully.qualified.Class>.<method>` — the 3.x form as printed; 2.x's `method(Class)` is
//! rewritten to the same form, which is also the [`junit_xml`](super::junit_xml) naming for
//! Surefire reports. JUnit 5 parameterised tests keep their suffix (`adds(int)[1]`).
//!
//! # Limits
//!
//! With the default (brief) report format passing tests are not listed at all, so they are
//! missing from the result: use `-Dsurefire.reportFormat=plain`, or parse
//! `cat target/surefire-reports/*.xml` with `junit-xml`. The per-class summary lines and the
//! `Failures:`/`Tests in error:` digest at the end (which abbreviate class names) are not
//! read. SWE-bench's Maven mode (one `-Dtest=X` per run, `BUILD SUCCESS`/`FAILURE` as its
//! status) is not implemented.

use std::sync::OnceLock;

use regex::Regex;

use super::common::{Collector, TestStatus, lines};

fn v3_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?:\[(INFO|WARNING|WARN|ERROR)\]\s+)?(\S.*?) -- Time elapsed: \S+ s(?:ec)?(?:\s+<<< (FAILURE|ERROR|SKIPPED)!)?\s*$",
        )
        .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

fn v2_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?:\[(INFO|WARNING|WARN|ERROR)\]\s+)?(\S.*)\(([^()\s]+)\)\s+Time elapsed: \S+ s(?:ec)?(?:\s+<<< (FAILURE|ERROR|SKIPPED)!)?\s*$",
        )
        .unwrap_or_else(|e| panic!("invalid built-in regex: {e}"))
    })
}

fn status_of(level: Option<&str>, marker: Option<&str>) -> TestStatus {
    match marker {
        Some("FAILURE" | "ERROR") => TestStatus::Fail,
        Some(_) => TestStatus::Skip,
        None if matches!(level, Some("WARNING" | "WARN")) => TestStatus::Skip,
        None => TestStatus::Pass,
    }
}

pub(crate) fn parse(log: &str, out: &mut Collector) {
    for line in lines(log) {
        if !line.contains("Time elapsed: ") {
            continue;
        }
        if let Some(c) = v3_re().captures(line) {
            if let Some(name) = c.get(2) {
                let status = status_of(c.get(1).map(|m| m.as_str()), c.get(3).map(|m| m.as_str()));
                out.record(name.as_str(), status);
            }
        } else if let Some(c) = v2_re().captures(line)
            && let (Some(method), Some(class)) = (c.get(2), c.get(3))
        {
            let status = status_of(c.get(1).map(|m| m.as_str()), c.get(4).map(|m| m.as_str()));
            out.record(format!("{}.{}", class.as_str(), method.as_str()), status);
        }
    }
}
