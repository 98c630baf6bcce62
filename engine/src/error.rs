//! Errors the engine reports about a job: what is wrong, where, and what to do next.

use std::fmt;

use schemars::JsonSchema;
use serde::Serialize;

/// One problem with a job, tied to the key at fault when there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct JobError {
    /// The job key at fault (`iodepth`), or `None` for the job as a whole.
    pub key: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

impl JobError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: Some(key.into()),
            message: message.into(),
            hint: None,
        }
    }

    pub fn whole(message: impl Into<String>) -> Self {
        Self {
            key: None,
            message: message.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "`{key}`: {}", self.message)?,
            None => write!(f, "{}", self.message)?,
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// Every problem found in a job, reported together so one edit fixes them all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct JobErrors(pub Vec<JobError>);

impl fmt::Display for JobErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl From<JobError> for JobErrors {
    fn from(e: JobError) -> Self {
        Self(vec![e])
    }
}

/// Why a job that was valid could not run to the end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The job is wrong for the target it found (e.g. `bs` misaligned for this device).
    #[error("{0}")]
    Job(#[from] JobErrors),
    /// The operating system refused something the job needs.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl RunError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<JobError> for RunError {
    fn from(e: JobError) -> Self {
        Self::Job(e.into())
    }
}
