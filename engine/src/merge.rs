//! Several reports as one: the one implementation of the rule fio's `group_reporting`,
//! a fio job file's measured jobs and a multi-host run's ranks share (fio has one,
//! `sum_thread_stats`, for its groups and its remote hosts alike).
//!
//! Counts are summed; HDR histograms are added, and the percentiles, mean and deviation
//! come from the sum (never averaged); rates are over the span from the earliest measured
//! start to the latest measured end, so a part that started late or ran long lowers the
//! sum instead of hiding; the status is the worst; warnings and errors are kept, each
//! warning labelled with its part. `fslab-engine merge` reads a `MergeInput` and prints
//! the merged report, a `Report` like any other (`fslab-engine schema merge` is the
//! input's schema).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::diagnostics::Warning;
use crate::record::{deserialize, serialize, summarize, total_hist};
use crate::report::{
    Cpu, FsyncResult, IntervalOp, IoErrorEntry, OpResult, ResultOp, Series, SeriesPoint, Status,
};

/// How the parts ran, which decides how their series and CPU add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum How {
    /// In one process, on one clock (a fio job file's jobs): the series is summed per
    /// wall-clock interval from the earliest measured start; the CPU is the longest
    /// part's (each part's is the whole process's over its own span).
    Jobs,
    /// On several hosts after a common barrier (the ranks of a multi-host run): the
    /// series is summed interval by interval, each part's from its own start; the CPU is
    /// summed and its share taken over the span.
    Ranks,
}

/// What `fslab-engine merge` reads.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "fslab-engine merge input")]
pub struct MergeInput {
    pub how: How,
    /// The parts, in order: the first one's job, target and engine describe the merged
    /// report.
    pub parts: Vec<Part>,
}

/// One report to merge.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// Put before each of the part's warnings: `[reads]`, `rank 1 (host-b):`.
    pub label: String,
    /// The part's report as the engine printed it; null for a part that ended without
    /// one (the merged status is then `failed`).
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub report: Option<Value>,
}

/// What merging reads of a report; the rest is the first part's.
#[derive(Debug, Deserialize)]
struct Measured {
    start_unix_s: f64,
    ramp_s: f64,
    runtime_s: f64,
    status: Status,
    interrupted: bool,
    results: Vec<OpResult>,
    fsync: FsyncResult,
    series: Series,
    cpu: Cpu,
    errors: Vec<IoErrorEntry>,
    warnings: Vec<Warning>,
}

impl Measured {
    fn start(&self) -> f64 {
        self.start_unix_s + self.ramp_s
    }
}

/// The JSON Schema of `merge`'s input, as committed in `schemas/merge.schema.json`.
pub fn input_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(MergeInput)).unwrap_or_default()
}

/// The parts as one report (a JSON object in the report's layout), or why not.
pub fn merge(input: MergeInput) -> Result<Value, String> {
    let mut parts: Vec<(String, Value, Measured)> = Vec::new();
    let mut missing = false;
    for p in input.parts {
        let Some(doc) = p.report else {
            missing = true;
            continue;
        };
        let m: Measured = serde_json::from_value(doc.clone())
            .map_err(|e| format!("part `{}`: not an engine report: {e}", p.label))?;
        parts.push((p.label, doc, m));
    }
    let Some((_, first, _)) = parts.first() else {
        return Err("no part has a report".into());
    };
    let mut out = first.clone();
    let measured: Vec<&Measured> = parts.iter().map(|(_, _, m)| m).collect();
    let t0 = measured
        .iter()
        .map(|m| m.start())
        .fold(f64::INFINITY, f64::min);
    let end = measured
        .iter()
        .map(|m| m.start() + m.runtime_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let span = (end - t0).max(1e-9);

    let results = summed_results(measured.iter().map(|m| m.results.as_slice()), span);
    let points = match input.how {
        How::Jobs => by_wall_clock(&measured, t0),
        How::Ranks => by_index(&measured),
    };
    let cpu = match input.how {
        How::Jobs => measured
            .iter()
            .max_by(|a, b| a.runtime_s.total_cmp(&b.runtime_s))
            .map(|m| m.cpu.clone())
            .unwrap_or_default(),
        How::Ranks => {
            let mut c = Cpu::default();
            for m in &measured {
                c.user_s += m.cpu.user_s;
                c.sys_s += m.cpu.sys_s;
                c.ctx_voluntary += m.cpu.ctx_voluntary;
                c.ctx_involuntary += m.cpu.ctx_involuntary;
            }
            c.usage_pct = (c.user_s + c.sys_s) / span * 100.0;
            c
        }
    };
    // fsyncs carry no histogram: their count adds up, their latency is the first part's.
    let fsync = FsyncResult {
        count: measured.iter().map(|m| m.fsync.count).sum(),
        lat_ns: measured[0].fsync.lat_ns.clone(),
    };
    let warnings: Vec<Warning> = parts
        .iter()
        .flat_map(|(label, _, m)| {
            m.warnings.iter().map(move |w| Warning {
                message: format!("{label} {}", w.message),
                ..w.clone()
            })
        })
        .collect();
    let errors: Vec<&IoErrorEntry> = measured.iter().flat_map(|m| m.errors.iter()).collect();
    let status = if missing || measured.iter().any(|m| m.status == Status::Failed) {
        Status::Failed
    } else if measured.iter().any(|m| m.status == Status::Interrupted) {
        Status::Interrupted
    } else {
        Status::Ok
    };

    let obj = out
        .as_object_mut()
        .ok_or("the first part's report is not an object")?;
    obj.insert("results".into(), json(&results));
    obj.insert("fsync".into(), json(&fsync));
    obj.insert("cpu".into(), json(&cpu));
    obj.insert("warnings".into(), json(&warnings));
    obj.insert("errors".into(), json(&errors));
    obj.insert("status".into(), json(&status));
    obj.insert(
        "interrupted".into(),
        Value::Bool(measured.iter().any(|m| m.interrupted)),
    );
    obj.insert("runtime_s".into(), json(&span));
    if let Some(series) = obj.get_mut("series").and_then(Value::as_object_mut) {
        series.insert("points".into(), json(&points));
    }
    match input.how {
        How::Jobs => {
            // One span of one process: measured from its first start, no ramp left in
            // it; no part's steady window or layout speaks for the whole.
            obj.insert("start_unix_s".into(), json(&t0));
            obj.insert("ramp_s".into(), json(&0.0));
            obj.insert("layout".into(), Value::Null);
            obj.remove("steady_state");
        }
        How::Ranks => {
            let start = measured
                .iter()
                .map(|m| m.start_unix_s)
                .fold(f64::INFINITY, f64::min);
            obj.insert("start_unix_s".into(), json(&start));
        }
    }
    Ok(out)
}

fn json<T: Serialize + ?Sized>(v: &T) -> Value {
    serde_json::to_value(v).expect("report parts serialize")
}

/// The results of several reports as one, op by op in order of appearance: counts
/// summed, histograms added, rates over `span_s`; the least minimum and the largest
/// maximum latency as the parts measured them (the histogram rounds them).
pub fn summed_results<'a>(
    parts: impl Iterator<Item = &'a [OpResult]>,
    span_s: f64,
) -> Vec<OpResult> {
    let mut order: Vec<ResultOp> = Vec::new();
    let mut same: Vec<Vec<&OpResult>> = Vec::new();
    for results in parts {
        for r in results {
            match order.iter().position(|op| *op == r.op) {
                Some(i) => same[i].push(r),
                None => {
                    order.push(r.op);
                    same.push(vec![r]);
                }
            }
        }
    }
    order
        .into_iter()
        .zip(same)
        .map(|(op, rs)| {
            let mut hist = total_hist();
            for r in &rs {
                if let Some(h) = deserialize(&r.hist) {
                    // Both were made with the engine's bounds: adding cannot fail.
                    let _ = hist.add(&h);
                }
            }
            let mut lat_ns = summarize(&hist);
            let timed: Vec<&&OpResult> = rs.iter().filter(|r| r.ios > 0).collect();
            if !timed.is_empty() {
                lat_ns.min = timed.iter().map(|r| r.lat_ns.min).min().unwrap_or(0);
                lat_ns.max = timed.iter().map(|r| r.lat_ns.max).max().unwrap_or(0);
            }
            let ios: u64 = rs.iter().map(|r| r.ios).sum();
            let bytes: u64 = rs.iter().map(|r| r.bytes).sum();
            OpResult {
                op,
                ios,
                bytes,
                iops: ios as f64 / span_s,
                bw_bytes: bytes as f64 / span_s,
                lat_ns,
                hist: serialize(&hist),
            }
        })
        .collect()
}

/// One op's intervals of several parts over the same stretch of time as one: counts and
/// rates summed, the mean latency weighted by completions, the p99 the largest (an upper
/// bound: intervals carry no histogram).
fn summed_interval(ops: &[&IntervalOp]) -> Option<IntervalOp> {
    if ops.is_empty() {
        return None;
    }
    let ios: u64 = ops.iter().map(|o| o.ios).sum();
    let weighted: f64 = ops.iter().map(|o| o.lat_mean_ns * o.ios as f64).sum();
    Some(IntervalOp {
        ios,
        bytes: ops.iter().map(|o| o.bytes).sum(),
        iops: ops.iter().map(|o| o.iops).sum(),
        bw_bytes: ops.iter().map(|o| o.bw_bytes).sum(),
        lat_mean_ns: if ios > 0 { weighted / ios as f64 } else { 0.0 },
        lat_p99_ns: ops.iter().map(|o| o.lat_p99_ns).max().unwrap_or(0),
    })
}

/// A series point's op fields, in one order.
fn fields(p: &SeriesPoint) -> [Option<&IntervalOp>; 7] {
    [
        p.read.as_ref(),
        p.write.as_ref(),
        p.files.as_ref(),
        p.log.as_ref(),
        p.txn.as_ref(),
        p.background.as_ref(),
        p.trim.as_ref(),
    ]
}

fn point_of(t_s: f64, dur_s: f64, ramp: bool, ops: &[Vec<&IntervalOp>; 7]) -> SeriesPoint {
    SeriesPoint {
        t_s,
        dur_s,
        ramp,
        read: summed_interval(&ops[0]),
        write: summed_interval(&ops[1]),
        files: summed_interval(&ops[2]),
        log: summed_interval(&ops[3]),
        txn: summed_interval(&ops[4]),
        background: summed_interval(&ops[5]),
        trim: summed_interval(&ops[6]),
    }
}

/// The parts' measured intervals in wall-clock bins of the first part's interval from
/// `t0`, each interval in the bin its end falls in.
fn by_wall_clock(parts: &[&Measured], t0: f64) -> Vec<SeriesPoint> {
    let interval = parts[0].series.interval_s.max(1e-9);
    let mut bins: BTreeMap<i64, [Vec<&IntervalOp>; 7]> = BTreeMap::new();
    for m in parts {
        for p in m.series.points.iter().filter(|p| !p.ramp) {
            let k = ((m.start_unix_s + p.t_s - t0) / interval).round().max(0.0) as i64;
            let slot = bins.entry(k).or_default();
            for (i, op) in fields(p).into_iter().enumerate() {
                if let Some(op) = op {
                    slot[i].push(op);
                }
            }
        }
    }
    bins.iter()
        .map(|(&k, ops)| point_of(k as f64 * interval, interval, false, ops))
        .collect()
}

/// The parts' series summed interval by interval (as long as the longest), each part's
/// counted from its own start (the ranks started at a common barrier).
fn by_index(parts: &[&Measured]) -> Vec<SeriesPoint> {
    let longest = parts
        .iter()
        .map(|m| &m.series.points)
        .max_by_key(|p| p.len())
        .cloned()
        .unwrap_or_default();
    longest
        .iter()
        .enumerate()
        .map(|(i, base)| {
            let mut ops: [Vec<&IntervalOp>; 7] = Default::default();
            for m in parts {
                if let Some(p) = m.series.points.get(i) {
                    for (j, op) in fields(p).into_iter().enumerate() {
                        if let Some(op) = op {
                            ops[j].push(op);
                        }
                    }
                }
            }
            point_of(base.t_s, base.dur_s, base.ramp, &ops)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::total_hist;
    use serde_json::json;

    fn op(name: &str, ios: u64, lat_ns: &[u64]) -> Value {
        let mut h = total_hist();
        for &l in lat_ns {
            h.record(l).unwrap();
        }
        let lat = summarize(&h);
        json!({"op": name, "ios": ios, "bytes": ios * 4096, "iops": 0.0, "bw_bytes": 0.0,
               "lat_ns": lat, "hist": serialize(&h)})
    }

    fn report(start: f64, runtime: f64, results: Vec<Value>, warnings: Value) -> Value {
        let point = |t: f64, ios: u64| {
            json!({"t_s": t, "dur_s": 1.0, "ramp": false,
            "read": {"ios": ios, "bytes": ios * 4096, "iops": ios as f64,
                     "bw_bytes": (ios * 4096) as f64, "lat_mean_ns": 1000.0,
                     "lat_p99_ns": 2000}, "write": null})
        };
        json!({
            "schema_version": 1, "job": {"name": "j"}, "status": "ok", "interrupted": false,
            "start_unix_s": start, "ramp_s": 0.0, "runtime_s": runtime, "layout": null,
            "results": results, "fsync": {"count": 1, "lat_ns": summarize(&total_hist())},
            "series": {"interval_s": 1.0, "points": [point(1.0, 10), point(2.0, 20)]},
            "cpu": {"user_s": 1.0, "sys_s": 1.0, "usage_pct": 100.0, "ctx_voluntary": 1,
                    "ctx_involuntary": 1},
            "errors": [], "warnings": warnings,
        })
    }

    #[test]
    fn counts_add_up_and_rates_are_over_the_span() {
        let a = report(
            100.0,
            2.0,
            vec![op("read", 3, &[1000, 2000, 3000])],
            json!([]),
        );
        let b = report(101.0, 2.0, vec![op("read", 1, &[9000])], json!([]));
        let input: MergeInput = serde_json::from_value(json!({"how": "jobs", "parts": [
            {"label": "[a]", "report": a.clone()}, {"label": "[b]", "report": b.clone()}]}))
        .unwrap();
        let out = merge(input).unwrap();
        assert_eq!(out["runtime_s"], json!(3.0), "100 to 103");
        let read = &out["results"][0];
        assert_eq!(read["ios"], json!(4));
        assert_eq!(read["iops"], json!(4.0 / 3.0));
        // the least minimum and the largest maximum the parts reported
        assert_eq!(read["lat_ns"]["min"], a["results"][0]["lat_ns"]["min"]);
        assert_eq!(read["lat_ns"]["max"], b["results"][0]["lat_ns"]["max"]);
        // the percentiles come from the added histograms: 3 of 4 at or under ~3 us
        assert!(read["lat_ns"]["p50"].as_u64().unwrap() < 3100);
        assert!(read["lat_ns"]["p99"].as_u64().unwrap() >= 8990);
        assert_eq!(out["fsync"]["count"], json!(2));
        // a's seconds 1 and 2, b's 1 and 2 a second later: bins at 1, 2 and 3
        let pts = out["series"]["points"].as_array().unwrap();
        let ios: Vec<u64> = pts
            .iter()
            .map(|p| p["read"]["ios"].as_u64().unwrap())
            .collect();
        assert_eq!(ios, vec![10, 30, 20]);
        assert_eq!(out["start_unix_s"], json!(100.0));
        assert!(out.get("steady_state").is_none());
    }

    #[test]
    fn ranks_sum_their_cpu_and_their_intervals_by_index() {
        let a = report(100.0, 2.0, vec![op("write", 2, &[1000])], json!([]));
        let b = report(
            100.5,
            2.0,
            vec![op("write", 2, &[1000])],
            json!([
            {"kind": "short_run", "message": "took 0.5 s", "hint": null}]),
        );
        let input: MergeInput = serde_json::from_value(json!({"how": "ranks", "parts": [
            {"label": "rank 0 (h1):", "report": a},
            {"label": "rank 1 (h2):", "report": b}]}))
        .unwrap();
        let out = merge(input).unwrap();
        assert_eq!(out["cpu"]["user_s"], json!(2.0));
        assert_eq!(out["cpu"]["usage_pct"], json!(4.0 / 2.5 * 100.0));
        let pts = out["series"]["points"].as_array().unwrap();
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[1]["read"]["ios"], json!(40));
        assert_eq!(
            out["warnings"][0]["message"],
            json!("rank 1 (h2): took 0.5 s")
        );
    }

    #[test]
    fn a_part_without_a_report_fails_the_whole_and_no_report_is_an_error() {
        let a = report(100.0, 1.0, vec![op("read", 1, &[1000])], json!([]));
        let input: MergeInput = serde_json::from_value(json!({"how": "jobs", "parts": [
            {"label": "[a]", "report": a}, {"label": "[b]", "report": null}]}))
        .unwrap();
        assert_eq!(merge(input).unwrap()["status"], json!("failed"));
        let none: MergeInput = serde_json::from_value(json!({"how": "jobs", "parts": []})).unwrap();
        assert!(merge(none).is_err());
    }
}
