//! Merges the threads' interval reports into the job's time series, and hands each
//! completed interval to the steady-state tracker when the job has one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::clock::Instant;
use crate::record::{IntervalMsg, OPS};
use crate::report::{IntervalOp, SeriesPoint};
use crate::steady::{self, Tracker};

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
    steady: Option<Tracker>,
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
            steady: None,
        }
    }

    /// Judges the job's steadiness as its intervals complete (`steady_state = true`).
    pub fn with_steady(mut self, limits: Option<steady::Limits>) -> Self {
        self.steady = limits.map(Tracker::new);
        self
    }

    /// Takes every interval the threads send until they all hang up, handing each
    /// completed point to `on_point` as it completes (live progress), and setting
    /// `steady` once the job is steady (and has measured `steady_measure` more).
    pub fn drain(
        &mut self,
        rx: impl IntoIterator<Item = IntervalMsg>,
        on_point: &mut dyn FnMut(&SeriesPoint),
        steady: &AtomicBool,
    ) {
        for msg in rx {
            if let Some(p) = self.add(msg) {
                on_point(p);
            }
            if self.steady.as_ref().is_some_and(Tracker::done) {
                steady.store(true, Ordering::Relaxed);
            }
        }
    }

    /// The steady-state verdict, once the threads have hung up (`drain` returned).
    /// Intervals completed only by `finish` (after a thread ended early) are not judged.
    pub fn take_steady(&mut self) -> Option<steady::Outcome> {
        self.steady.take().map(Tracker::finish)
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
        let point = self.point(msg.index, &acc);
        if let Some(t) = &mut self.steady {
            let ops = acc
                .ops
                .each_ref()
                .map(|a| (a.ios, a.bytes, a.hist.as_ref()));
            let begin = Duration::from_nanos(self.interval.as_nanos() as u64 * msg.index);
            t.push(begin.as_secs_f64(), point.t_s, point.ramp, ops);
        }
        self.points.push(point);
        self.points.last()
    }

    fn point(&self, index: u64, acc: &Acc) -> SeriesPoint {
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
        let [r, w, f, l, t, b, tr] = &acc.ops;
        let op = |a: &OpAcc| -> Option<IntervalOp> {
            if a.ios == 0 {
                return None;
            }
            Some(IntervalOp {
                ios: a.ios,
                bytes: a.bytes,
                iops: a.ios as f64 / dur,
                bw_bytes: a.bytes as f64 / dur,
                lat_mean_ns: a.lat_sum_ns as f64 / a.ios as f64,
                lat_p99_ns: a.hist.as_ref().map_or(0, |h| h.value_at_quantile(0.99)),
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
            trim: op(tr),
        }
    }

    /// Finalises what is left (threads that ended early) and returns the series in order.
    pub fn finish(mut self) -> Vec<SeriesPoint> {
        let rest: Vec<_> = std::mem::take(&mut self.pending).into_iter().collect();
        for (index, acc) in rest {
            let p = self.point(index, &acc);
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
                && p.trim.is_none()
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
        (&mut into.trim, from.trim),
    ] {
        if let Some(a) = a.as_mut() {
            a.iops = a.ios as f64 / dur;
            a.bw_bytes = a.bytes as f64 / dur;
        }
        merge_op(a, b, dur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{interval_hist, IntervalPart, OPS};

    const S: Duration = Duration::from_secs(1);

    /// One thread's report of interval `index`: `reads` reads of 4 KiB, each `lat_ns` long.
    fn msg(index: u64, reads: u64, lat_ns: u64, end: Option<Instant>) -> IntervalMsg {
        let mut ops: [Option<IntervalPart>; OPS] = std::array::from_fn(|_| None);
        if reads > 0 {
            let mut hist = interval_hist();
            hist.record_n(lat_ns, reads).unwrap();
            ops[0] = Some(IntervalPart {
                ios: reads,
                bytes: reads * 4096,
                lat_sum_ns: u128::from(reads * lat_ns),
                hist,
            });
        }
        IntervalMsg { index, end, ops }
    }

    #[test]
    fn an_interval_becomes_a_point_once_every_thread_has_reported_it() {
        let start = Instant::now();
        let mut b = SeriesBuilder::new(2, start, S, Duration::ZERO);
        assert!(
            b.add(msg(0, 100, 1_000, None)).is_none(),
            "one thread of two"
        );
        let p = b
            .add(msg(0, 300, 3_000, None))
            .expect("both threads")
            .clone();
        assert_eq!((p.t_s, p.dur_s, p.ramp), (1.0, 1.0, false));
        let r = p.read.expect("reads were done");
        assert_eq!((r.ios, r.bytes), (400, 400 * 4096));
        assert_eq!(r.iops, 400.0);
        assert_eq!(r.lat_mean_ns, 2_500.0, "weighted by each thread's I/Os");
        assert!(
            r.lat_p99_ns >= 2_970,
            "p99 of the merged histograms: {}",
            r.lat_p99_ns
        );
        assert!(p.write.is_none() && p.files.is_none());
    }

    #[test]
    fn intervals_completed_out_of_order_come_back_in_time_order() {
        let start = Instant::now();
        let mut b = SeriesBuilder::new(2, start, S, Duration::ZERO);
        b.add(msg(0, 1, 10, None));
        b.add(msg(1, 1, 10, None));
        b.add(msg(1, 1, 10, None));
        b.add(msg(0, 1, 10, None));
        let ts: Vec<f64> = b.finish().iter().map(|p| p.t_s).collect();
        assert_eq!(ts, [1.0, 2.0]);
    }

    #[test]
    fn the_last_interval_ends_when_the_last_thread_ended() {
        let start = Instant::now();
        let mut b = SeriesBuilder::new(2, start, S, Duration::ZERO);
        b.add(msg(0, 10, 10, None));
        b.add(msg(0, 10, 10, None));
        b.add(msg(1, 5, 10, Some(start + Duration::from_millis(1_300))));
        b.add(msg(1, 5, 10, Some(start + Duration::from_millis(1_500))));
        let points = b.finish();
        let last = points.last().unwrap();
        assert!((last.t_s - 1.5).abs() < 1e-9, "{}", last.t_s);
        assert!((last.dur_s - 0.5).abs() < 1e-9, "{}", last.dur_s);
        assert_eq!(last.read.as_ref().unwrap().iops, 20.0, "10 I/Os in 0.5 s");
    }

    #[test]
    fn the_last_sliver_is_folded_into_the_point_before_it() {
        let start = Instant::now();
        let mut b = SeriesBuilder::new(1, start, S, Duration::ZERO);
        b.add(msg(0, 1_000, 1_000, None));
        // 10 ms past the boundary: under interval / 20, too short to be a rate of its own.
        b.add(msg(
            1,
            10,
            3_000,
            Some(start + Duration::from_millis(1_010)),
        ));
        let points = b.finish();
        assert_eq!(points.len(), 1, "{points:?}");
        let p = &points[0];
        assert!(
            (p.t_s - 1.01).abs() < 1e-9 && (p.dur_s - 1.01).abs() < 1e-9,
            "{p:?}"
        );
        let r = p.read.as_ref().unwrap();
        assert_eq!(r.ios, 1_010);
        assert!((r.iops - 1_010.0 / 1.01).abs() < 1e-6, "{}", r.iops);
        assert!((r.lat_mean_ns - (1_000.0 * 1_000.0 + 10.0 * 3_000.0) / 1_010.0).abs() < 1e-6);
        assert!(
            r.lat_p99_ns >= 2_970,
            "the larger p99 bounds the merged one"
        );
    }

    #[test]
    fn a_longer_last_interval_keeps_its_own_point() {
        let start = Instant::now();
        let mut b = SeriesBuilder::new(1, start, S, Duration::ZERO);
        b.add(msg(0, 1_000, 1_000, None));
        b.add(msg(
            1,
            100,
            1_000,
            Some(start + Duration::from_millis(1_100)),
        ));
        assert_eq!(b.finish().len(), 2);
    }

    #[test]
    fn trailing_intervals_where_nothing_happened_are_dropped() {
        let start = Instant::now();
        let mut b = SeriesBuilder::new(1, start, S, Duration::ZERO);
        b.add(msg(0, 10, 10, None));
        b.add(msg(1, 0, 0, None));
        b.add(msg(2, 0, 0, Some(start + Duration::from_millis(2_500))));
        let points = b.finish();
        assert_eq!(points.len(), 1, "{points:?}");
        assert_eq!(points[0].t_s, 1.0);
    }

    #[test]
    fn points_inside_the_ramp_are_marked() {
        let start = Instant::now();
        let mut b = SeriesBuilder::new(1, start, S, Duration::from_millis(1_500));
        for i in 0..3 {
            b.add(msg(i, 10, 10, None));
        }
        let ramp: Vec<bool> = b.finish().iter().map(|p| p.ramp).collect();
        assert_eq!(
            ramp,
            [true, true, false],
            "an interval that starts in the ramp is ramp"
        );
    }
}
