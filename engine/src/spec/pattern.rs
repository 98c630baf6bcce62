//! A block job's pattern keys: sizes beyond one `bs`, where offsets land, the region
//! each thread works in, its pace, and what its writes contain; checked, with what the
//! workers make of them (`Job::shape`).

use super::parse::{duration, range, size};
use super::{BufferContent, Job, JobSpec, PatternJob, SignedSizeValue, MAX_BS};
use crate::block::distribution::{self, Law};
use crate::block::offsets::Shape;
use crate::block::sizes::{self, Sizes};
use crate::buffers;
use crate::error::JobError;
use crate::units::parse_size;

/// fio's default compressible unit.
pub const COMPRESS_CHUNK: u64 = 512;

/// The most files a thread may have (`nrfiles`): each is open for the whole job.
const MAX_NRFILES: u64 = 65_536;

/// How a thread with several files picks the file of each I/O (`file_service_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileService {
    /// The next file after every N I/Os.
    RoundRobin(u64),
    /// A whole pass over a file, then the next.
    Sequential,
    /// A file drawn uniformly after every N I/Os.
    Random(u64),
}

/// Reads `file_service_type` (fio's syntax).
pub fn file_service(text: &str) -> Result<FileService, String> {
    let t = text.trim();
    let kind = t.split(':').next().unwrap_or_default().trim();
    if matches!(kind, "zipf" | "pareto" | "normal" | "gauss") {
        return Err(format!(
            "`{t}`: a skewed choice of files is not supported (roundrobin, sequential, random are)"
        ));
    }
    let (kind, n) = match t.split_once(':') {
        Some((k, n)) => {
            let n: u64 = n.trim().parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                format!("`{t}`: the count after `:` must be a whole number above 0")
            })?;
            (k.trim(), Some(n))
        }
        None => (t, None),
    };
    match (kind, n) {
        ("roundrobin", n) => Ok(FileService::RoundRobin(n.unwrap_or(1))),
        ("sequential", None) => Ok(FileService::Sequential),
        ("random", n) => Ok(FileService::Random(n.unwrap_or(1))),
        _ => Err(format!("`{t}` is not a file service type")),
    }
}

impl Job {
    /// How each thread picks its files (`RoundRobin(1)` with one file).
    pub fn file_service(&self) -> FileService {
        self.pattern
            .file_service_type
            .as_deref()
            .and_then(|t| file_service(t).ok())
            .unwrap_or(FileService::RoundRobin(1))
    }
}

/// The least a region may be moved by (`offset`, `offset_increment`).
const SECTOR: u64 = 512;

fn signed_size(key: &str, v: &Option<SignedSizeValue>, e: &mut Vec<JobError>) -> Option<i64> {
    match v.as_ref()? {
        SignedSizeValue::Bytes(b) => Some(*b),
        SignedSizeValue::Text(t) => {
            let t = t.trim();
            let (neg, body) = match t.strip_prefix('-') {
                Some(b) => (true, b),
                None => (false, t.strip_prefix('+').unwrap_or(t)),
            };
            match parse_size(body) {
                Ok(b) if b <= i64::MAX as u64 => Some(if neg { -(b as i64) } else { b as i64 }),
                Ok(_) => {
                    e.push(JobError::new(key, format!("`{t}` is too large")));
                    None
                }
                Err(err) => {
                    e.push(
                        JobError::new(key, err.to_string()).hint(
                            "a size with an optional sign: `8k`, `-8k`, or bytes as a number",
                        ),
                    );
                    None
                }
            }
        }
    }
}

impl JobSpec {
    /// The pattern keys, checked against the rest of the block job (`job` is resolved
    /// but for them and verify).
    pub(super) fn resolve_pattern(&self, job: &mut Job, e: &mut Vec<JobError>) {
        let mut p = PatternJob::default();
        let verify = self.verify.unwrap_or(false);

        if self.bssplit.is_some() && self.bsrange.is_some() {
            e.push(
                JobError::new("bsrange", "cannot be combined with `bssplit`").hint(
                    "give one of them: a `bssplit` can list the sizes of a range with their shares",
                ),
            );
        }
        let mut mix = None;
        for (key, text, parse) in [
            (
                "bssplit",
                &self.bssplit,
                sizes::parse_split as fn(&str) -> _,
            ),
            ("bsrange", &self.bsrange, sizes::parse_range),
        ] {
            let Some(text) = text else { continue };
            match parse(text) {
                Ok(s) => {
                    mix = Some(s);
                    if key == "bssplit" {
                        p.bssplit = Some(text.trim().to_string());
                    } else {
                        p.bsrange = Some(text.trim().to_string());
                    }
                }
                Err(m) => e.push(JobError::new(key, m).hint(if key == "bssplit" {
                    "fio's syntax: `size/percent` joined by `:`, e.g. `\"4k/50:8k/30:64k/20\"`"
                } else {
                    "fio's syntax: `min-max`, e.g. `\"4k-64k\"`"
                })),
            }
            if verify {
                e.push(
                    JobError::new(
                        key,
                        "cannot be combined with `verify`: verify checks blocks of one size (`bs`)",
                    )
                    .hint("use one `bs` for a verify job"),
                );
            }
        }
        let [reads, writes] = mix.unwrap_or_else(|| [Sizes::fixed(job.bs), Sizes::fixed(job.bs)]);
        let used: Vec<&Sizes> = match (job.rw.reads(), job.rw.writes()) {
            (true, false) => vec![&reads],
            (false, true) => vec![&writes],
            _ => vec![&reads, &writes],
        };
        let key_of_sizes = if self.bsrange.is_some() {
            "bsrange"
        } else {
            "bssplit"
        };
        if p.bssplit.is_some() || p.bsrange.is_some() {
            for s in used.iter().flat_map(|s| s.all()) {
                if *s > MAX_BS {
                    e.push(JobError::new(
                        key_of_sizes,
                        format!("{s} is larger than the most an I/O may be ({MAX_BS})"),
                    ));
                } else if job.direct && s % 512 != 0 {
                    e.push(
                        JobError::new(
                            key_of_sizes,
                            format!("{s} is not a multiple of 512, which `direct = true` needs"),
                        )
                        .hint("use multiples of the device's logical block size"),
                    );
                }
            }
        }
        let smallest = used.iter().map(|s| s.min()).min().unwrap_or(job.bs);
        let largest = used.iter().map(|s| s.max()).max().unwrap_or(job.bs);

        if let Some(a) = size("blockalign", &self.blockalign, e) {
            if a == 0 {
                e.push(JobError::new(
                    "blockalign",
                    "0 is out of range (1 byte or more)",
                ));
            } else if job.direct && a % 512 != 0 {
                e.push(JobError::new(
                    "blockalign",
                    format!("{a} is not a multiple of 512, which `direct = true` needs"),
                ));
            } else {
                p.blockalign = Some(a);
            }
        }
        let align = p.blockalign.unwrap_or(smallest);
        if self.atomic == Some(true) && job.rw.writes() {
            // The kernel takes an atomic write only at an offset that is a multiple of
            // its size.
            if let Some(odd) = writes.all().iter().find(|s| !s.is_power_of_two()) {
                e.push(JobError::new(
                    "atomic",
                    format!("an atomic write's size must be a power of two, and {odd} is not"),
                ));
            } else if writes.max() > align {
                e.push(
                    JobError::new(
                        "atomic",
                        format!(
                            "a {}-byte atomic write must start at a multiple of its size, and offsets are aligned to {align}",
                            writes.max()
                        ),
                    )
                    .hint(format!("add `blockalign = {}`", writes.max())),
                );
            }
        }

        if let Some(text) = &self.random_distribution {
            match distribution::parse(text) {
                Ok(Law::Uniform) => {}
                Ok(_) => p.random_distribution = Some(text.trim().to_string()),
                Err(m) => e.push(JobError::new("random_distribution", m).hint(
                    "e.g. `\"zipf:1.2\"`, `\"pareto:0.2\"`, `\"normal:10\"`, `\"zoned:50/5:30/15:20/\"`",
                )),
            }
        }
        p.norandommap = self.norandommap.unwrap_or(false);

        p.offset = size("offset", &self.offset, e).filter(|&o| o > 0);
        p.offset_percent = super::parse::share_of_target("offset", &self.offset, e);
        p.offset_increment = size("offset_increment", &self.offset_increment, e).filter(|&o| o > 0);
        for (key, v) in [
            ("offset", p.offset),
            ("offset_increment", p.offset_increment),
        ] {
            // The offsets are aligned within the region, which may start anywhere a
            // sector does (fio's `offset=120k` with `bs=16k`); O_DIRECT's own alignment
            // is the target's to check.
            if v.is_some_and(|v| v % SECTOR != 0) {
                e.push(
                    JobError::new(
                        key,
                        format!("{} is not a multiple of {SECTOR}, a sector", v.unwrap_or(0)),
                    )
                    .hint("use a multiple of 512 (e.g. of `bs`)"),
                );
            }
        }
        if let Some(n) = self.number_ios {
            range("number_ios", n, 1, u64::MAX, e);
            p.number_ios = Some(n);
        }
        if let Some(skip) = signed_size("seq_skip", &self.seq_skip, e) {
            // As `offset`: fio's `rw=write:4k` with `bs=16k` moves 20k at a time.
            if skip.unsigned_abs() % SECTOR != 0 {
                e.push(
                    JobError::new(
                        "seq_skip",
                        format!("{skip} is not a multiple of {SECTOR}, a sector"),
                    )
                    .hint("use a multiple of 512 (e.g. of `bs`)"),
                );
            }
            // Backwards by less than two blocks, or forwards by less than one, the
            // next I/O overlaps the last: verify's blocks would be torn by design.
            let bs = job.bs;
            if verify && skip < 0 && skip.unsigned_abs() < 2 * bs {
                e.push(
                    JobError::new("seq_skip", format!("{skip} with `verify`: each I/O would overlap the one before ({bs}-byte blocks)"))
                        .hint("skip at least two blocks backwards, or go forwards"),
                );
            }
            p.seq_skip = (skip != 0).then_some(skip);
        }
        if let Some(n) = self.seq_run {
            range("seq_run", n, 1, u32::MAX, e);
            p.seq_run = (n > 1).then_some(n);
        }

        p.rate = size("rate", &self.rate, e);
        p.rate_iops = self.rate_iops;
        if p.rate.is_some() && p.rate_iops.is_some() {
            e.push(
                JobError::new("rate_iops", "cannot be combined with `rate`")
                    .hint("give the pace in bytes (`rate`) or in I/Os (`rate_iops`)"),
            );
        }
        for (key, v) in [("rate", p.rate), ("rate_iops", p.rate_iops)] {
            if v == Some(0) {
                e.push(
                    JobError::new(key, "0 is out of range (more than 0)")
                        .hint("leave it out for no limit"),
                );
            }
        }
        p.rate_min = size("rate_min", &self.rate_min, e);
        p.rate_iops_min = self.rate_iops_min;
        for (key, v, of, base) in [
            ("rate_min", p.rate_min, "rate", p.rate),
            ("rate_iops_min", p.rate_iops_min, "rate_iops", p.rate_iops),
        ] {
            match (v, base) {
                (Some(_), None) => e.push(JobError::new(key, format!("only applies with `{of}`"))),
                (Some(m), Some(b)) if m > b => {
                    e.push(JobError::new(key, format!("{m} is more than `{of}` ({b})")))
                }
                _ => {}
            }
        }
        p.rate_process = self.rate_process;
        if p.rate_process.is_some() && p.rate.is_none() && p.rate_iops.is_none() {
            e.push(JobError::new(
                "rate_process",
                "only applies with `rate` or `rate_iops`",
            ));
        }

        p.thinktime = duration("thinktime", &self.thinktime, e)
            .map(|d| d.as_secs_f64())
            .filter(|&s| s > 0.0);
        p.thinktime_spin = duration("thinktime_spin", &self.thinktime_spin, e)
            .map(|d| d.as_secs_f64())
            .filter(|&s| s > 0.0);
        p.thinktime_blocks = self.thinktime_blocks;
        if let Some(n) = p.thinktime_blocks {
            range("thinktime_blocks", n, 1, u64::MAX, e);
        }
        for key in ["thinktime_spin", "thinktime_blocks"] {
            if self.is_set(key) && p.thinktime.is_none() {
                e.push(JobError::new(key, "only applies with `thinktime`"));
            }
        }
        if let (Some(s), Some(t)) = (p.thinktime_spin, p.thinktime) {
            if s > t {
                e.push(JobError::new(
                    "thinktime_spin",
                    format!("{s}s is longer than `thinktime` ({t}s)"),
                ));
            }
        }
        p.startdelay = duration("startdelay", &self.startdelay, e)
            .map(|d| d.as_secs_f64())
            .filter(|&s| s > 0.0);

        if let Some(pct) = self.buffer_compress_percentage {
            range("buffer_compress_percentage", pct, 0, 100, e);
            p.buffer_compress_percentage = (pct > 0).then_some(pct);
        }
        if let Some(c) = size("buffer_compress_chunk", &self.buffer_compress_chunk, e) {
            if c == 0 {
                e.push(JobError::new(
                    "buffer_compress_chunk",
                    "0 is out of range (1 byte or more)",
                ));
            }
            if self.buffer_compress_percentage.is_none() {
                e.push(JobError::new(
                    "buffer_compress_chunk",
                    "only applies with `buffer_compress_percentage`",
                ));
            }
            p.buffer_compress_chunk = Some(c);
        }
        if let Some(ws) = self.dedupe_working_set_percentage {
            if !(ws > 0.0 && ws <= 100.0) {
                e.push(JobError::new(
                    "dedupe_working_set_percentage",
                    format!("{ws} is out of range (more than 0, at most 100)"),
                ));
            }
            if self.dedupe_percentage.is_none() {
                e.push(JobError::new(
                    "dedupe_working_set_percentage",
                    "only applies with `dedupe_percentage`",
                ));
            }
            p.dedupe_working_set_percentage = Some(ws);
            p.dedupe_global = self.dedupe_global.unwrap_or(false);
        } else if self.dedupe_global.is_some() {
            e.push(JobError::new(
                "dedupe_global",
                "only applies with `dedupe_working_set_percentage`",
            ));
        }
        if let Some(pct) = self.dedupe_percentage {
            range("dedupe_percentage", pct, 0, 100, e);
            p.dedupe_percentage = (pct > 0).then_some(pct);
        }
        if let Some(text) = &self.buffer_pattern {
            match buffers::parse_pattern(text) {
                Ok(_) => p.buffer_pattern = Some(text.clone()),
                Err(m) => e.push(JobError::new("buffer_pattern", m).hint(
                    "e.g. `\"0xdeadbeef\"`, `\"'fslab'\"` (a quoted string), or both joined by `|`",
                )),
            }
        }
        if let Some(f) = &self.filename_format {
            let rest = f
                .replace("$jobname", "")
                .replace("$jobnum", "")
                .replace("$filenum", "");
            let path = std::path::Path::new(f);
            if f.is_empty()
                || path.is_absolute()
                || path
                    .components()
                    .any(|c| c == std::path::Component::ParentDir)
            {
                e.push(
                    JobError::new(
                        "filename_format",
                        format!("{f:?} is not a relative path inside `directory`"),
                    )
                    .hint("e.g. `\"$jobname.$jobnum.$filenum\"`"),
                );
            } else if let Some(i) = rest.find('$') {
                e.push(
                    JobError::new(
                        "filename_format",
                        format!("{f:?}: `{}` is not one of its keywords", &rest[i..]),
                    )
                    .hint("it knows `$jobname`, `$jobnum` and `$filenum`"),
                );
            } else if self.filename.is_some() || self.directory.is_none() {
                e.push(JobError::new(
                    "filename_format",
                    "only applies with `directory` and no `filename`",
                ));
            } else {
                p.filename_format = Some(f.clone());
            }
        }
        if let Some(n) = self.nrfiles {
            range("nrfiles", u64::from(n), 1, MAX_NRFILES, e);
            if n > 1 {
                if self.filename.is_some() || self.directory.is_none() {
                    e.push(
                        JobError::new(
                            "nrfiles",
                            format!("{n} files per thread need `directory` and no `filename`"),
                        )
                        .hint("give `directory`: the files are named by `filename_format`"),
                    );
                }
                if verify {
                    e.push(
                        JobError::new(
                            "nrfiles",
                            "cannot be combined with `verify`, which checks one file per thread",
                        )
                        .hint("verify with `nrfiles = 1`"),
                    );
                }
                if self.fill_device == Some(true) {
                    e.push(JobError::new(
                        "nrfiles",
                        "cannot be combined with `fill_device`, which fills one file per thread",
                    ));
                }
                p.nrfiles = Some(n);
                // A size-based job does every file once unless told otherwise.
                if self.io_size.is_none() && job.runtime.is_none() {
                    job.io_size = job.size.map(|s| s.saturating_mul(u64::from(n)));
                }
            }
        }
        if let Some(t) = &self.file_service_type {
            match file_service(t) {
                Ok(_) if p.nrfiles.is_none() => e.push(
                    JobError::new("file_service_type", "only applies with `nrfiles` > 1")
                        .hint("add `nrfiles`, or remove `file_service_type`"),
                ),
                Ok(_) => p.file_service_type = Some(t.trim().to_string()),
                Err(m) => e
                    .push(JobError::new("file_service_type", m).hint(
                        "`roundrobin`, `roundrobin:N`, `sequential`, `random` or `random:N`",
                    )),
            }
        }
        p.continue_on_error = self.continue_on_error.unwrap_or_default();
        match (&self.continue_errors, p.continue_on_error.is_none()) {
            (Some(_), true) => e.push(
                JobError::new("continue_errors", "only applies with `continue_on_error`")
                    .hint("add `continue_on_error = \"io\"` (or `read`, `write`)"),
            ),
            (Some(list), false) => {
                for v in list {
                    match v {
                        super::ErrnoValue::Number(n) if *n > 0 && *n < 4096 => {
                            p.continue_errors.push(*n)
                        }
                        super::ErrnoValue::Number(n) => e.push(JobError::new(
                            "continue_errors",
                            format!("{n} is not an error number (1..4095)"),
                        )),
                        super::ErrnoValue::Name(name) => match crate::errno::by_name(name) {
                            Some(n) => p.continue_errors.push(n),
                            None => e.push(
                                JobError::new(
                                    "continue_errors",
                                    format!("`{name}` is not an error name fslab-engine knows"),
                                )
                                .hint("give its number instead (see `errno -l`)"),
                            ),
                        },
                    }
                }
            }
            (None, false) => p.continue_errors = vec![libc::EIO, libc::EILSEQ],
            (None, true) => {}
        }
        p.refill_buffers = self.refill_buffers.unwrap_or(false);
        p.invalidate = self.invalidate.unwrap_or(false);
        p.fadvise_hint = self.fadvise_hint.unwrap_or(false);
        p.zonesize = size("zonesize", &self.zonesize, e).filter(|&z| z > 0);
        p.zonerange = size("zonerange", &self.zonerange, e).filter(|&z| z > 0);
        p.zoneskip = size("zoneskip", &self.zoneskip, e).filter(|&z| z > 0);
        for key in ["zonerange", "zoneskip"] {
            if self.is_set(key) && p.zonesize.is_none() {
                e.push(JobError::new(key, "only applies with `zonesize`"));
            }
        }
        for (key, v) in [
            ("zonesize", p.zonesize),
            ("zonerange", p.zonerange),
            ("zoneskip", p.zoneskip),
        ] {
            if v.is_some_and(|v| v % align != 0) {
                e.push(JobError::new(
                    key,
                    format!(
                        "{} is not a multiple of {align}, the offsets' alignment",
                        v.unwrap_or(0)
                    ),
                ));
            }
        }
        if let Some(v) = self.prio {
            range("prio", v, 0, 7, e);
            p.prio = Some(v);
        }
        if let Some(v) = self.prioclass {
            range("prioclass", v, 0, 3, e);
            p.prioclass = Some(v);
        }
        let pct = self.cmdprio_percentage.as_ref().map(|v| match v {
            super::PercentPair::Both(p) => [*p, *p],
            super::PercentPair::Each(pair) => *pair,
        });
        let cmdprio_set = pct.is_some() || self.cmdprio_bssplit.is_some();
        for key in ["cmdprio_class", "cmdprio"] {
            if self.is_set(key) && !cmdprio_set {
                e.push(JobError::new(
                    key,
                    "only applies with `cmdprio_percentage` or `cmdprio_bssplit`",
                ));
            }
        }
        if cmdprio_set {
            let class = self.cmdprio_class.unwrap_or(1);
            let level = self.cmdprio.unwrap_or(0);
            let key = if pct.is_some() {
                "cmdprio_percentage"
            } else {
                "cmdprio_bssplit"
            };
            if pct.is_some() && self.cmdprio_bssplit.is_some() {
                e.push(
                    JobError::new(
                        "cmdprio_bssplit",
                        "cannot be combined with `cmdprio_percentage`",
                    )
                    .hint("give the percentages per size in `cmdprio_bssplit`"),
                );
            } else if job.ioengine != super::IoEngine::IoUring {
                e.push(
                    JobError::new(
                        key,
                        "needs `ioengine = \"io_uring\"`: the priority rides on each request",
                    )
                    .hint("use io_uring, or `prio`/`prioclass` for the whole thread"),
                );
            } else {
                let checked = pct
                    .map_or(Ok(()), |[r, w]| {
                        crate::block::cmdprio::check(r.max(w), class, level)
                    })
                    .and_then(|()| {
                        crate::block::cmdprio::CmdPrio::new(
                            pct,
                            class,
                            level,
                            self.cmdprio_bssplit.as_deref(),
                        )
                        .map(drop)
                    });
                match checked {
                    Ok(()) => {
                        p.cmdprio_percentage = pct;
                        p.cmdprio_class = Some(class);
                        p.cmdprio = Some(level);
                        p.cmdprio_bssplit.clone_from(&self.cmdprio_bssplit);
                    }
                    Err(m) => e.push(JobError::new(key, m)),
                }
            }
        }
        let target = duration("latency_target", &self.latency_target, e);
        for key in ["latency_window", "latency_percentile", "latency_run"] {
            if self.is_set(key) && target.is_none() {
                e.push(JobError::new(key, "only applies with `latency_target`"));
            }
        }
        if let Some(t) = target {
            if t.is_zero() {
                e.push(JobError::new(
                    "latency_target",
                    "0 is out of range (more than 0)",
                ));
            } else if job.ioengine != super::IoEngine::IoUring {
                e.push(
                    JobError::new(
                        "latency_target",
                        "needs `ioengine = \"io_uring\"`: it searches the queue depth",
                    )
                    .hint("use io_uring with an `iodepth` to search up to"),
                );
            }
            p.latency_target = Some(t.as_secs_f64());
            p.latency_window = Some(
                duration("latency_window", &self.latency_window, e)
                    .unwrap_or_default()
                    .as_secs_f64(),
            );
            let pct = self.latency_percentile.unwrap_or(100.0);
            if !(pct > 0.0 && pct <= 100.0) {
                e.push(JobError::new(
                    "latency_percentile",
                    format!("{pct} is out of range (more than 0, at most 100)"),
                ));
            }
            p.latency_percentile = Some(pct);
            p.latency_run = self.latency_run.unwrap_or(false);
        }
        if let Some(w) = self.flow {
            range("flow", w, 1, 1_000_000, e);
            p.flow = Some(w);
            p.flow_id = Some(self.flow_id.unwrap_or(0));
            p.flow_sleep = Some(
                duration("flow_sleep", &self.flow_sleep, e)
                    .unwrap_or_default()
                    .as_secs_f64(),
            );
        } else {
            for key in ["flow_id", "flow_sleep"] {
                if self.is_set(key) {
                    e.push(JobError::new(key, "only applies with `flow`"));
                }
            }
        }
        p.fill_device = self.fill_device.unwrap_or(false);
        if p.fill_device && (job.rw != super::Rw::Write || job.ioengine.moves_no_data()) {
            e.push(
                JobError::new("fill_device", "needs `rw = \"write\"` on an engine that writes data")
                    .hint("fill the file system with a sequential write job, then read it in a job of its own"),
            );
        }
        for (key, v) in [
            ("cpus_allowed", &self.cpus_allowed),
            ("numa_cpu_nodes", &self.numa_cpu_nodes),
        ] {
            if let Some(text) = v {
                match crate::block::placement::parse_list(text) {
                    Ok(_) => {}
                    Err(m) => e.push(
                        JobError::new(key, m)
                            .hint("a list of numbers and ranges, e.g. `\"0-3,6\"`"),
                    ),
                }
            }
        }
        p.cpus_allowed.clone_from(&self.cpus_allowed);
        p.numa_cpu_nodes.clone_from(&self.numa_cpu_nodes);
        if self.cpus_allowed_policy.is_some()
            && p.cpus_allowed.is_none()
            && p.numa_cpu_nodes.is_none()
        {
            e.push(JobError::new(
                "cpus_allowed_policy",
                "only applies with `cpus_allowed` or `numa_cpu_nodes`",
            ));
        }
        p.cpus_allowed_policy = self.cpus_allowed_policy;
        if let Some(text) = &self.numa_mem_policy {
            match crate::block::placement::parse_mem_policy(text) {
                Ok(_) => p.numa_mem_policy = Some(text.clone()),
                Err(m) => e.push(JobError::new("numa_mem_policy", m)),
            }
        }
        if job.ioengine == super::IoEngine::E4defrag {
            match self.donorname.as_deref() {
                None | Some("") => e.push(
                    JobError::new("donorname", "is required with `ioengine = \"e4defrag\"`").hint(
                        "the donor file's name, beside the job's file: `donorname = \"file.def\"`",
                    ),
                ),
                Some(n) if n.contains('/') || n == "." || n == ".." || n.contains('\0') => e.push(
                    JobError::new("donorname", format!("{n:?} is not a plain file name"))
                        .hint("the donor lives beside the job's file: give its name only"),
                ),
                Some(n) => p.donorname = Some(n.to_string()),
            }
            p.inplace = self.inplace.unwrap_or(false);
        } else {
            for key in ["donorname", "inplace"] {
                if self.is_set(key) {
                    e.push(JobError::new(
                        key,
                        "only applies with `ioengine = \"e4defrag\"`",
                    ));
                }
            }
        }
        if let Some(program) = &self.program {
            if program.trim().is_empty() {
                e.push(
                    JobError::new("program", "is empty")
                        .hint("a path, or a name found in PATH, e.g. `program = \"vmstat\"`"),
                );
            }
            p.program = Some(program.clone());
            // fio's expansion: %r is the runtime in whole seconds, %n the job's name.
            let runtime_s = job.runtime.map_or(0, |r| r as u64);
            p.arguments = self
                .arguments
                .as_deref()
                .unwrap_or("")
                .replace("%r", &runtime_s.to_string())
                .replace("%n", &job.name)
                .split(' ')
                .filter(|a| !a.is_empty())
                .map(String::from)
                .collect();
            p.grace_time =
                Some(duration("grace_time", &self.grace_time, e).map_or(1.0, |d| d.as_secs_f64()));
            p.std_redirect = Some(self.std_redirect.unwrap_or(true));
        } else {
            for key in ["arguments", "grace_time", "std_redirect"] {
                if self.is_set(key) {
                    e.push(JobError::new(key, "only applies with `program`"));
                }
            }
        }
        self.io_flags(job, &mut p, e);
        self.replay(job, &mut p, e);
        let data_keys = [
            "buffer_compress_percentage",
            "dedupe_percentage",
            "buffer_pattern",
            "refill_buffers",
        ];
        for key in data_keys.into_iter().filter(|k| self.is_set(k)) {
            if verify {
                e.push(
                    JobError::new(key, "cannot be combined with `verify`: verify writes content of its own (a header and a checksummed payload)")
                        .hint(format!("remove `{key}` from the verify job")),
                );
            }
            if self.buffer_content == Some(BufferContent::Zeros) {
                e.push(JobError::new(
                    key,
                    "cannot be combined with `buffer_content = \"zeros\"`",
                ));
            }
        }

        if let Some(s) = job.size {
            if s < largest && largest > job.bs {
                e.push(JobError::new(
                    "size",
                    format!("{s} is smaller than the largest I/O ({largest}): it does not fit"),
                ));
            }
        }
        job.pattern = p;
    }
}

/// The keys that shape a job's I/O, which a trace (`read_iolog`) says instead: refused
/// beside it; the fio importer leaves them out (fio ignores them).
pub const REPLAY_SHAPED: &[&str] = &[
    "rw",
    "rwmixread",
    "bs",
    "size",
    "io_size",
    "filename",
    "nrfiles",
    "filename_format",
    "file_service_type",
    "bssplit",
    "bsrange",
    "blockalign",
    "random_distribution",
    "norandommap",
    "offset",
    "offset_increment",
    "number_ios",
    "seq_skip",
    "seq_run",
    "rate",
    "rate_iops",
    "rate_min",
    "rate_iops_min",
    "rate_process",
    "thinktime",
    "zonesize",
    "verify",
    "verify_state",
    "verify_backlog",
    "verify_read_back",
    "fill_device",
    "flow",
    "latency_target",
    "fsync",
    "fdatasync",
];

impl JobSpec {
    /// `read_iolog`: the trace says what each I/O is, so the keys that shape I/O are
    /// refused beside it rather than silently ignored.
    fn replay(&self, job: &Job, p: &mut PatternJob, e: &mut Vec<JobError>) {
        let Some(log) = &self.read_iolog else {
            for key in ["replay_no_stall", "replay_time_scale"] {
                if self.is_set(key) {
                    e.push(JobError::new(key, "only applies with `read_iolog`"));
                }
            }
            return;
        };
        if log.trim().is_empty() {
            e.push(
                JobError::new("read_iolog", "is empty").hint("the path of a trace (fio's iolog)"),
            );
        }
        p.read_iolog = Some(log.clone());
        p.replay_no_stall = self.replay_no_stall.unwrap_or(false);
        if let Some(pct) = self.replay_time_scale {
            range("replay_time_scale", u64::from(pct), 1, 100_000, e);
            p.replay_time_scale = Some(pct);
        }
        for &key in REPLAY_SHAPED {
            if self.is_set(key) {
                e.push(
                    JobError::new(
                        key,
                        "cannot be combined with `read_iolog`: the trace says what each I/O is",
                    )
                    .hint(format!("remove `{key}`")),
                );
            }
        }
        if job.numjobs > 1 {
            e.push(
                JobError::new("numjobs", "a trace is replayed by one thread")
                    .hint("give each recorded thread's trace a job of its own"),
            );
        }
        if !matches!(
            job.ioengine,
            super::IoEngine::IoUring | super::IoEngine::Sync
        ) {
            e.push(JobError::new(
                "read_iolog",
                "needs `ioengine = \"io_uring\"` or `\"sync\"`",
            ));
        }
    }

    /// The keys that change how each request is made (per-request flags, the ring's
    /// polling thread) or the thread that makes it: checked against the engine and
    /// `direct`.
    fn io_flags(&self, job: &Job, p: &mut PatternJob, e: &mut Vec<JobError>) {
        use super::IoEngine;
        p.atomic = self.atomic.unwrap_or(false);
        p.uncached = self.uncached.unwrap_or(false);
        p.nowait = self.nowait.unwrap_or(false);
        p.sqthread_poll = self.sqthread_poll.unwrap_or(false);
        p.sqthread_poll_cpu = self.sqthread_poll_cpu;
        p.write_hint = self.write_hint;
        p.sync = self.sync.unwrap_or_default();
        p.nice = self.nice;
        let flagged = [
            ("atomic", p.atomic),
            ("uncached", p.uncached),
            ("nowait", p.nowait),
        ];
        for (key, _) in flagged.iter().filter(|(_, on)| *on) {
            if !matches!(job.ioengine, IoEngine::IoUring | IoEngine::Sync) {
                e.push(
                    JobError::new(
                        *key,
                        format!(
                            "needs `ioengine = \"io_uring\"` or `\"sync\"`, whose requests carry the flag, not {}",
                            serde_json::to_string(&job.ioengine).unwrap_or_default()
                        ),
                    )
                    .hint("use `ioengine = \"io_uring\"`"),
                );
            }
        }
        if p.atomic && !job.direct {
            e.push(
                JobError::new(
                    "atomic",
                    "needs `direct = true`: the kernel offers atomic writes only for direct I/O",
                )
                .hint("add `direct = true`"),
            );
        }
        if p.atomic && self.bsrange.is_some() {
            e.push(
                JobError::new("atomic", "cannot be combined with `bsrange`: an atomic write's size must be a power of two")
                    .hint("list the sizes in a `bssplit`"),
            );
        }
        if p.uncached && job.direct {
            e.push(
                JobError::new("uncached", "only applies to buffered I/O, and `direct = true` bypasses the page cache already")
                    .hint("remove `uncached`, or set `direct = false`"),
            );
        }
        if (p.sqthread_poll || p.sqthread_poll_cpu.is_some()) && job.ioengine != IoEngine::IoUring {
            e.push(JobError::new(
                "sqthread_poll",
                "only applies with `ioengine = \"io_uring\"`",
            ));
        }
        if p.sqthread_poll_cpu.is_some() && !p.sqthread_poll {
            e.push(
                JobError::new(
                    "sqthread_poll_cpu",
                    "only applies with `sqthread_poll = true`",
                )
                .hint("add `sqthread_poll = true`"),
            );
        }
        if let Some(n) = self.nice {
            if !(-20..=19).contains(&n) {
                e.push(JobError::new(
                    "nice",
                    format!("{n} is not a nice value (-20 to 19)"),
                ));
            }
        }
    }
}

impl Job {
    /// The reads' and the writes' I/O sizes.
    pub fn sizes(&self) -> [Sizes; 2] {
        let p = &self.pattern;
        let parsed = match (&p.bssplit, &p.bsrange) {
            (Some(t), _) => sizes::parse_split(t).ok(),
            (_, Some(t)) => sizes::parse_range(t).ok(),
            _ => None,
        };
        parsed.unwrap_or_else(|| [Sizes::fixed(self.bs), Sizes::fixed(self.bs)])
    }

    /// The largest I/O the job issues: what each buffer must hold.
    pub fn max_bs(&self) -> u64 {
        let [r, w] = self.sizes();
        r.max().max(w.max())
    }

    /// The smallest I/O size the job's `rw` issues.
    pub fn min_bs(&self) -> u64 {
        let [r, w] = self.sizes();
        match (self.rw.reads(), self.rw.writes()) {
            (true, false) => r.min(),
            (false, true) => w.min(),
            _ => r.min().min(w.min()),
        }
    }

    /// How far into the target the threads' regions reach: what a file is laid out to.
    pub fn extent(&self, size: u64) -> u64 {
        let p = &self.pattern;
        p.offset.unwrap_or(0)
            + u64::from(self.numjobs.saturating_sub(1)) * p.offset_increment.unwrap_or(0)
            + size
    }

    /// Thread `thread`'s I/O pattern.
    pub fn shape(&self, thread: u32) -> Shape {
        let p = &self.pattern;
        Shape {
            rw: self.rw,
            rwmixread: self.rwmixread,
            sizes: self.sizes(),
            align: p.blockalign.unwrap_or_else(|| self.min_bs()),
            base: p.offset.unwrap_or(0) + u64::from(thread) * p.offset_increment.unwrap_or(0),
            size: self.size.unwrap_or(self.bs),
            law: p
                .random_distribution
                .as_deref()
                .and_then(|t| distribution::parse(t).ok())
                .unwrap_or(Law::Uniform),
            map: !p.norandommap,
            seq_skip: p.seq_skip.unwrap_or(0),
            seq_run: p.seq_run.unwrap_or(1),
            zone: p
                .zonesize
                .map(|size| (p.zonerange.unwrap_or(size), size, p.zoneskip.unwrap_or(0))),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::load;

    fn errors(text: &str) -> String {
        crate::error::JobErrors(
            load(&format!("filename = \"/f\"\nsize = \"1g\"\n{text}"))
                .expect_err("refused")
                .0,
        )
        .to_string()
    }

    #[test]
    fn pattern_keys_echo_as_a_valid_job() {
        let (_, job) = load(
            "filename = \"/f\"\nsize = \"1g\"\nrw = \"randrw\"\nbssplit = \"4k/50:64k/50\"\nrandom_distribution = \"zipf:1.1\"\nrate_iops = 500\nrate_process = \"poisson\"\nthinktime = \"1ms\"\nbuffer_compress_percentage = 50\ndedupe_percentage = 10\nseq_skip = \"-4k\"\noffset = \"1m\"",
        )
        .unwrap();
        let echoed = serde_json::to_value(&job).unwrap();
        assert_eq!(echoed["bssplit"], "4k/50:64k/50");
        assert_eq!(echoed["seq_skip"], -4096);
        assert_eq!(echoed["thinktime"], 0.001);
        let mut map = echoed.as_object().unwrap().clone();
        map.retain(|_, v| !v.is_null());
        let again = crate::spec::spec_from_value(serde_json::Value::Object(map))
            .unwrap()
            .resolve()
            .unwrap();
        assert_eq!(job, again);
        assert_eq!(job.max_bs(), 65536);
        assert_eq!(job.shape(0).align, 4096);
    }

    #[test]
    fn a_plain_job_echoes_no_pattern_key() {
        let (_, job) = load("filename = \"/f\"\nsize = \"1m\"").unwrap();
        let echoed = serde_json::to_value(&job).unwrap();
        for k in [
            "bssplit",
            "norandommap",
            "rate",
            "thinktime",
            "offset",
            "buffer_pattern",
        ] {
            assert!(echoed.get(k).is_none(), "{k}");
        }
    }

    #[test]
    fn bad_pattern_keys_are_refused_at_their_key() {
        let t = errors("bssplit = \"4k/60:8k/60\"");
        assert!(
            t.contains("`bssplit`: `4k/60:8k/60`: the percentages add up to 120"),
            "{t}"
        );
        let t = errors("rate = \"1m\"\nrate_iops = 10");
        assert!(
            t.contains("`rate_iops`: cannot be combined with `rate`"),
            "{t}"
        );
        let t = errors("rate_min = \"1m\"");
        assert!(t.contains("`rate_min`: only applies with `rate`"), "{t}");
        let t = errors("verify = true\nbssplit = \"4k/50:8k/50\"");
        assert!(
            t.contains("`bssplit`: cannot be combined with `verify`"),
            "{t}"
        );
        let t = errors("random_distribution = \"zipf\"");
        assert!(
            t.contains("`random_distribution`: `zipf` needs a parameter"),
            "{t}"
        );
        let t = errors("direct = true\nbssplit = \"1000/100\"");
        assert!(t.contains("not a multiple of 512"), "{t}");
        let t = errors("thinktime_blocks = 4");
        assert!(
            t.contains("`thinktime_blocks`: only applies with `thinktime`"),
            "{t}"
        );
        let t = errors("buffer_pattern = \"0xzz\"");
        assert!(t.contains("`buffer_pattern`"), "{t}");
    }

    #[test]
    fn request_flags_are_checked_against_the_engine_and_direct() {
        for (keys, says) in [
            (
                "atomic = true\nrw = \"write\"",
                "`atomic`: needs `direct = true`",
            ),
            (
                "atomic = true\ndirect = true\nrw = \"write\"\nioengine = \"mmap\"",
                "`atomic`: needs `ioengine = \"io_uring\"` or `\"sync\"`",
            ),
            (
                "atomic = true\ndirect = true\nrw = \"write\"\nbs = \"12k\"",
                "must be a power of two, and 12288 is not",
            ),
            (
                "atomic = true\ndirect = true\nrw = \"randwrite\"\nbssplit = \"4k/50:16k/50\"",
                "add `blockalign = 16384`",
            ),
            (
                "uncached = true\ndirect = true",
                "`uncached`: only applies to buffered I/O",
            ),
            (
                "nowait = true\nioengine = \"null\"",
                "`nowait`: needs `ioengine",
            ),
            (
                "sqthread_poll = true\nioengine = \"sync\"",
                "`sqthread_poll`: only applies with `ioengine = \"io_uring\"`",
            ),
            (
                "sqthread_poll_cpu = 1",
                "`sqthread_poll_cpu`: only applies with `sqthread_poll = true`",
            ),
            ("nice = 20", "`nice`: 20 is not a nice value (-20 to 19)"),
            ("write_hint = \"forever\"", "write_hint"),
        ] {
            let t = errors(keys);
            assert!(t.contains(says), "{keys}: {t}");
        }
        let (_, job) = load(
            "filename = \"/f\"\nsize = \"1m\"\nrw = \"randwrite\"\ndirect = true\natomic = true\nbssplit = \"4k/50:16k/50\"\nblockalign = \"16k\"\nnowait = true\nsqthread_poll = true\nsqthread_poll_cpu = 0\nwrite_hint = \"short\"\nnice = -3",
        )
        .unwrap();
        let flags = crate::io::RwFlags::of(&job);
        assert_eq!(flags.read, libc::RWF_NOWAIT);
        assert_eq!(flags.write, libc::RWF_NOWAIT | libc::RWF_ATOMIC);
        let echoed = serde_json::to_value(&job).unwrap();
        assert_eq!(echoed["write_hint"], "short");
        assert_eq!(echoed["nice"], -3);
        assert_eq!(echoed["sqthread_poll_cpu"], 0);
    }
}
