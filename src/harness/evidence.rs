//! Whether an agent run is a result or an infrastructure error, judged from what the agent
//! recorded (its usage report, its trajectory), never from its exit code: a run that reached its
//! model is a result whatever its exit (a crash after spending is an outcome, with its cost); a
//! run that recorded no model call is an error, named by the agent's own error message, so the
//! next apply retries it; so is a run whose every model call the API refused (a bad key, no
//! quota, a rate limit), even when bench's timeout, not the CLI, ended it while it retried. Not
//! where usage is parsed (`usage.rs`) nor priced (`pricing.rs`).

use super::usage::{Usage, is_refusal, reached_model};

/// How much of an agent's output names its failure when it reported no error of its own.
const TAIL_LINES: usize = 3;
const TAIL_CHARS: usize = 400;

/// `Ok` when the run is a result; `Err` with the reason (the agent's own words) when it never
/// reached its model. `usage` is what the harness's usage format read from the output and the
/// CLI's transcript (`None`: no report at all). A timed-out run is a result (the clock, not the
/// model, ended it) unless all it recorded is the API refusing it.
pub fn judge(
    usage: Option<&Usage>,
    exit_code: Option<i32>,
    timed_out: bool,
    output: &str,
) -> Result<(), String> {
    if usage.is_some_and(reached_model) {
        return Ok(());
    }
    let own = usage
        .and_then(|u| u.error.as_deref())
        .map(str::trim)
        .filter(|e| !e.is_empty());
    if timed_out {
        return match own.filter(|e| is_refusal(e)) {
            Some(e) => Err(format!(
                "no model call recorded: the model API refused every call until bench's timeout stopped it: {e}"
            )),
            None => Ok(()),
        };
    }
    let why = match own {
        Some(e) => e.to_string(),
        None => {
            let tail = tail(output);
            let exit = match exit_code {
                Some(0) => "it exited 0".to_string(),
                Some(c) => format!("it exited with code {c}"),
                None => "it was killed by a signal".to_string(),
            };
            if tail.is_empty() {
                format!("{exit} and printed nothing")
            } else {
                format!("{exit}; its output ends: {tail}")
            }
        }
    };
    Err(format!("no model call recorded: {why}"))
}

/// The last few non-empty lines of `output`, joined, capped.
fn tail(output: &str) -> String {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let text = lines[lines.len().saturating_sub(TAIL_LINES)..].join(" | ");
    if text.chars().count() > TAIL_CHARS {
        let skip = text.chars().count() - TAIL_CHARS;
        format!("...{}", text.chars().skip(skip).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spending_makes_a_result_whatever_the_exit() {
        let spent = Usage {
            input_tokens: 2459,
            calls: 2,
            error: Some("AuthenticationError: bad key".into()),
            ..Default::default()
        };
        assert_eq!(judge(Some(&spent), Some(1), false, ""), Ok(()));
        assert_eq!(judge(Some(&spent), Some(0), false, ""), Ok(()));
    }

    #[test]
    fn no_spend_is_an_error_named_by_the_agent() {
        let refused = Usage {
            error: Some("litellm.AuthenticationError: Incorrect API key".into()),
            ..Default::default()
        };
        // aider exits 0 after an auth error: still an error.
        let e = judge(Some(&refused), Some(0), false, "whatever").unwrap_err();
        assert_eq!(
            e,
            "no model call recorded: litellm.AuthenticationError: Incorrect API key"
        );
        // No report at all: the output's tail names it.
        let e = judge(None, Some(1), false, "Setup...\n\nAborted.\n").unwrap_err();
        assert_eq!(
            e,
            "no model call recorded: it exited with code 1; its output ends: Setup... | Aborted."
        );
        assert_eq!(
            judge(None, Some(0), false, "").unwrap_err(),
            "no model call recorded: it exited 0 and printed nothing"
        );
    }

    #[test]
    fn a_timeout_is_a_result_unless_every_call_was_refused() {
        assert_eq!(judge(None, None, true, ""), Ok(()));
        let hung = Usage {
            error: Some("stream disconnected before completion".into()),
            ..Default::default()
        };
        assert_eq!(judge(Some(&hung), None, true, ""), Ok(()));
        let refused = Usage {
            error: Some("401 invalid x-api-key".into()),
            ..Default::default()
        };
        let e = judge(Some(&refused), None, true, "").unwrap_err();
        assert!(
            e.contains("refused every call until bench's timeout"),
            "{e}"
        );
        assert!(e.ends_with("401 invalid x-api-key"), "{e}");
        // A call answered before the refusals: a result.
        let answered = Usage {
            calls: 1,
            input_tokens: 10,
            ..refused
        };
        assert_eq!(judge(Some(&answered), None, true, ""), Ok(()));
    }
}
