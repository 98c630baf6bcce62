//! DiskSpd's text report (ResultParser.cpp's layout), from the engine's report, so
//! scripts that read DiskSpd's output keep working: the `total:` lines of the Total,
//! Read and Write IO tables and the latency percentiles are where DiskSpd puts them.
//!
//! Two things differ, and say so where they show: the engine counts a job's threads
//! together, so each table has one row for all of them (`all`) where DiskSpd has one
//! per thread; and the CPU table is the engine's own use of the machine's CPUs (one
//! `avg.` line), where DiskSpd shows each CPU of the whole machine.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::{Cache, Profile};
use crate::record;
use crate::report::{IoOp, OpResult, Report, ResultOp};

/// `_DisplayFileSize`: the largest binary unit the size is at least one of, whole or
/// with two decimals.
fn file_size(n: u64) -> String {
    for (shift, name) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        let unit = 1u64 << shift;
        if n >= unit {
            if n & (unit - 1) == 0 {
                return format!("{}{name}", n >> shift);
            }
            return format!("{:.2}{name}", n as f64 / unit as f64);
        }
    }
    n.to_string()
}

/// The "Command Line" and "Input parameters" sections (all of `-Rp`'s output).
pub fn profile(p: &Profile) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "\nCommand Line: diskspd {}\n\nInput parameters:\n\n",
        p.cmdline
    );
    s.push_str("\ttimespan:   1\n\t-------------\n");
    let _ = writeln!(s, "\tduration: {}s", p.duration_s);
    let _ = writeln!(s, "\twarm up time: {}s", p.warmup_s);
    let _ = writeln!(s, "\tcool down time: {}s", p.cooldown_s);
    if p.no_affinity {
        s.push_str("\taffinity disabled\n");
    }
    if p.latency {
        s.push_str("\tmeasuring latency\n");
    }
    if let Some(ms) = p.iops_bucket_ms {
        let _ = writeln!(s, "\tgathering IOPS at intervals of {ms}ms");
    }
    let _ = writeln!(s, "\trandom seed: {}", p.seed);
    if p.pool {
        let _ = writeln!(s, "\tthread pool with {} threads", p.threads);
        let _ = writeln!(
            s,
            "\tnumber of outstanding I/O operations per thread: {}",
            p.outstanding
        );
    }
    if p.random_each_write {
        s.push_str("\tgenerating random data for each write IO\n");
    }
    let _ = writeln!(s, "\tpath: '{}'", p.path);
    let _ = writeln!(s, "\t\tthink time: {}ms", p.think_ms);
    let _ = writeln!(s, "\t\tburst size: {}", p.burst);
    s.push_str(match p.cache {
        Cache::Cached => "\t\tusing software cache\n",
        Cache::Disabled => "\t\tsoftware cache disabled\n",
    });
    s.push_str(match (p.write_through, p.cache) {
        (true, Cache::Cached) => {
            "\t\thardware and software write caches disabled, writethrough on\n"
        }
        (true, Cache::Disabled) => "\t\thardware write cache disabled, writethrough on\n",
        (false, _) => "\t\tusing hardware write cache, writethrough off\n",
    });
    if p.zeros {
        s.push_str("\t\tzeroing write buffers\n");
    }
    match p.write_pct {
        0 => s.push_str("\t\tperforming read test\n"),
        100 => s.push_str("\t\tperforming write test\n"),
        w => {
            let _ = writeln!(
                s,
                "\t\tperforming mix test (read/write ratio: {}/{w})",
                100 - w
            );
        }
    }
    let _ = writeln!(s, "\t\tblock size: {}", file_size(p.block));
    match p.random_align {
        Some(a) => {
            let _ = writeln!(s, "\t\tusing random I/O (alignment: {})", file_size(a));
        }
        None => {
            let stride = p.stride.unwrap_or(p.block);
            let _ = writeln!(
                s,
                "\t\tusing sequential I/O (stride: {})",
                file_size(stride)
            );
        }
    }
    if !p.pool {
        let _ = writeln!(
            s,
            "\t\tnumber of outstanding I/O operations per thread: {}",
            p.outstanding
        );
    }
    if p.base != 0 {
        let _ = writeln!(s, "\t\tbase file offset: {}", file_size(p.base));
    }
    if let Some(max) = p.max_size {
        let _ = writeln!(s, "\t\tmax file size: {}", file_size(max));
    }
    if p.thread_stride != 0 {
        let _ = writeln!(s, "\t\tthread stride size: {}", file_size(p.thread_stride));
    }
    if p.sequential_hint {
        s.push_str("\t\tusing FILE_FLAG_SEQUENTIAL_SCAN hint\n");
    }
    if p.random_hint {
        s.push_str("\t\tusing FILE_FLAG_RANDOM_ACCESS hint\n");
    }
    if !p.pool {
        let _ = writeln!(s, "\t\tthreads per file: {}", p.threads);
    }
    if p.outstanding > 1 && !p.pool {
        // The engine's io_uring in DiskSpd's words: its completion ports.
        s.push_str("\t\tusing I/O Completion Ports\n");
    }
    s.push_str(match p.priority {
        1 => "\t\tIO priority: very low\n",
        2 => "\t\tIO priority: low\n",
        _ => "\t\tIO priority: normal\n",
    });
    match p.throughput {
        Some(super::Throughput::Iops(n)) => {
            let _ = writeln!(s, "\t\tthroughput rate-limited to {n} IOPS");
        }
        Some(super::Throughput::BytesPerMs(n)) => {
            let _ = writeln!(s, "\t\tthroughput rate-limited to {n} B/ms");
        }
        None => {}
    }
    if let Some(d) = &p.distribution_text {
        let _ = writeln!(s, "\t\tIO Distribution: {d}");
    }
    s.push('\n');
    s
}

pub(super) fn op(r: &Report, which: IoOp) -> Option<&OpResult> {
    r.results.iter().find(|o| o.op == ResultOp::Io(which))
}

/// The engine's own CPU over the machine's `cpus`, in % (busy, user, kernel), over the
/// span its `usage_pct` is of (the whole job: its layout and warm-up too).
pub(super) fn cpu_percent(r: &Report, cpus: usize) -> (f64, f64, f64) {
    let used = r.cpu.user_s + r.cpu.sys_s;
    let span = if r.cpu.usage_pct > 0.0 {
        used * 100.0 / r.cpu.usage_pct
    } else {
        r.runtime_s
    };
    let wall = span.max(1e-9) * cpus as f64;
    let (user, kernel) = (100.0 * r.cpu.user_s / wall, 100.0 * r.cpu.sys_s / wall);
    (user + kernel, user, kernel)
}

/// The reads', the writes' and all I/O's latency histograms (None where there were none).
pub(super) type Latencies = (
    Option<Histogram<u64>>,
    Option<Histogram<u64>>,
    Option<Histogram<u64>>,
);

/// The reads', the writes' and all I/O's latency histograms.
pub(super) fn histograms(r: &Report) -> Latencies {
    let (rh, wh) = (hist(op(r, IoOp::Read)), hist(op(r, IoOp::Write)));
    let mut th: Option<Histogram<u64>> = None;
    for h in [&rh, &wh].into_iter().flatten() {
        match &mut th {
            Some(t) => {
                let _ = t.add(h);
            }
            None => th = Some(h.clone()),
        }
    }
    (rh, wh, th)
}

/// A table's title, its ops and their latencies.
type Section<'a> = (&'a str, Vec<&'a OpResult>, Option<&'a Histogram<u64>>);

fn hist(o: Option<&OpResult>) -> Option<Histogram<u64>> {
    o.and_then(|o| record::deserialize(&o.hist))
        .filter(|h| !h.is_empty())
}

/// DiskSpd's text report of a run of `p` (`ParseResults`).
pub fn report(p: &Profile, r: &Report, host: &str) -> String {
    let mut s = profile(p);
    let start = utc(r.start_unix_s);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let _ = write!(
        s,
        "System information:\n\n\tcomputer name: {host}\n\tstart time: {start}\n\n\tcpu count:\t\t{cpus}\n\n"
    );
    s.push_str("\nResults for timespan 1:\n");
    s.push_str("*******************************************************************************\n");
    let t = r.runtime_s;
    if t < 1e-7 {
        s.push_str(
            "The test was interrupted before the measurements began. No results are displayed.\n",
        );
        return s;
    }
    let _ = write!(
        s,
        "\nactual test time:\t{t:.2}s\nthread count:\t\t{}\n",
        p.threads
    );
    if p.pool {
        let _ = writeln!(s, "request count:\t\t{}", p.outstanding);
    }
    let (busy, user, kernel) = cpu_percent(r, cpus);
    s.push_str("\nCPU |  Usage |  User  | Kernel |  Idle\n");
    s.push_str("----------------------------------------\n");
    s.push_str("----------------------------------------\n");
    let _ = writeln!(
        s,
        "avg.| {busy:6.2}%| {user:6.2}%| {kernel:6.2}%| {:6.2}%",
        (100.0 - busy).max(0.0)
    );
    let (read, write) = (op(r, IoOp::Read), op(r, IoOp::Write));
    let (rh, wh, th) = histograms(r);
    let size = r.target.size_bytes;
    let sections: [Section; 3] = [
        (
            "Total IO",
            [read, write].into_iter().flatten().collect(),
            th.as_ref(),
        ),
        ("Read IO", read.into_iter().collect(), rh.as_ref()),
        ("Write IO", write.into_iter().collect(), wh.as_ref()),
    ];
    for (title, ops, h) in sections {
        let _ = write!(s, "\n{title}\n");
        section(
            &mut s,
            p,
            &ops,
            h,
            t,
            &format!("{} ({})", p.path, file_size(size)),
        );
    }
    if p.latency {
        s.push_str("\nTotal latency distribution:\n");
        latency_chart(&mut s, rh.as_ref(), wh.as_ref(), th.as_ref());
    }
    s
}

fn section(
    s: &mut String,
    p: &Profile,
    ops: &[&OpResult],
    h: Option<&Histogram<u64>>,
    t: f64,
    file: &str,
) {
    let lat = p.latency;
    let iops_sd = p.iops_bucket_ms.is_some();
    let _ = writeln!(
        s,
        "thread |       bytes     |     I/Os     |    MiB/s   |  I/O per s {}{}{}|  file",
        if lat { "|  AvgLat  " } else { "" },
        if iops_sd { "| IopsStdDev " } else { "" },
        if lat { "| LatStdDev " } else { "" },
    );
    let border = format!(
        "------------------------------------------------------------------{}{}{}------------\n",
        if lat { "-----------" } else { "" },
        if iops_sd { "-------------" } else { "" },
        if lat { "------------" } else { "" },
    );
    let bytes: u64 = ops.iter().map(|o| o.bytes).sum();
    let ios: u64 = ops.iter().map(|o| o.ios).sum();
    let mut tail = String::new();
    if lat {
        let avg = h.map_or(0.0, |h| h.mean() / 1e6);
        let _ = write!(tail, " | {avg:8.3}");
    }
    if iops_sd {
        // The series is kept for the whole job, not per op: "N/A" where it cannot be split.
        let _ = write!(tail, " | {:>10}", "N/A");
    }
    if lat {
        match h {
            Some(h) if !h.is_empty() => {
                let _ = write!(tail, " |  {:8.3}", h.stdev() / 1e6);
            }
            _ => tail.push_str(" |       N/A"),
        }
    }
    s.push_str(&border);
    let _ = writeln!(
        s,
        "{:>6} | {bytes:15} | {ios:12} | {:10.2} | {:10.2}{tail} | {file}",
        "all",
        bytes as f64 / 1024.0 / 1024.0 / t,
        ios as f64 / t,
    );
    s.push_str(&border);
    let _ = writeln!(
        s,
        "total:   {bytes:15} | {ios:12} | {:10.2} | {:10.2}{tail}",
        bytes as f64 / 1024.0 / 1024.0 / t,
        ios as f64 / t,
    );
}

/// `Util::DoubleToStringHelper`: `%10.3lf`.
fn ms(ns: u64) -> String {
    format!("{:10.3}", ns as f64 / 1e6)
}

fn latency_chart(
    s: &mut String,
    r: Option<&Histogram<u64>>,
    w: Option<&Histogram<u64>>,
    t: Option<&Histogram<u64>>,
) {
    s.push_str("  %-ile |  Read (ms) | Write (ms) | Total (ms)\n");
    s.push_str("----------------------------------------------\n");
    let cell = |h: Option<&Histogram<u64>>, f: &dyn Fn(&Histogram<u64>) -> u64| {
        h.map_or_else(|| format!("{:>10}", "N/A"), |h| ms(f(h)))
    };
    let total = |f: &dyn Fn(&Histogram<u64>) -> u64| t.map_or(0.0, |h| f(h) as f64 / 1e6);
    let _ = writeln!(
        s,
        "    min | {} | {} | {:10.3}",
        cell(r, &|h| h.min()),
        cell(w, &|h| h.min()),
        total(&|h| h.min())
    );
    for (q, name) in [
        (0.25, "25th"),
        (0.50, "50th"),
        (0.75, "75th"),
        (0.90, "90th"),
        (0.95, "95th"),
        (0.99, "99th"),
        (0.999, "3-nines"),
        (0.9999, "4-nines"),
        (0.99999, "5-nines"),
        (0.999999, "6-nines"),
        (0.9999999, "7-nines"),
        (0.99999999, "8-nines"),
        (0.999999999, "9-nines"),
    ] {
        let at = move |h: &Histogram<u64>| h.value_at_quantile(q);
        let _ = writeln!(
            s,
            "{name:>7} | {} | {} | {:10.3}",
            cell(r, &at),
            cell(w, &at),
            total(&at)
        );
    }
    let _ = writeln!(
        s,
        "    max | {} | {} | {:10.3}",
        cell(r, &|h| h.max()),
        cell(w, &|h| h.max()),
        total(&|h| h.max())
    );
}

/// `YYYY/MM/DD HH:MM:SS UTC` of unix seconds (days from the civil calendar, no tz data).
pub(super) fn utc(unix_s: f64) -> String {
    let secs = unix_s.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y}/{m:02}/{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_diskspd_shows_them() {
        assert_eq!(file_size(8192), "8KiB");
        assert_eq!(file_size(1 << 30), "1GiB");
        assert_eq!(file_size(1536), "1.50KiB");
        assert_eq!(file_size(512), "512");
    }

    #[test]
    fn start_time_is_utc_civil() {
        assert_eq!(utc(0.0), "1970/01/01 00:00:00 UTC");
        assert_eq!(utc(1_795_896_656.0), "2026/11/28 20:10:56 UTC");
        assert_eq!(utc(951_782_400.0), "2000/02/29 00:00:00 UTC");
    }

    #[test]
    fn the_profile_section_reads_as_diskspds() {
        let args: Vec<String> = "-b8K -d30 -o8 -t8 -r -w0 -Sh -L -c1G testfile.dat"
            .split_whitespace()
            .map(String::from)
            .collect();
        let p = super::super::parse(&args).unwrap();
        let text = profile(&p);
        for line in [
            "Command Line: diskspd -b8K -d30 -o8 -t8 -r -w0 -Sh -L -c1G testfile.dat",
            "\tduration: 30s\n\twarm up time: 5s\n\tcool down time: 0s\n\tmeasuring latency\n",
            "\tpath: 'testfile.dat'\n",
            "\t\tsoftware cache disabled\n\t\thardware write cache disabled, writethrough on\n",
            "\t\tperforming read test\n\t\tblock size: 8KiB\n\t\tusing random I/O (alignment: 8KiB)\n",
            "\t\tnumber of outstanding I/O operations per thread: 8\n",
            "\t\tthreads per file: 8\n\t\tusing I/O Completion Ports\n\t\tIO priority: normal\n",
        ] {
            assert!(text.contains(line), "{line:?} not in\n{text}");
        }
    }
}
