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
pub mod diskspd;
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
    // A files job made from a job file's file engine has its tree right inside the
    // directory (`<dir>/<name>.files`), which it opens without following a link.
    let tree_inside = job.kind == Kind::Files
        && job.dest.is_none()
        && job.directory.as_deref().is_some_and(|d| {
            let d = std::path::Path::new(d);
            d.parent() == job.beneath.as_deref()
                && d.file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with(".files"))
        });
    if job.beneath.is_some() && job.kind != Kind::Block && !tree_inside {
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
