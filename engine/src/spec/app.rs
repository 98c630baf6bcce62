//! `kind = "oltp"` and `"mailstore"`: the application models' keys, checked, with each
//! model's defaults.

use std::time::Duration;

use super::parse::{duration, range, size};
use super::{
    AppJob, IoEngine, JobSpec, Kind, MAX_APP_TXN_PAGES, MAX_FILE_SIZE, MAX_PAGE_SIZE, MIN_INTERVAL,
};
use crate::error::JobError;

impl JobSpec {
    /// The keys of an application model, checked; `None` for other kinds.
    pub(super) fn resolve_app(
        &self,
        kind: Kind,
        ioengine: IoEngine,
        direct: bool,
        runtime: Option<Duration>,
        e: &mut Vec<JobError>,
    ) -> Option<AppJob> {
        if !kind.is_app() {
            return None;
        }
        let oltp = kind == Kind::Oltp;
        if ioengine != IoEngine::Sync {
            let engine = serde_json::to_value(ioengine).unwrap_or_default();
            e.push(
                JobError::new(
                    "ioengine",
                    format!(
                        "{engine} is not supported with `kind = \"{}\"`",
                        kind.name()
                    ),
                )
                .hint("use `ioengine = \"sync\"` (the default): each user does one I/O at a time"),
            );
        }
        match self.directory.as_deref() {
            None | Some("") => e.push(
                JobError::new(
                    "directory",
                    format!("is required with `kind = \"{}\"`", kind.name()),
                )
                .hint("where the data and log files go, e.g. `directory = \"/mnt/test\"`"),
            ),
            Some(_) => {}
        }
        if self.filename.is_some() {
            e.push(JobError::new(
                "filename",
                "does not apply to an application model: its files are `<directory>/<name>.data` and `.log`",
            ));
        }
        if runtime.is_none() {
            e.push(
                JobError::new(
                    "runtime",
                    format!("is required with `kind = \"{}\"`", kind.name()),
                )
                .hint("an application model runs for a time, e.g. `runtime = \"60s\"`"),
            );
        }
        let page_size =
            size("page_size", &self.page_size, e).unwrap_or(if oltp { 8 << 10 } else { 32 << 10 });
        range("page_size", page_size, 512, MAX_PAGE_SIZE, e);
        if page_size % 512 != 0 {
            e.push(JobError::new(
                "page_size",
                format!("{page_size} is not a multiple of 512"),
            ));
        }
        let data_size = size("data_size", &self.data_size, e).unwrap_or(256 << 20);
        range(
            "data_size",
            data_size,
            page_size.max(1) * 16,
            MAX_FILE_SIZE,
            e,
        );
        let log_size = size("log_size", &self.log_size, e).unwrap_or(64 << 20);
        range("log_size", log_size, 1 << 20, MAX_FILE_SIZE, e);
        let cache_size =
            size("cache_size", &self.cache_size, e).unwrap_or(if oltp { 0 } else { 64 << 20 });
        range("cache_size", cache_size, 0, MAX_FILE_SIZE, e);
        let ckpt = duration("checkpoint_interval", &self.checkpoint_interval, e)
            .unwrap_or(Duration::from_secs(if oltp { 5 } else { 1 }));
        if ckpt < MIN_INTERVAL {
            e.push(JobError::new(
                "checkpoint_interval",
                format!("{ckpt:?} is out of range (100ms or more)"),
            ));
        }
        let log_record_size = size("log_record_size", &self.log_record_size, e)
            .unwrap_or(if oltp { 512 } else { 2 << 10 });
        range("log_record_size", log_record_size, 1, 1 << 20, e);
        let mut app = AppJob {
            data_size,
            log_size,
            page_size,
            cache_size,
            checkpoint_interval: ckpt.as_secs_f64(),
            log_record_size,
            txn_reads: None,
            txn_writes: None,
            scan_share: None,
            scan_size: None,
            op_mix: None,
            lazy_commit_share: None,
            maintenance_rate: None,
            read_lat_ms_max: None,
            log_lat_ms_max: None,
            uncached: self.uncached.unwrap_or(false),
        };
        if app.uncached && direct {
            e.push(
                JobError::new("uncached", "only applies to buffered I/O, and `direct = true` bypasses the page cache already")
                    .hint("remove `uncached`, or set `direct = false`"),
            );
        }
        if oltp {
            let reads = self.txn_reads.unwrap_or(11);
            range("txn_reads", reads, 0, MAX_APP_TXN_PAGES, e);
            let writes = self.txn_writes.unwrap_or(2);
            range("txn_writes", writes, 0, MAX_APP_TXN_PAGES, e);
            if reads == 0 && writes == 0 {
                e.push(JobError::new("txn_writes", "a transaction must read or write a page (`txn_reads` and `txn_writes` are both 0)"));
            }
            let share = self.scan_share.unwrap_or(0.05);
            range("scan_share", share, 0.0, 1.0, e);
            let scan = size("scan_size", &self.scan_size, e).unwrap_or(64 << 10);
            if page_size > 0 && (scan == 0 || scan % page_size != 0) {
                e.push(JobError::new(
                    "scan_size",
                    format!("{scan} is not a positive multiple of `page_size` ({page_size})"),
                ));
            }
            range("scan_size", scan, 1, data_size, e);
            app.txn_reads = Some(reads);
            app.txn_writes = Some(writes);
            app.scan_share = Some(share);
            app.scan_size = Some(scan);
        } else {
            let mix = self
                .op_mix
                .clone()
                .unwrap_or_else(|| vec![40.0, 20.0, 5.0, 35.0]);
            if mix.len() != 4 {
                e.push(
                    JobError::new("op_mix", format!("has {} weights, needs 4", mix.len()))
                        .hint("`op_mix = [insert, delete, replace, read]`, e.g. `[40, 20, 5, 35]`"),
                );
            } else if mix.iter().any(|w| !(w.is_finite() && *w >= 0.0))
                || mix.iter().sum::<f64>() <= 0.0
            {
                e.push(JobError::new(
                    "op_mix",
                    "weights must be 0 or more, and not all 0",
                ));
            }
            let lazy = self.lazy_commit_share.unwrap_or(0.7);
            range("lazy_commit_share", lazy, 0.0, 1.0, e);
            let rate = size("maintenance_rate", &self.maintenance_rate, e).unwrap_or(1 << 20);
            range("maintenance_rate", rate, 0, 1 << 40, e);
            let rmax = self.read_lat_ms_max.unwrap_or(20.0);
            range("read_lat_ms_max", rmax, 0.0, 1e6, e);
            let lmax = self.log_lat_ms_max.unwrap_or(10.0);
            range("log_lat_ms_max", lmax, 0.0, 1e6, e);
            app.op_mix = Some(mix);
            app.lazy_commit_share = Some(lazy);
            app.maintenance_rate = Some(rate);
            app.read_lat_ms_max = Some(rmax);
            app.log_lat_ms_max = Some(lmax);
        }
        if direct && log_record_size == 0 {
            e.push(JobError::new("log_record_size", "must be more than 0"));
        }
        Some(app)
    }
}
