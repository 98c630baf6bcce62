//! `kind = "oltp"`: what one database transaction does.

use crate::app::Plan;
use crate::spec::AppJob;

pub struct Oltp {
    reads: u32,
    writes: u32,
    scan_share: f64,
}

impl Oltp {
    pub fn new(app: &AppJob) -> Self {
        Self {
            reads: app.txn_reads.unwrap_or(11),
            writes: app.txn_writes.unwrap_or(2),
            scan_share: app.scan_share.unwrap_or(0.0),
        }
    }

    /// A read-ahead scan (one big read, no commit), or `reads` page reads and
    /// `writes` page updates with one commit record. Updates hit the pages just read
    /// first (a row is read before it changes), then fresh ones.
    pub fn next(&self, u: f64) -> Plan {
        if u < self.scan_share {
            return Plan {
                scan: true,
                ..Plan::default()
            };
        }
        let dirty_read = self.writes.min(self.reads);
        Plan {
            op: 0,
            reads: self.reads,
            dirty_read,
            dirty_new: self.writes - dirty_read,
            scan: false,
            log: self.writes > 0,
        }
    }
}
