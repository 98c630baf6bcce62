//! An application model's answers: the report's `app` section, with JetStress's numbers
//! and verdict for mailstore.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::mailstore;
use super::run::{Counts, Tally};
use crate::record::{summarize, total_hist};
use crate::report::{
    AppFile, AppResult, AppSide, CacheStats, Checkpoint, Commits, IoOp, JetStress, OpResult,
};
use crate::spec::{AppJob, Job, Kind};

fn side(r: &OpResult) -> AppSide {
    AppSide {
        ios: r.ios,
        bytes: r.bytes,
        iops: r.iops,
        avg_bytes: if r.ios > 0 {
            r.bytes as f64 / r.ios as f64
        } else {
            0.0
        },
        lat_ns: r.lat_ns.clone(),
    }
}

/// The threads' tallies added up.
pub(super) struct Sums {
    pub counts: Counts,
    /// Synchronous commits' latency.
    pub sync_lat: Histogram<u64>,
    /// Lazy commits' latency.
    pub lazy_lat: Histogram<u64>,
    pub checkpoints: Vec<Checkpoint>,
}

impl Sums {
    pub fn of<'a>(tallies: impl IntoIterator<Item = &'a Tally>) -> Self {
        let mut s = Sums {
            counts: Counts::default(),
            sync_lat: total_hist(),
            lazy_lat: total_hist(),
            checkpoints: Vec::new(),
        };
        for t in tallies {
            s.counts.add(&t.counts);
            s.sync_lat.add(&t.commit_sync).expect("same bounds");
            s.lazy_lat.add(&t.commit_lazy).expect("same bounds");
            s.checkpoints.extend(t.checkpoints.iter().cloned());
        }
        s
    }
}

/// What the report's `app` section is made from.
pub(super) struct Answers<'a> {
    pub job: &'a Job,
    pub app: &'a AppJob,
    /// The merged `results` (`data_read`, `data_write`, `log_write`, `txn`...).
    pub results: &'a [OpResult],
    pub sums: Sums,
    pub runtime_s: f64,
    /// The engine's CPU, as in `cpu.usage_pct`.
    pub cpu_pct: f64,
    /// The data file's and the log's.
    pub paths: [String; 2],
}

/// The `app` section: per-file numbers, commits, cache, checkpoints, and for mailstore
/// the JetStress set and its verdict.
pub(super) fn app_result(a: Answers<'_>) -> AppResult {
    let Answers {
        job,
        app,
        results,
        sums,
        runtime_s,
        cpu_pct,
        paths: [data_path, log_path],
    } = a;
    let c = &sums.counts;
    let mut checkpoints = sums.checkpoints;
    let find = |op: IoOp| results.iter().find(|r| r.op == op.into());
    let (dr, dw, lw, tx) = (
        find(IoOp::DataRead).expect("always listed"),
        find(IoOp::DataWrite).expect("always listed"),
        find(IoOp::LogWrite).expect("always listed"),
        find(IoOp::Txn).expect("always listed"),
    );
    let mut files = BTreeMap::new();
    files.insert(
        "data".to_string(),
        AppFile {
            path: data_path,
            read: side(dr),
            write: side(dw),
            fsyncs: c.data_fsyncs,
            iops: dr.iops + dw.iops,
        },
    );
    files.insert(
        "log".to_string(),
        AppFile {
            path: log_path,
            read: AppSide::default(),
            write: side(lw),
            fsyncs: c.log.fsyncs,
            iops: lw.iops,
        },
    );
    checkpoints.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let mailstore = job.kind == Kind::Mailstore;
    let ms = |ns: f64| ns / 1e6;
    let (jetstress, verdict, ops, maintenance) = if mailstore {
        let js = JetStress {
            transactional_iops: dr.iops + dw.iops,
            db_reads_per_s: dr.iops,
            db_writes_per_s: dw.iops,
            db_read_lat_ms: ms(dr.lat_ns.mean),
            db_write_lat_ms: ms(dw.lat_ns.mean),
            db_read_avg_bytes: side(dr).avg_bytes,
            db_write_avg_bytes: side(dw).avg_bytes,
            log_writes_per_s: lw.iops,
            log_write_lat_ms: ms(lw.lat_ns.mean),
            log_write_avg_bytes: side(lw).avg_bytes,
            cpu_pct,
        };
        let v = mailstore::verdict(js.db_read_lat_ms, js.log_write_lat_ms, app);
        let ops = mailstore::OP_NAMES
            .iter()
            .zip(c.ops)
            .map(|(n, k)| (n.to_string(), k))
            .collect();
        let maint = find(IoOp::MaintenanceRead).map(side);
        (Some(js), Some(v), Some(ops), maint)
    } else {
        (None, None, None, None)
    };
    AppResult {
        model: job.kind,
        txn: tx.ios,
        txn_per_s: tx.ios as f64 / runtime_s,
        files,
        commits: Commits {
            count: c.commits,
            sync: c.commits - c.lazy,
            lazy: c.lazy,
            flushes: c.log.flushes,
            records_per_flush: if c.log.flushes > 0 {
                c.log.records as f64 / c.log.flushes as f64
            } else {
                0.0
            },
            sync_lat_ns: summarize(&sums.sync_lat),
            lazy_lat_ns: summarize(&sums.lazy_lat),
        },
        cache: CacheStats {
            pages: app.cache_size / app.page_size,
            lookups: c.lookups,
            hits: c.hits,
            hit_ratio: if c.lookups > 0 {
                c.hits as f64 / c.lookups as f64
            } else {
                0.0
            },
        },
        pages_dirtied: c.dirtied,
        checkpoints,
        scans: (job.kind == Kind::Oltp).then_some(c.scans),
        ops,
        maintenance,
        jetstress,
        verdict,
    }
}
