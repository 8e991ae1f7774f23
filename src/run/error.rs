//! Why the dispatcher of `bench apply` stopped before its last event, typed by what the user
//! does next: make the store writable and apply again (every result stored so far is kept), or
//! report a bench bug (applying again does not help). A node's own failure is not one of these:
//! it is a [`crate::stages::WorkError`], reported with its node, and the apply goes on.

use crate::store::StoreError;

/// Why an apply stopped early.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ApplyError {
    /// The store could not be read or written (a full disk, a permission, a file replaced
    /// underneath).
    #[error("the store: {0}")]
    #[diagnostic(help(
        "every result stored before this is kept; apply again once the store can be written"
    ))]
    Store(#[from] StoreError),
    /// The experiment's graph could not be built from the manifest and the datasets.
    #[error("{0}")]
    Graph(String),
    #[error("cannot watch SIGTERM: {0}")]
    Signal(#[source] std::io::Error),
    /// A state the code should never reach.
    #[error("{0}")]
    #[diagnostic(
        code(bench::bug),
        help(
            "this is a bench bug: please report it with the command and `bench status` of the manifest"
        )
    )]
    Bug(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::Diagnostic;

    #[test]
    fn each_error_says_what_to_do_next() {
        let bug = ApplyError::Bug("work is queued but no pool slot is free".into());
        assert_eq!(bug.code().unwrap().to_string(), "bench::bug");
        assert!(bug.help().unwrap().to_string().contains("report it"));
        let store = ApplyError::Store(StoreError::Io(std::io::Error::other(
            "failed to write file `/s/runs/x.json`: No space left on device",
        )));
        assert!(store.to_string().contains("/s/runs/x.json"), "{store}");
        assert!(store.help().unwrap().to_string().contains("apply again"));
    }
}
