//! `kind = "mailstore"`: what one mail-store operation does, and the verdict.

use crate::app::Plan;
use crate::report::{Check, Verdict};
use crate::spec::AppJob;

pub const OP_NAMES: [&str; 4] = ["insert", "delete", "replace", "read"];

pub struct Mailstore {
    /// Cumulative shares of `OP_NAMES`.
    cum: [f64; 4],
    pub lazy_share: f64,
}

impl Mailstore {
    pub fn new(app: &AppJob) -> Self {
        let mix = app
            .op_mix
            .clone()
            .unwrap_or_else(|| vec![40.0, 20.0, 5.0, 35.0]);
        let total: f64 = mix.iter().sum();
        let mut cum = [0.0; 4];
        let mut acc = 0.0;
        for (i, w) in mix.iter().take(4).enumerate() {
            acc += w / total;
            cum[i] = acc;
        }
        cum[3] = 1.0;
        Self {
            cum,
            lazy_share: app.lazy_commit_share.unwrap_or(0.0),
        }
    }

    /// An insert reads the folder's index page and dirties it and a new message page;
    /// a delete or replace reads and dirties one page; a read reads a message's two
    /// pages (header and body) and commits nothing.
    pub fn next(&self, u: f64) -> Plan {
        let op = self.cum.iter().position(|c| u < *c).unwrap_or(3);
        let (reads, dirty_read, dirty_new) = match op {
            0 => (1, 1, 1),
            1 | 2 => (1, 1, 0),
            _ => (2, 0, 0),
        };
        Plan {
            op,
            reads,
            dirty_read,
            dirty_new,
            scan: false,
            log: op != 3,
        }
    }
}

/// JetStress's two latency checks: means under the thresholds pass.
pub fn verdict(read_lat_ms: f64, log_lat_ms: f64, app: &AppJob) -> Verdict {
    let checks = vec![
        check(
            "db_read_lat_ms_mean",
            read_lat_ms,
            app.read_lat_ms_max.unwrap_or(20.0),
        ),
        check(
            "log_write_lat_ms_mean",
            log_lat_ms,
            app.log_lat_ms_max.unwrap_or(10.0),
        ),
    ];
    Verdict {
        pass: checks.iter().all(|c| c.pass),
        checks,
    }
}

fn check(name: &str, value: f64, max: f64) -> Check {
    Check {
        name: name.into(),
        value,
        max,
        pass: value < max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(read_max: Option<f64>, log_max: Option<f64>) -> AppJob {
        AppJob {
            data_size: 1 << 30,
            log_size: 64 << 20,
            page_size: 32 << 10,
            cache_size: 64 << 20,
            checkpoint_interval: 1.0,
            log_record_size: 2 << 10,
            txn_reads: None,
            txn_writes: None,
            scan_share: None,
            scan_size: None,
            op_mix: Some(vec![40.0, 20.0, 5.0, 35.0]),
            lazy_commit_share: Some(0.7),
            maintenance_rate: Some(1 << 20),
            read_lat_ms_max: read_max,
            log_lat_ms_max: log_max,
            uncached: false,
        }
    }

    #[test]
    fn the_verdict_passes_when_both_means_are_under_their_thresholds() {
        let v = verdict(19.9, 9.9, &app(Some(20.0), Some(10.0)));
        assert!(v.pass);
        let names: Vec<&str> = v.checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["db_read_lat_ms_mean", "log_write_lat_ms_mean"]);
        assert_eq!((v.checks[0].value, v.checks[0].max), (19.9, 20.0));
        assert_eq!((v.checks[1].value, v.checks[1].max), (9.9, 10.0));
    }

    #[test]
    fn a_mean_at_its_threshold_fails_and_so_does_the_verdict() {
        let v = verdict(20.0, 1.0, &app(Some(20.0), Some(10.0)));
        assert!(!v.pass);
        assert!(!v.checks[0].pass && v.checks[1].pass);
        let v = verdict(1.0, 12.0, &app(Some(20.0), Some(10.0)));
        assert!(!v.pass);
        assert!(v.checks[0].pass && !v.checks[1].pass);
    }

    #[test]
    fn the_verdict_uses_jetstress_defaults_without_thresholds() {
        let v = verdict(0.0, 0.0, &app(None, None));
        assert!(v.pass, "a read served by the cache (0 ms) passes");
        assert_eq!((v.checks[0].max, v.checks[1].max), (20.0, 10.0));
    }
}
