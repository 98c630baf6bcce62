//! The keys every kind reads and those of block jobs (`kind = "block"`): threads,
//! timing, the I/O pattern and its target.

use std::collections::BTreeSet;
use std::time::Duration;

use super::parse::{duration, range, size};
use super::{
    BufferContent, IoEngine, Job, JobSpec, Kind, PatternJob, Rw, MAX_BS, MAX_IODEPTH, MAX_NUMJOBS,
    MIN_INTERVAL, VERIFY_BS_ALIGN,
};
use crate::error::JobError;

impl JobSpec {
    /// The keys every kind reads (threads, timing, the I/O shape), checked, as a `Job`
    /// whose kind-specific parts are still empty.
    pub(super) fn resolve_io(&self, kind: Kind, e: &mut Vec<JobError>) -> Job {
        let ioengine = self.ioengine.unwrap_or(if kind.is_app() {
            IoEngine::Sync
        } else {
            IoEngine::IoUring
        });
        let rw = self.rw.unwrap_or(Rw::Read);

        let rwmixread = self.rwmixread.unwrap_or(50);
        range("rwmixread", rwmixread, 0, 100, e);

        let bs = size("bs", &self.bs, e).unwrap_or(4096);
        range("bs", bs, 1, MAX_BS, e);
        // A database bypasses the page cache for its own; a block job measures it.
        let direct = self.direct.unwrap_or(kind.is_app());
        if direct && bs % 512 != 0 {
            e.push(
                JobError::new(
                    "bs",
                    format!("{bs} is not a multiple of 512, which `direct = true` needs"),
                )
                .hint("use a multiple of the device's logical block size, e.g. `4k`"),
            );
        }
        let size_percent = super::parse::share_of_target("size", &self.size, e);
        if size_percent.is_some() && kind != Kind::Block {
            e.push(
                JobError::new(
                    "size",
                    "in percent applies to block jobs (a share of the file or device)",
                )
                .hint("give the size in bytes"),
            );
        }
        let size_b = size("size", &self.size, e);
        if let Some(s) = size_b {
            if s < bs {
                e.push(JobError::new(
                    "size",
                    format!("{s} is smaller than `bs` ({bs}): no I/O fits"),
                ));
            }
        }
        let io_size = size("io_size", &self.io_size, e);
        if let Some(s) = io_size {
            if s < bs {
                e.push(JobError::new(
                    "io_size",
                    format!("{s} is smaller than `bs` ({bs}): no I/O fits"),
                ));
            }
        }

        let numjobs = self.numjobs.unwrap_or(1);
        range("numjobs", numjobs, 1, MAX_NUMJOBS, e);
        let iodepth = self.iodepth.unwrap_or(1);
        if ioengine == IoEngine::IoUring {
            range("iodepth", iodepth, 1, MAX_IODEPTH, e);
        } else if iodepth != 1 {
            let engine = serde_json::to_value(ioengine).unwrap_or_default();
            e.push(
                JobError::new(
                    "iodepth",
                    format!("{iodepth} is out of range (1..=1) for ioengine = {engine}, which has one request in flight per thread"),
                )
                .hint("use `ioengine = \"io_uring\"` for a queue depth above 1, or more `numjobs`"),
            );
        }

        // Like `iodepth`, 1 (the default) is accepted with any engine: the resolved job
        // echoes it for every engine, and that echo must be a valid job again.
        let batch_submit = match self.iodepth_batch_submit.unwrap_or(1) {
            0 => iodepth,
            n => n,
        };
        let queue = (ioengine, iodepth);
        batch_key("iodepth_batch_submit", batch_submit, queue, "submits", e);
        let batch_min = self.iodepth_batch_complete_min.unwrap_or(1);
        batch_key("iodepth_batch_complete_min", batch_min, queue, "reaps", e);

        let spin = duration("completion_spin", &self.completion_spin, e).unwrap_or(Duration::ZERO);
        if spin > Duration::ZERO && ioengine != IoEngine::IoUring {
            let engine = serde_json::to_value(ioengine).unwrap_or_default();
            e.push(
                JobError::new(
                    "completion_spin",
                    format!("only applies to `ioengine = \"io_uring\"`; ioengine = {engine} waits inside each call"),
                )
                .hint("leave it out, or use `ioengine = \"io_uring\"`"),
            );
        }
        if spin > Duration::from_millis(10) {
            e.push(
                JobError::new(
                    "completion_spin",
                    format!("{spin:?} is out of range (0 to 10ms)"),
                )
                .hint("a spin longer than a request only burns CPU: try 20us-50us"),
            );
        }

        let runtime = duration("runtime", &self.runtime, e);
        if runtime == Some(Duration::ZERO) {
            e.push(
                JobError::new("runtime", "0 is out of range (more than 0)")
                    .hint("leave `runtime` out for a size-based job"),
            );
        }
        if runtime.is_some() && io_size.is_some() {
            e.push(
                JobError::new("io_size", "cannot be combined with `runtime`")
                    .hint("a job is either time-based (`runtime`) or size-based (`io_size`)"),
            );
        }
        let ramp_time = duration("ramp_time", &self.ramp_time, e).unwrap_or(Duration::ZERO);
        let interval = duration("interval", &self.interval, e).unwrap_or(Duration::from_secs(1));
        if interval < MIN_INTERVAL {
            e.push(JobError::new(
                "interval",
                format!("{interval:?} is out of range (100ms or more)"),
            ));
        }
        let null_lat = duration("null_lat", &self.null_lat, e).unwrap_or(Duration::ZERO);
        if null_lat > Duration::ZERO && ioengine != IoEngine::Null {
            e.push(JobError::new(
                "null_lat",
                "only applies to `ioengine = \"null\"`",
            ));
        }
        if null_lat > Duration::from_secs(1) {
            e.push(JobError::new(
                "null_lat",
                format!("{null_lat:?} is out of range (0 to 1s)"),
            ));
        }

        if ioengine == IoEngine::Mmap && rw.trims() {
            e.push(
                JobError::new(
                    "rw",
                    "trims with `ioengine = \"mmap\"`, which only copies data in and out",
                )
                .hint("trim with `io_uring` or `sync`"),
            );
        }
        let writes_only = match ioengine {
            IoEngine::Ftruncate => Some("each write truncates the file to its offset"),
            IoEngine::E4defrag => Some("each write moves its range onto the donor's blocks"),
            _ => None,
        };
        if let Some(why) = writes_only.filter(|_| !matches!(rw, Rw::Write | Rw::Randwrite)) {
            let engine = serde_json::to_value(ioengine).unwrap_or_default();
            e.push(
                JobError::new(
                    "rw",
                    format!("{rw:?} with `ioengine = {engine}`, which only writes ({why})")
                        .to_lowercase(),
                )
                .hint("use `rw = \"write\"` or `\"randwrite\"`"),
            );
        }

        let fsync = self.fsync.unwrap_or(0);
        let fdatasync = self.fdatasync.unwrap_or(0);
        let end_fsync = self.end_fsync.unwrap_or(false);
        if fsync > 0 && fdatasync > 0 {
            e.push(
                JobError::new("fdatasync", "cannot be combined with `fsync`")
                    .hint("flush with one of them: `fsync` also writes the inode's times"),
            );
        }
        if (fsync > 0 || fdatasync > 0 || end_fsync) && !rw.writes() {
            e.push(
                JobError::new(
                    if fsync > 0 {
                        "fsync"
                    } else if fdatasync > 0 {
                        "fdatasync"
                    } else {
                        "end_fsync"
                    },
                    format!("has nothing to flush: rw = {:?} does not write", rw).to_lowercase(),
                )
                .hint("leave it out, or pick a `rw` that writes"),
            );
        }

        let name = self.name.clone().unwrap_or_else(|| "job".to_string());
        // A name becomes a file's only without `filename` (`<directory>/<name>.<thread>.0`).
        let names_a_file = self.filename.is_none();
        if name.is_empty() || (names_a_file && name.contains('/')) || name.contains('\0') {
            e.push(JobError::new(
                "name",
                format!("{name:?} cannot be used in a file name"),
            ));
        }

        // Offsets for the null engine need a range; it never touches it.
        let needs_target = ioengine != IoEngine::Null;
        let size_b = size_b.or(if needs_target || kind == Kind::Files {
            None
        } else {
            Some(1 << 30)
        });
        Job {
            name,
            rw,
            rwmixread,
            bs,
            size: size_b,
            size_percent,
            io_size: if runtime.is_some() {
                None
            } else {
                io_size.or(size_b)
            },
            filename: self.filename.clone(),
            directory: self.directory.clone(),
            numjobs,
            iodepth,
            iodepth_batch_submit: batch_submit,
            iodepth_batch_complete_min: batch_min,
            completion_spin: spin.as_secs_f64(),
            direct,
            runtime: runtime.map(|d| d.as_secs_f64()),
            ramp_time: ramp_time.as_secs_f64(),
            fsync,
            fdatasync,
            end_fsync,
            ioengine,
            buffer_content: self.buffer_content.unwrap_or(BufferContent::Random),
            randseed: self.randseed.unwrap_or(0x5eed),
            interval: interval.as_secs_f64(),
            allow_device_write: self.allow_device_write.unwrap_or(false),
            null_lat: null_lat.as_secs_f64(),
            kind,
            steady_state: false,
            steady: None,
            verify: false,
            verify_state: None,
            verify_backlog: 0,
            verify_read_back: false,
            pattern: PatternJob::default(),
            op: None,
            dest: None,
            create_first: false,
            loops: None,
            nr_files: None,
            file_size: None,
            size_dist: None,
            size_sigma: None,
            size_buckets: None,
            files_per_dir: None,
            dup_share: None,
            mutate_share: None,
            mode: None,
            app: None,
            beneath: None,
        }
    }

    /// `verify` and `verify_state`, checked against the rest of the block job: what would
    /// make a correct device look broken is refused here, before anything runs.
    pub(super) fn resolve_verify(&self, job: &mut Job, e: &mut Vec<JobError>) {
        job.verify = self.verify.unwrap_or(false);
        job.verify_state = self.verify_state.clone();
        job.verify_backlog = self.verify_backlog.unwrap_or(0);
        job.verify_read_back = self.verify_read_back.unwrap_or(false);
        if !job.verify {
            for (key, set) in [
                ("verify_state", job.verify_state.is_some()),
                ("verify_backlog", job.verify_backlog > 0),
                ("verify_read_back", job.verify_read_back),
            ] {
                if set {
                    e.push(
                        JobError::new(key, "only applies with `verify = true`")
                            .hint(format!("add `verify = true`, or remove `{key}`")),
                    );
                }
            }
            return;
        }
        if !job.rw.writes() {
            for (key, set) in [
                ("verify_backlog", job.verify_backlog > 0),
                ("verify_read_back", job.verify_read_back),
            ] {
                if set {
                    e.push(
                        JobError::new(key, "reads back what the job writes, and this job's `rw` writes nothing")
                            .hint(format!("remove `{key}`: a reading job with `verify` checks every block it reads")),
                    );
                }
            }
        }
        if job.verify_state.as_deref() == Some("") {
            e.push(JobError::new("verify_state", "is empty"));
        }
        if job.numjobs != 1 && job.verify_state.is_some() {
            e.push(
                JobError::new(
                    "verify_state",
                    format!("keeps the generations of one thread's blocks, and this job has `numjobs = {}`", job.numjobs),
                )
                .hint("use `numjobs = 1` with a deeper `iodepth`, or remove `verify_state`"),
            );
        }
        if job.bs < VERIFY_BS_ALIGN || job.bs % VERIFY_BS_ALIGN != 0 {
            e.push(
                JobError::new(
                    "verify",
                    format!(
                        "needs `bs` a multiple of {VERIFY_BS_ALIGN}, not {}: each block starts with a header, and a sector is the least a device writes whole",
                        job.bs
                    ),
                )
                .hint("use e.g. `bs = \"4k\"`"),
            );
        }
        if self.buffer_content == Some(BufferContent::Zeros) {
            e.push(
                JobError::new(
                    "verify",
                    "cannot be combined with `buffer_content = \"zeros\"`: verify writes its own content",
                )
                .hint("remove `buffer_content`"),
            );
        }
        if job.rw.trims() || job.ioengine.moves_no_data() {
            e.push(
                JobError::new(
                    "verify",
                    "has nothing to check: trims, `falloc`, `ftruncate` and `e4defrag` write no content",
                )
                .hint("verify a job that writes with `ioengine = \"io_uring\"` or `\"sync\"`"),
            );
        }
        if job.ioengine == IoEngine::Null {
            e.push(
                JobError::new(
                    "verify",
                    "has nothing to check with `ioengine = \"null\"`, which does no I/O",
                )
                .hint("use `ioengine = \"io_uring\"` or `\"sync\"` on a file or device"),
            );
        }
    }

    /// A block job needs something to do I/O on; no kind takes an empty path.
    pub(super) fn check_paths(&self, kind: Kind, ioengine: IoEngine, e: &mut Vec<JobError>) {
        let needs_target = ioengine != IoEngine::Null;
        if kind == Kind::Block
            && needs_target
            && self.filename.is_none()
            && self.directory.is_none()
            && self.read_iolog.is_none()
        {
            e.push(
                JobError::whole("missing target: the job names no `filename` and no `directory`")
                    .hint("add `filename = \"/path/to/file\"` (or a block device), or `directory = \"/path\"` for one file per thread"),
            );
        }
        for key in ["filename", "directory"] {
            let v = if key == "filename" {
                &self.filename
            } else {
                &self.directory
            };
            if v.as_deref() == Some("") {
                e.push(JobError::new(key, "is empty"));
            }
        }
    }

    /// Keys set that the job's `rw` ignores, for a warning.
    pub fn ignored_keys(&self) -> BTreeSet<&'static str> {
        let mut keys = BTreeSet::new();
        if self.rwmixread.is_some() && !self.rw.unwrap_or(Rw::Read).is_mixed() {
            keys.insert("rwmixread");
        }
        keys
    }
}

/// A batch size of an io_uring queue: 1..=`iodepth` there; any other engine takes only 1
/// (`does` says what it does with each request alone).
fn batch_key(
    key: &str,
    n: u32,
    (ioengine, iodepth): (IoEngine, u32),
    does: &str,
    e: &mut Vec<JobError>,
) {
    if ioengine == IoEngine::IoUring {
        range(key, n, 1, iodepth.max(1), e);
    } else if n != 1 {
        let engine = serde_json::to_value(ioengine).unwrap_or_default();
        e.push(
            JobError::new(
                key,
                format!("{n} only applies to `ioengine = \"io_uring\"`; ioengine = {engine} {does} each request alone (1)"),
            )
            .hint("leave it out, or use `ioengine = \"io_uring\"`"),
        );
    }
}
