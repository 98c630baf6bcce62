//! DiskSpd's XML results (`-Rxml`; XmlResultParser.cpp's layout, and the profile as
//! Common.cpp's `GetXml` writes it), from the engine's report: what scripts and tools
//! that read DiskSpd's XML expect, and what `fslab import` reads back.
//!
//! As in the text report (`super::text`), the engine counts a job's threads together:
//! the `<Thread>` list has one thread (`<Id>0</Id>`) holding all the job's I/O, and the
//! CPU is the engine's own (one `<Average>`). Latency percentiles come from the engine's
//! histograms at DiskSpd's percentiles (0, 1 to 99, 99.9 to 99.9999999, 100).

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::text::{cpu_percent, histograms, op};
use super::{Cache, Profile, Throughput};
use crate::report::{IoOp, Report};

/// `&`, `<`, `>`, `"` as XML writes them: a path may hold any of them.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The `<Profile>` alone (`-Rpxml`), which `-X` reads back.
pub fn profile_only(p: &Profile) -> String {
    let mut s = String::new();
    profile(&mut s, p);
    // At the top level, not inside <Results>: two spaces less.
    s.lines()
        .map(|l| l.strip_prefix("  ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn profile(s: &mut String, p: &Profile) {
    let b = |v: bool| if v { "true" } else { "false" };
    s.push_str("  <Profile>\n    <Progress>0</Progress>\n    <ResultFormat>xml</ResultFormat>\n");
    s.push_str("    <Verbose>false</Verbose>\n    <TimeSpans>\n      <TimeSpan>\n");
    let _ = write!(
        s,
        "        <CompletionRoutines>false</CompletionRoutines>\n        <MeasureLatency>{}</MeasureLatency>\n        <CalculateIopsStdDev>{}</CalculateIopsStdDev>\n        <DisableAffinity>{}</DisableAffinity>\n",
        b(p.latency),
        b(p.iops_bucket_ms.is_some()),
        b(p.no_affinity)
    );
    let _ = write!(
        s,
        "        <Duration>{}</Duration>\n        <Warmup>{}</Warmup>\n        <Cooldown>{}</Cooldown>\n        <ThreadCount>{}</ThreadCount>\n        <RequestCount>{}</RequestCount>\n        <IoBucketDuration>{}</IoBucketDuration>\n        <RandSeed>{}</RandSeed>\n",
        p.duration_s,
        p.warmup_s,
        p.cooldown_s,
        if p.pool { p.threads } else { 0 },
        if p.pool { p.outstanding } else { 0 },
        p.iops_bucket_ms.unwrap_or(1000),
        p.seed
    );
    s.push_str("        <Targets>\n          <Target>\n");
    let t = "            ";
    let _ = writeln!(s, "{t}<Path>{}</Path>", esc(&p.path));
    let _ = writeln!(s, "{t}<BlockSize>{}</BlockSize>", p.block);
    let _ = writeln!(s, "{t}<BaseFileOffset>{}</BaseFileOffset>", p.base);
    let _ = writeln!(
        s,
        "{t}<SequentialScan>{}</SequentialScan>",
        b(p.sequential_hint)
    );
    let _ = writeln!(s, "{t}<RandomAccess>{}</RandomAccess>", b(p.random_hint));
    let _ = writeln!(s, "{t}<TemporaryFile>false</TemporaryFile>");
    let _ = writeln!(s, "{t}<UseLargePages>false</UseLargePages>");
    if p.cache == Cache::Disabled {
        let _ = writeln!(s, "{t}<DisableOSCache>true</DisableOSCache>");
    }
    if p.write_through {
        let _ = writeln!(s, "{t}<WriteThrough>true</WriteThrough>");
    }
    let pattern = if p.zeros {
        "zero"
    } else if p.random_each_write {
        "random"
    } else {
        "sequential"
    };
    let _ = writeln!(
        s,
        "{t}<WriteBufferContent>\n{t}  <Pattern>{pattern}</Pattern>\n{t}</WriteBufferContent>"
    );
    let _ = writeln!(s, "{t}<ParallelAsyncIO>false</ParallelAsyncIO>");
    if p.burst > 0 {
        let _ = writeln!(s, "{t}<BurstSize>{}</BurstSize>", p.burst);
        let _ = writeln!(s, "{t}<ThinkTime>{}</ThinkTime>", p.think_ms);
    }
    if let Some(c) = p.create {
        let _ = writeln!(s, "{t}<FileSize>{c}</FileSize>");
    }
    match p.random_align {
        Some(a) => {
            let _ = writeln!(s, "{t}<Random>{a}</Random>");
        }
        None => {
            let _ = writeln!(
                s,
                "{t}<StrideSize>{}</StrideSize>\n{t}<InterlockedSequential>false</InterlockedSequential>",
                p.stride.unwrap_or(p.block)
            );
        }
    }
    let _ = writeln!(s, "{t}<ThreadStride>{}</ThreadStride>", p.thread_stride);
    let _ = writeln!(
        s,
        "{t}<MaxFileSize>{}</MaxFileSize>",
        p.max_size.unwrap_or(0)
    );
    let _ = writeln!(s, "{t}<RequestCount>{}</RequestCount>", p.outstanding);
    let _ = writeln!(s, "{t}<WriteRatio>{}</WriteRatio>", p.write_pct);
    match p.throughput {
        Some(Throughput::Iops(n)) => {
            let _ = writeln!(s, "{t}<Throughput unit=\"IOPS\">{n}</Throughput>");
        }
        Some(Throughput::BytesPerMs(n)) => {
            let _ = writeln!(s, "{t}<Throughput>{n}</Throughput>");
        }
        None => {
            let _ = writeln!(s, "{t}<Throughput>0</Throughput>");
        }
    }
    let _ = writeln!(s, "{t}<ThreadsPerFile>{}</ThreadsPerFile>", p.threads);
    let _ = writeln!(s, "{t}<IOPriority>{}</IOPriority>", p.priority);
    let _ = writeln!(s, "{t}<Weight>1</Weight>");
    s.push_str("          </Target>\n        </Targets>\n      </TimeSpan>\n    </TimeSpans>\n  </Profile>\n");
}

/// DiskSpd's percentiles, as its XML writes them.
fn percentiles() -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = (1..=99).map(|p| (p.to_string(), f64::from(p))).collect();
    for (digits, p) in [
        (1, 99.9),
        (2, 99.99),
        (3, 99.999),
        (4, 99.9999),
        (5, 99.99999),
        (6, 99.999999),
        (7, 99.9999999),
    ] {
        out.push((format!("{p:.digits$}"), p));
    }
    out
}

fn latency(
    s: &mut String,
    r: Option<&Histogram<u64>>,
    w: Option<&Histogram<u64>>,
    t: Option<&Histogram<u64>>,
) {
    let ms = |ns: f64| ns / 1e6;
    let count = |h: Option<&Histogram<u64>>| h.map_or(0, |h| h.distinct_values());
    let _ = writeln!(
        s,
        "    <Latency ReadHistoBuckets=\"{}\" WriteHistoBuckets=\"{}\" TotalHistoBuckets=\"{}\">",
        count(r),
        count(w),
        count(t)
    );
    for (h, word, total) in [
        (r, "Read", "AverageReadMilliseconds"),
        (w, "Write", "AverageWriteMilliseconds"),
        (t, "", "AverageTotalMilliseconds"),
    ] {
        if let Some(h) = h {
            let sd = if word.is_empty() {
                "LatencyStdev".to_string()
            } else {
                format!("{word}LatencyStdev")
            };
            let _ = writeln!(s, "      <{total}>{:.3}</{total}>", ms(h.mean()));
            let _ = writeln!(s, "      <{sd}>{:.3}</{sd}>", ms(h.stdev()));
        }
    }
    let bucket = |s: &mut String, name: &str, f: &dyn Fn(&Histogram<u64>) -> u64| {
        let _ = writeln!(s, "      <Bucket>\n        <Percentile>{name}</Percentile>");
        for (h, word) in [(r, "Read"), (w, "Write"), (t, "Total")] {
            if let Some(h) = h {
                let _ = writeln!(
                    s,
                    "        <{word}Milliseconds>{:.3}</{word}Milliseconds>",
                    ms(f(h) as f64)
                );
            }
        }
        s.push_str("      </Bucket>\n");
    };
    bucket(s, "0", &|h| h.min());
    for (name, p) in percentiles() {
        bucket(s, &name, &move |h: &Histogram<u64>| {
            h.value_at_quantile(p / 100.0)
        });
    }
    bucket(s, "100", &|h| h.max());
    s.push_str("    </Latency>\n");
}

/// DiskSpd's XML results of a run of `p` (`XmlResultParser::ParseResults`).
pub fn report(p: &Profile, r: &Report, host: &str) -> String {
    let mut s = String::from("<Results>\n  <System>\n");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let _ = write!(
        s,
        "    <ComputerName>{}</ComputerName>\n    <Tool>\n      <Version>fslab-engine {}</Version>\n      <VersionDate></VersionDate>\n    </Tool>\n    <RunTime>{}</RunTime>\n",
        esc(host),
        env!("CARGO_PKG_VERSION"),
        super::text::utc(r.start_unix_s)
    );
    let _ = write!(
        s,
        "    <ProcessorTopology Heterogeneous=\"false\">\n      <Group Group=\"0\" MaximumProcessors=\"{cpus}\" ActiveProcessors=\"{cpus}\"/>\n    </ProcessorTopology>\n  </System>\n"
    );
    profile(&mut s, p);
    s.push_str("  <TimeSpan>\n");
    let t = r.runtime_s;
    if t < 1e-7 {
        s.push_str("    <Error>The test was interrupted before the measurements began. No results are displayed.</Error>\n  </TimeSpan>\n</Results>");
        return s;
    }
    let _ = write!(
        s,
        "    <TestTimeSeconds>{t:.2}</TestTimeSeconds>\n    <ThreadCount>{}</ThreadCount>\n    <RequestCount>{}</RequestCount>\n    <ProcCount>{cpus}</ProcCount>\n",
        p.threads,
        if p.pool { p.outstanding } else { 0 }
    );
    let (busy, user, kernel) = cpu_percent(r, cpus);
    let _ = write!(
        s,
        "    <CpuUtilization>\n      <Average>\n        <UsagePercent>{busy:.2}</UsagePercent>\n        <UserPercent>{user:.2}</UserPercent>\n        <KernelPercent>{kernel:.2}</KernelPercent>\n        <IdlePercent>{:.2}</IdlePercent>\n      </Average>\n    </CpuUtilization>\n",
        (100.0 - busy).max(0.0)
    );
    let (rh, wh, th) = histograms(r);
    if p.latency {
        latency(&mut s, rh.as_ref(), wh.as_ref(), th.as_ref());
    }
    let (read, write) = (op(r, IoOp::Read), op(r, IoOp::Write));
    let (rc, rb) = read.map_or((0, 0), |o| (o.ios, o.bytes));
    let (wc, wb) = write.map_or((0, 0), |o| (o.ios, o.bytes));
    let _ = write!(
        s,
        "    <Thread>\n      <Id>0</Id>\n      <Target>\n        <Path>{}</Path>\n        <BytesCount>{}</BytesCount>\n        <FileSize>{}</FileSize>\n        <IOCount>{}</IOCount>\n        <ReadBytes>{rb}</ReadBytes>\n        <ReadCount>{rc}</ReadCount>\n        <WriteBytes>{wb}</WriteBytes>\n        <WriteCount>{wc}</WriteCount>\n      </Target>\n    </Thread>\n",
        esc(&p.path),
        rb + wb,
        r.target.size_bytes,
        rc + wc
    );
    s.push_str("  </TimeSpan>\n</Results>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_written_as_diskspd_writes_them() {
        let p = percentiles();
        assert_eq!(p.len(), 106);
        assert_eq!(p[0].0, "1");
        assert_eq!(p[99].0, "99.9");
        assert_eq!(p[105].0, "99.9999999");
    }

    #[test]
    fn paths_are_escaped() {
        assert_eq!(esc("a<&>\"b"), "a&lt;&amp;&gt;&quot;b");
    }
}
