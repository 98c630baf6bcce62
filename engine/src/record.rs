//! Per-thread measurement: lock-free on the I/O path, merged only at interval ends.
//!
//! Each worker owns its totals and an interval histogram per direction. When an
//! interval ends it hands the interval's histogram to the aggregator over a channel and
//! starts a new one (HdrHistogram's "flip"), so no I/O ever waits on another thread.

use std::sync::mpsc::Sender;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::clock::Instant;
use crate::report::LatNs;

/// Highest latency the histograms hold exactly (one hour); longer ones are clamped.
const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// Direction of one I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read = 0,
    Write = 1,
    /// One file-management operation on one file (`kind = "files"`).
    Files = 2,
    /// One log write + flush of an application model (`kind = "oltp"`, `"mailstore"`).
    Log = 3,
    /// One whole transaction of an application model.
    Txn = 4,
    /// Background reads of an application model (mailstore maintenance).
    Background = 5,
    /// A block job's trims (a hole punched, a range discarded).
    Trim = 6,
}

/// Number of `Op` slots.
pub const OPS: usize = 7;

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Files => "files",
            Op::Log => "log",
            Op::Txn => "txn",
            Op::Background => "background",
            Op::Trim => "trim",
        }
    }
}

/// A histogram for totals: 3 significant digits (0.1% quantisation).
pub fn total_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("static histogram bounds are valid")
}

/// A histogram for one interval's p99: 2 significant digits is plenty and 8x smaller.
pub fn interval_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 2).expect("static histogram bounds are valid")
}

/// Summarises a histogram; all zeros when it is empty.
pub fn summarize(h: &Histogram<u64>) -> LatNs {
    if h.is_empty() {
        return LatNs::default();
    }
    LatNs {
        min: h.min(),
        mean: h.mean(),
        stdev: h.stdev(),
        max: h.max(),
        p50: h.value_at_quantile(0.50),
        p90: h.value_at_quantile(0.90),
        p95: h.value_at_quantile(0.95),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        p9999: h.value_at_quantile(0.9999),
    }
}

/// HdrHistogram V2 + DEFLATE, base64: what Python's `hdrhistogram` decodes.
pub fn serialize(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("serializing into memory cannot fail");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// The histogram `serialize` wrote, or `None` when the text is not one.
pub fn deserialize(text: &str) -> Option<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .ok()
}

/// One op's totals from one thread (or one window): I/Os, bytes, and their latencies
/// (`None` where the op never ran, so no histogram was made for it).
pub type OpPart = (u64, u64, Option<Histogram<u64>>);

/// One direction's totals over all threads, as the report shows them.
pub fn merged_result<'a>(
    op: crate::report::ResultOp,
    parts: impl IntoIterator<Item = &'a OpPart>,
    runtime_s: f64,
) -> crate::report::OpResult {
    let mut ios = 0;
    let mut bytes = 0;
    let mut hist = total_hist();
    for (i, b, h) in parts {
        ios += i;
        bytes += b;
        if let Some(h) = h {
            hist.add(h).expect("histograms share their bounds");
        }
    }
    crate::report::OpResult {
        op,
        ios,
        bytes,
        iops: ios as f64 / runtime_s,
        bw_bytes: bytes as f64 / runtime_s,
        lat_ns: summarize(&hist),
        hist: serialize(&hist),
    }
}

/// One interval of one thread, sent to the aggregator.
pub struct IntervalMsg {
    pub index: u64,
    /// Set on the thread's last message: the interval may be shorter.
    pub end: Option<Instant>,
    pub ops: [Option<IntervalPart>; OPS],
}

pub struct IntervalPart {
    pub ios: u64,
    pub bytes: u64,
    pub lat_sum_ns: u128,
    pub hist: Histogram<u64>,
}

struct OpTotals {
    ios: u64,
    bytes: u64,
    hist: Histogram<u64>,
    iv_ios: u64,
    iv_bytes: u64,
    iv_lat_sum_ns: u128,
    iv_hist: Histogram<u64>,
    /// Interval histograms at the totals' precision (see `Recorder::new`).
    fine: bool,
}

impl OpTotals {
    #[cold]
    fn new(fine: bool) -> Self {
        Self {
            ios: 0,
            bytes: 0,
            hist: total_hist(),
            iv_ios: 0,
            iv_bytes: 0,
            iv_lat_sum_ns: 0,
            iv_hist: if fine { total_hist() } else { interval_hist() },
            fine,
        }
    }

    fn take_interval(&mut self) -> Option<IntervalPart> {
        if self.iv_ios == 0 {
            return None;
        }
        let part = IntervalPart {
            ios: self.iv_ios,
            bytes: self.iv_bytes,
            lat_sum_ns: self.iv_lat_sum_ns,
            hist: std::mem::replace(
                &mut self.iv_hist,
                if self.fine {
                    total_hist()
                } else {
                    interval_hist()
                },
            ),
        };
        self.iv_ios = 0;
        self.iv_bytes = 0;
        self.iv_lat_sum_ns = 0;
        Some(part)
    }
}

/// What one thread measured over the whole job.
pub struct ThreadTotals {
    pub ops: [OpPart; OPS],
    /// `None` when the thread made no fsync.
    pub fsync: Option<Histogram<u64>>,
}

/// The measuring side of one worker thread.
pub struct Recorder {
    /// Made on an op's first completion: a histogram at the totals' precision is 270 KiB
    /// that its constructor writes zeros to, and most jobs use one or two of the six
    /// ops (writing those zeros, with the files buffer's, was 43% of a tiny run's CPU).
    ops: [Option<OpTotals>; OPS],
    fine: bool,
    fsync: Option<Histogram<u64>>,
    ramp_end: Instant,
    in_ramp: bool,
    start: Instant,
    interval: Duration,
    index: u64,
    next_boundary: Instant,
    tx: Sender<IntervalMsg>,
}

impl Recorder {
    /// `fine`: send interval histograms at the totals' precision (3 digits) instead of
    /// 2. A steady-state job's results are merged from the intervals of its window, and
    /// must be as exact as a whole run's; it pays 270 KiB per op and interval instead of
    /// 37 KiB, and jobs without steady state pay nothing.
    pub fn new(
        start: Instant,
        ramp: Duration,
        interval: Duration,
        tx: Sender<IntervalMsg>,
        fine: bool,
    ) -> Self {
        Self {
            ops: std::array::from_fn(|_| None),
            fine,
            fsync: None,
            ramp_end: start + ramp,
            in_ramp: !ramp.is_zero(),
            start,
            interval,
            index: 0,
            next_boundary: start + interval,
            tx,
        }
    }

    /// Records one completed I/O. `now` is its completion time.
    #[inline]
    pub fn complete(&mut self, op: Op, bytes: u64, submitted: Instant, now: Instant) {
        if now >= self.next_boundary {
            self.flip(now);
        }
        let lat_ns = now.nanos_since(submitted);
        let fine = self.fine;
        let t = self.ops[op as usize].get_or_insert_with(|| OpTotals::new(fine));
        t.iv_ios += 1;
        t.iv_bytes += bytes;
        t.iv_lat_sum_ns += u128::from(lat_ns);
        t.iv_hist.saturating_record(lat_ns.max(1));
        if self.in_ramp {
            if now < self.ramp_end {
                return;
            }
            self.in_ramp = false;
        }
        t.ios += 1;
        t.bytes += bytes;
        t.hist.saturating_record(lat_ns.max(1));
    }

    /// Records one fsync call.
    pub fn fsync(&mut self, lat: Duration) {
        self.fsync
            .get_or_insert_with(total_hist)
            .saturating_record((lat.as_nanos() as u64).max(1));
    }

    /// Closes the intervals that ended by `now`, for a thread that may do no I/O for a
    /// while (a checkpointer): the series waits for every thread's report of an interval.
    pub fn tick(&mut self, now: Instant) {
        if now >= self.next_boundary {
            self.flip(now);
        }
    }

    /// Whether `now` is past the ramp (what the totals count).
    pub fn measuring(&self, now: Instant) -> bool {
        now >= self.ramp_end
    }

    /// Each op's part of the current interval, and a fresh interval for it.
    fn take_intervals(&mut self) -> [Option<IntervalPart>; OPS] {
        self.ops
            .each_mut()
            .map(|o| o.as_mut().and_then(OpTotals::take_interval))
    }

    /// Ends the current interval (and any empty ones skipped since) at `now`.
    fn flip(&mut self, now: Instant) {
        let index = (now.saturating_duration_since(self.start).as_nanos()
            / self.interval.as_nanos()) as u64;
        let ops = self.take_intervals();
        // The aggregator finalises an interval once every thread has reported it, so a
        // thread that was blocked through several intervals reports them empty.
        let _ = self.tx.send(IntervalMsg {
            index: self.index,
            end: None,
            ops,
        });
        for skipped in self.index + 1..index {
            let _ = self.tx.send(IntervalMsg {
                index: skipped,
                end: None,
                ops: std::array::from_fn(|_| None),
            });
        }
        self.index = index;
        self.next_boundary = self.start + self.interval * (index as u32 + 1);
    }

    /// Sends the last (partial) interval and returns the totals.
    pub fn finish(mut self, end: Instant) -> ThreadTotals {
        if end >= self.next_boundary {
            self.flip(end);
        }
        let ops = self.take_intervals();
        let _ = self.tx.send(IntervalMsg {
            index: self.index,
            end: Some(end),
            ops,
        });
        ThreadTotals {
            ops: self
                .ops
                .map(|o| o.map_or((0, 0, None), |o| (o.ios, o.bytes, Some(o.hist)))),
            fsync: self.fsync,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_exact_on_synthetic_data() {
        // 1..=10_000 ns, once each: below 2048 the histogram has unit resolution and above
        // it 3 significant digits, so every quantile lands within 0.1% of the true value.
        let mut h = total_hist();
        for v in 1..=10_000u64 {
            h.record(v).unwrap();
        }
        let s = summarize(&h);
        assert_eq!(s.min, 1);
        assert_eq!(s.p50, 5_000 + 3); // the bucket holding 5000 at 3 digits ends at 5003
        assert!(
            (s.p99 as f64 - 9_900.0).abs() / 9_900.0 < 0.001,
            "{}",
            s.p99
        );
        assert!((s.mean - 5_000.5).abs() < 5.0, "{}", s.mean);
        assert!((s.max as f64 - 10_000.0).abs() / 10_000.0 < 0.001);
        let mut small = total_hist();
        for v in [100u64, 200, 300, 400, 500, 600, 700, 800, 900, 1000] {
            small.record(v).unwrap();
        }
        let s = summarize(&small);
        assert_eq!((s.min, s.p50, s.p90, s.max), (100, 500, 900, 1000));
        assert_eq!(s.mean, 550.0);
    }

    #[test]
    fn serialized_histogram_decodes_to_the_same_counts() {
        let mut h = total_hist();
        for v in [10u64, 20, 30, 1_000_000] {
            h.record(v).unwrap();
        }
        let text = serialize(&h);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap();
        let back: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back.max(), h.max());
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
    }

    #[test]
    fn ramp_ios_go_to_the_series_only() {
        let (tx, rx) = std::sync::mpsc::channel();
        let start = Instant::now();
        let mut r = Recorder::new(
            start,
            Duration::from_millis(500),
            Duration::from_secs(1),
            tx,
            false,
        );
        r.complete(Op::Read, 4096, start, start + Duration::from_millis(100));
        r.complete(Op::Read, 4096, start, start + Duration::from_millis(600));
        r.complete(Op::Write, 4096, start, start + Duration::from_millis(1500));
        let totals = r.finish(start + Duration::from_millis(1600));
        assert_eq!(
            totals.ops[0].0, 1,
            "the read inside the ramp is not counted"
        );
        assert_eq!(totals.ops[1].0, 1);
        let msgs: Vec<_> = rx.try_iter().collect();
        assert_eq!(msgs.len(), 2);
        assert_eq!(
            msgs[0].ops[0].as_ref().unwrap().ios,
            2,
            "the series shows the ramp"
        );
        assert_eq!(msgs[1].index, 1);
        assert!(msgs[1].end.is_some());
    }

    /// A recorder with no ramp and 1 s intervals, started now, and its series' end.
    fn recorder() -> (Recorder, Instant, std::sync::mpsc::Receiver<IntervalMsg>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let start = Instant::now();
        let r = Recorder::new(start, Duration::ZERO, Duration::from_secs(1), tx, false);
        (r, start, rx)
    }

    #[test]
    fn skipped_intervals_are_reported_empty() {
        let (mut r, start, rx) = recorder();
        r.complete(Op::Read, 1, start, start + Duration::from_millis(100));
        r.complete(Op::Read, 1, start, start + Duration::from_millis(3500));
        r.finish(start + Duration::from_millis(3600));
        let idx: Vec<u64> = rx.try_iter().map(|m| m.index).collect();
        assert_eq!(idx, vec![0, 1, 2, 3]);
    }

    #[test]
    fn only_the_ops_that_ran_get_a_histogram() {
        let (mut r, start, _rx) = recorder();
        r.complete(Op::Write, 4096, start, start + Duration::from_micros(3));
        let totals = r.finish(start + Duration::from_millis(1));
        assert!(totals.fsync.is_none(), "no fsync, no histogram");
        assert!(totals.ops[Op::Read as usize].2.is_none());
        let w = &totals.ops[Op::Write as usize];
        assert_eq!((w.0, w.1), (1, 4096));
        assert_eq!(w.2.as_ref().map(Histogram::len), Some(1));
        // An op no thread ran still reports, as zeros.
        let read = merged_result(
            crate::report::IoOp::Read.into(),
            [&totals.ops[Op::Read as usize]],
            1.0,
        );
        assert_eq!((read.ios, read.lat_ns.p50), (0, 0));
    }
}
