//! Warnings: things that may make a job's numbers mean less than they seem, each with
//! advice. They live apart from `report` because `spec` warns too (about keys a job
//! ignores) and must not depend on the output types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a warning is about: a stable identifier the lab can match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// The job sets a key that has no effect (e.g. `rwmixread` without a mixed `rw`).
    IgnoredKey,
    /// The measured part of the job took under a second: start-up and caching dominate.
    ShortRun,
    /// `steady_state = true`, but the rate did not settle before `runtime` ran out.
    NotSteady,
    /// `verify = true`, and some blocks read back corrupt, misplaced, stale or unreadable
    /// (the counts are in the report's `verify`).
    VerifyFailed,
    /// A rate-limited job (`rate`, `rate_iops`) achieved less than the least it accepts
    /// (`rate_min`, `rate_iops_min`; else 95% of the rate asked).
    RateShort,
    /// A job with `continue_on_error` went on after failed I/Os (`errors_continued`).
    ErrorsContinued,
}

/// A typed warning with advice.
#[derive(Debug, Clone, Serialize, JsonSchema, Deserialize)]
pub struct Warning {
    /// Stable identifier: `ignored_key`, `short_run`, `not_steady`, `verify_failed`,
    /// `rate_short`, `errors_continued`.
    pub kind: WarningKind,
    pub message: String,
    pub hint: Option<String>,
}

impl Warning {
    pub fn new(kind: WarningKind, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}
