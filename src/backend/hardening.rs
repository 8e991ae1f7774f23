//! The hardening of grading containers (SWE-Bench Pro V2's locked grader, seed 001): every
//! capability dropped except the file-ownership and process ones a root test run needs,
//! `no-new-privileges`, no swap beyond the memory limit (the PID limit is the backend's `pids`,
//! already in every docker key). It changes what a candidate's code can do while it is graded,
//! so it is part of every grade key on docker ([`crate::jobs::GradeJob::hardening`]); the
//! backend applies exactly the value the job holds.
//!
//! Applied to the grading containers of every protocol, not only SWE-bench Pro: grading is
//! where a candidate's code runs under bench's locked protocol. Agent containers are not
//! hardened yet (their CLIs' installs and network policy are not built for it).

use serde::{Deserialize, Serialize};

/// Container options that restrict a grading sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hardening {
    /// Bumped when the meaning of the other fields changes.
    pub version: u32,
    /// The capabilities kept; every other one is dropped (`cap_drop = ["ALL"]`).
    pub capabilities: Vec<String>,
    /// `security_opt = ["no-new-privileges"]`: setuid binaries gain nothing.
    pub no_new_privileges: bool,
    /// `memory_swap = memory`: no swap beyond the memory limit.
    pub no_swap: bool,
}

impl Hardening {
    /// The hardening bench applies to grading containers.
    pub fn grading() -> Hardening {
        Hardening {
            version: 1,
            // File ownership (chown, permission overrides, setgid bits) and process control
            // (kill, setuid/setgid for test runners that drop privileges); not MKNOD, NET_RAW,
            // NET_BIND_SERVICE, SETFCAP, SETPCAP, SYS_CHROOT, AUDIT_WRITE (Docker's other
            // defaults).
            capabilities: [
                "CHOWN",
                "DAC_OVERRIDE",
                "FOWNER",
                "FSETID",
                "KILL",
                "SETGID",
                "SETUID",
            ]
            .map(String::from)
            .to_vec(),
            no_new_privileges: true,
            no_swap: true,
        }
    }
}
