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
