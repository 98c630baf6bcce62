//! fslab-engine: runs one storage job and measures it.
//!
//! `spec` reads the job; one module per kind runs it (`block`, `files`, `app`) through
//! the shared `harness`; `record` + `series` measure it; `report` is the JSON that comes
//! out, and `diagnostics` the warnings in it; `steady` says when a job may stop early;
//! `merge` makes several reports one.

pub mod app;
pub mod beneath;
pub mod block;
pub mod buffers;
pub mod clock;
pub mod cpu;
pub mod diagnostics;
pub mod errno;
pub mod error;
pub mod files;
pub mod fio;
pub mod harness;
pub mod input;
pub mod io;
pub mod layout;
pub mod merge;
pub mod record;
pub mod report;
pub mod series;
pub mod spec;
pub mod steady;
pub mod units;

use crate::diagnostics::Warning;
use crate::error::{JobError, RunError};
use crate::harness::Flags;
use crate::report::{Report, SeriesPoint};
use crate::spec::{Job, Kind};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Runs a resolved job to its end (or until `flags.stop`), calling `on_point` for each
/// point of the time series as it completes.
pub fn run(
    job: Job,
    warnings: Vec<Warning>,
    flags: &Flags,
    on_point: &mut dyn FnMut(&SeriesPoint),
) -> Result<Report, RunError> {
    // Only a block job knows how to keep its files beneath a directory; the others
    // would open theirs by path.
    if job.beneath.is_some() && job.kind != Kind::Block {
        return Err(JobError::new(
            "kind",
            "only a block job can be confined to a directory (--within)",
        )
        .into());
    }
    match job.kind {
        Kind::Block => block::run(job, warnings, flags, on_point),
        Kind::Files => files::run(job, warnings, flags, on_point),
        Kind::Oltp | Kind::Mailstore => app::run(job, warnings, flags, on_point),
    }
}
