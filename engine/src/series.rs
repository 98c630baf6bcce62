//! Merges the threads' interval reports into the job's time series.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::record::{interval_hist, IntervalMsg, OPS};
use crate::report::{IntervalOp, SeriesPoint};

#[derive(Default)]
struct OpAcc {
    ios: u64,
    bytes: u64,
    lat_sum_ns: u128,
    hist: Option<Histogram<u64>>,
}

#[derive(Default)]
struct Acc {
    reports: u32,
    end: Option<Instant>,
    ops: [OpAcc; OPS],
}

/// Collects interval messages; an interval becomes a point once every thread reported it.
pub struct SeriesBuilder {
    threads: u32,
    start: Instant,
    interval: Duration,
    ramp: Duration,
    pending: BTreeMap<u64, Acc>,
    points: Vec<SeriesPoint>,
}

impl SeriesBuilder {
    pub fn new(threads: u32, start: Instant, interval: Duration, ramp: Duration) -> Self {
        Self {
            threads,
            start,
            interval,
            ramp,
            pending: BTreeMap::new(),
            points: Vec::new(),
        }
    }

    /// Takes every interval the threads send until they all hang up, handing each
    /// completed point to `on_point` as it completes (live progress).
    pub fn drain(
        &mut self,
        rx: impl IntoIterator<Item = IntervalMsg>,
        on_point: &mut dyn FnMut(&SeriesPoint),
    ) {
        for msg in rx {
            if let Some(p) = self.add(msg) {
                on_point(p);
            }
        }
    }

    /// Adds one thread's interval; returns the point when this completed it.
    pub fn add(&mut self, msg: IntervalMsg) -> Option<&SeriesPoint> {
        let acc = self.pending.entry(msg.index).or_default();
        acc.reports += 1;
        if let Some(end) = msg.end {
            acc.end = Some(acc.end.map_or(end, |e| e.max(end)));
        }
        for (slot, part) in acc.ops.iter_mut().zip(msg.ops) {
            let Some(part) = part else { continue };
            slot.ios += part.ios;
            slot.bytes += part.bytes;
            slot.lat_sum_ns += part.lat_sum_ns;
            match &mut slot.hist {
                Some(h) => {
                    // Same bounds and precision on both sides, so this cannot fail.
                    let _ = h.add(&part.hist);
                }
                None => slot.hist = Some(part.hist),
            }
        }
        if acc.reports < self.threads {
            return None;
        }
        let acc = self.pending.remove(&msg.index)?;
        self.points.push(self.point(msg.index, acc));
        self.points.last()
    }

    fn point(&self, index: u64, acc: Acc) -> SeriesPoint {
        let iv_ns = self.interval.as_nanos() as u64;
        let begin = Duration::from_nanos(iv_ns * index);
        let full_end = Duration::from_nanos(iv_ns * (index + 1));
        let end = acc
            .end
            .map(|e| e.saturating_duration_since(self.start))
            .unwrap_or(full_end)
            .min(full_end);
        let dur = end
            .saturating_sub(begin)
            .max(Duration::from_micros(1))
            .as_secs_f64();
        let [r, w, f, l, t, b] = acc.ops;
        let op = |a: OpAcc| -> Option<IntervalOp> {
            if a.ios == 0 {
                return None;
            }
            let hist = a.hist.unwrap_or_else(interval_hist);
            Some(IntervalOp {
                ios: a.ios,
                bytes: a.bytes,
                iops: a.ios as f64 / dur,
                bw_bytes: a.bytes as f64 / dur,
                lat_mean_ns: a.lat_sum_ns as f64 / a.ios as f64,
                lat_p99_ns: hist.value_at_quantile(0.99),
            })
        };
        SeriesPoint {
            t_s: end.as_secs_f64(),
            dur_s: dur,
            ramp: begin < self.ramp,
            read: op(r),
            write: op(w),
            files: op(f),
            log: op(l),
            txn: op(t),
            background: op(b),
        }
    }

    /// Finalises what is left (threads that ended early) and returns the series in order.
    pub fn finish(mut self) -> Vec<SeriesPoint> {
        let rest: Vec<_> = std::mem::take(&mut self.pending).into_iter().collect();
        for (index, acc) in rest {
            let p = self.point(index, acc);
            self.points.push(p);
        }
        self.points.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        // Trailing intervals where no thread did anything (after every thread stopped) are noise.
        while self.points.last().is_some_and(|p| {
            p.read.is_none()
                && p.write.is_none()
                && p.files.is_none()
                && p.log.is_none()
                && p.txn.is_none()
                && p.background.is_none()
        }) && self.points.len() > 1
        {
            self.points.pop();
        }
        // Threads stop a few microseconds past a deadline that falls on an interval
        // boundary; a sliver that short would show as a meaningless rate, so it joins
        // the point before it.
        let sliver = self.interval.as_secs_f64() / 20.0;
        if self.points.len() > 1 && self.points.last().is_some_and(|p| p.dur_s < sliver) {
            let last = self.points.pop().expect("checked above");
            if let Some(prev) = self.points.last_mut() {
                merge_point(prev, last);
            }
        }
        self.points
    }
}

fn merge_op(into: &mut Option<IntervalOp>, from: Option<IntervalOp>, dur: f64) {
    let Some(b) = from else { return };
    match into {
        None => {
            *into = Some(IntervalOp {
                iops: b.ios as f64 / dur,
                bw_bytes: b.bytes as f64 / dur,
                ..b
            })
        }
        Some(a) => {
            let ios = a.ios + b.ios;
            a.lat_mean_ns =
                (a.lat_mean_ns * a.ios as f64 + b.lat_mean_ns * b.ios as f64) / ios as f64;
            // Without both histograms the exact p99 is gone; the larger one bounds it.
            a.lat_p99_ns = a.lat_p99_ns.max(b.lat_p99_ns);
            a.ios = ios;
            a.bytes += b.bytes;
            a.iops = a.ios as f64 / dur;
            a.bw_bytes = a.bytes as f64 / dur;
        }
    }
}

fn merge_point(into: &mut SeriesPoint, from: SeriesPoint) {
    let dur = into.dur_s + from.dur_s;
    into.t_s = from.t_s;
    into.dur_s = dur;
    for (a, b) in [
        (&mut into.read, from.read),
        (&mut into.write, from.write),
        (&mut into.files, from.files),
        (&mut into.log, from.log),
        (&mut into.txn, from.txn),
        (&mut into.background, from.background),
    ] {
        if let Some(a) = a.as_mut() {
            a.iops = a.ios as f64 / dur;
            a.bw_bytes = a.bytes as f64 / dur;
        }
        merge_op(a, b, dur);
    }
}
