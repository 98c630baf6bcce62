//! `-X<profile.xml>`: a DiskSpd XML profile (XmlProfileParser/diskspd.xsd; the
//! `<Profile>` DiskSpd writes back with `-Rpxml` and inside its `-Rxml` results), read
//! into the same `Profile` a command line gives. One timespan with one target: the
//! engine runs one job. Elements with no Linux meaning are refused as their switches are.

use std::path::Path;

use roxmltree::{Document, Node};

use super::{Cache, Problem, Profile, Throughput};

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children().find(|c| c.has_tag_name(name))
}

fn text<'a>(n: Node<'a, '_>, name: &str) -> Option<&'a str> {
    child(n, name).and_then(|c| c.text()).map(str::trim)
}

fn flag(n: Node, name: &str) -> bool {
    text(n, name) == Some("true")
}

fn bad(element: &str, what: impl Into<String>, hint: &str) -> Problem {
    Problem::new(&format!("-X <{element}>"), what, hint)
}

fn num<T: std::str::FromStr>(n: Node, name: &str) -> Result<Option<T>, Problem> {
    match text(n, name) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            bad(
                name,
                format!("`{v}` is not a number"),
                "give a whole number, as DiskSpd writes it",
            )
        }),
    }
}

/// The profile in `path` (its `<Profile>`, alone or inside DiskSpd's `<Results>`), the
/// target given on the command line (`targets`, at most one) filling a template
/// target (`*1`) or replacing the profile's path.
pub fn read(path: &Path, targets: &[String]) -> Result<Profile, Vec<Problem>> {
    let one = |p: Problem| vec![p];
    let text = crate::input::read_file(path, crate::input::MAX_JOB_BYTES).map_err(|e| {
        one(Problem::new(
            "-X",
            format!("cannot read `{}`: {e}", path.display()),
            "give the path of a DiskSpd XML profile",
        ))
    })?;
    let doc = Document::parse(&text).map_err(|e| {
        one(Problem::new(
            "-X",
            format!("`{}` is not XML: {e}", path.display()),
            "give a profile DiskSpd wrote (`diskspd -Rpxml ...`) or one following diskspd.xsd",
        ))
    })?;
    let root = doc.root_element();
    let profile = if root.has_tag_name("Profile") {
        Some(root)
    } else {
        child(root, "Profile")
    }
    .ok_or_else(|| {
        one(Problem::new(
            "-X",
            format!("`{}` holds no <Profile>", path.display()),
            "give a DiskSpd XML profile",
        ))
    })?;
    let spans: Vec<Node> = child(profile, "TimeSpans")
        .map(|t| {
            t.children()
                .filter(|c| c.has_tag_name("TimeSpan"))
                .collect()
        })
        .unwrap_or_default();
    let [ts] = spans.as_slice() else {
        return Err(one(bad(
            "TimeSpans",
            format!("{} timespans: the engine runs one job", spans.len()),
            "give a profile of one timespan (or run each as its own profile)",
        )));
    };
    let ts = *ts;
    let found: Vec<Node> = child(ts, "Targets")
        .map(|t| t.children().filter(|c| c.has_tag_name("Target")).collect())
        .unwrap_or_default();
    let [target] = found.as_slice() else {
        return Err(one(bad(
            "Targets",
            format!("{} targets: the engine runs one file per job", found.len()),
            "give a profile of one target",
        )));
    };
    let mut problems = Vec::new();
    let mut p = Profile {
        cmdline: format!("-X{}", path.display()),
        ..Profile::default()
    };
    if let Err(e) = fill(&mut p, ts, *target, targets) {
        problems.push(e);
    }
    for (element, what, hint) in refused(ts, *target) {
        problems.push(bad(element, what, hint));
    }
    if problems.is_empty() {
        Ok(p)
    } else {
        Err(problems)
    }
}

/// The elements set to something with no Linux meaning (or no engine equivalent).
fn refused(ts: Node, t: Node) -> Vec<(&'static str, &'static str, &'static str)> {
    let mut out = Vec::new();
    let checks: [(Node, &str, &str, &str); 7] = [
        (
            ts,
            "CompletionRoutines",
            "completion routines are Windows's",
            "set it false",
        ),
        (
            t,
            "UseLargePages",
            "large pages are not supported",
            "set it false",
        ),
        (
            t,
            "TemporaryFile",
            "FILE_ATTRIBUTE_TEMPORARY is Windows's",
            "set it false",
        ),
        (
            t,
            "MemoryMappedIo",
            "memory-mapped I/O is not supported",
            "leave it out",
        ),
        (
            t,
            "DisableLocalCache",
            "SMB remote caching is Windows's",
            "leave it out",
        ),
        (
            t,
            "ParallelAsyncIO",
            "parallel async I/O has no engine equivalent",
            "set it false",
        ),
        (
            t,
            "InterlockedSequential",
            "interlocked sequential I/O has no engine equivalent",
            "set it false",
        ),
    ];
    for (n, name, what, hint) in checks {
        if flag(n, name) {
            out.push((name, what, hint));
        }
    }
    if child(t, "Distribution").is_some() {
        out.push((
            "Distribution",
            "an XML distribution is not read yet",
            "use -rdpct on a command line",
        ));
    }
    if num::<u32>(t, "RandomRatio")
        .ok()
        .flatten()
        .is_some_and(|r| r != 100)
    {
        out.push((
            "RandomRatio",
            "mixed random and sequential I/O has no engine equivalent yet",
            "leave it out (all random) or give <StrideSize> (all sequential)",
        ));
    }
    out
}

fn fill(p: &mut Profile, ts: Node, t: Node, targets: &[String]) -> Result<(), Problem> {
    if let Some(v) = num(ts, "Duration")? {
        p.duration_s = v;
    }
    if let Some(v) = num(ts, "Warmup")? {
        p.warmup_s = v;
    }
    if let Some(v) = num(ts, "Cooldown")? {
        p.cooldown_s = v;
    }
    p.latency = flag(ts, "MeasureLatency");
    if flag(ts, "CalculateIopsStdDev") {
        p.iops_bucket_ms = Some(num(ts, "IoBucketDuration")?.unwrap_or(1000));
    }
    p.no_affinity = flag(ts, "DisableAffinity");
    p.seed = num(ts, "RandSeed")?.unwrap_or(0);
    let pool: u32 = num(ts, "ThreadCount")?.unwrap_or(0);
    let path = text(t, "Path").unwrap_or_default();
    p.path = match targets {
        [] if path.starts_with('*') => {
            return Err(bad(
                "Path",
                format!("`{path}` is a template target"),
                "give the target's path after -X",
            ));
        }
        [] => path.to_string(),
        [given] => given.clone(),
        _ => return Err(bad("Path", "several targets after -X", "give one")),
    };
    if let Some(v) = num(t, "BlockSize")? {
        p.block = v;
    }
    p.base = num(t, "BaseFileOffset")?.unwrap_or(0);
    p.sequential_hint = flag(t, "SequentialScan");
    p.random_hint = flag(t, "RandomAccess");
    p.cache = if flag(t, "DisableOSCache") {
        Cache::Disabled
    } else {
        Cache::Cached
    };
    p.write_through = flag(t, "WriteThrough");
    match child(t, "WriteBufferContent").and_then(|w| text(w, "Pattern")) {
        Some("zero") => p.zeros = true,
        Some("random") => p.random_each_write = true,
        _ => {}
    }
    p.burst = num(t, "BurstSize")?.unwrap_or(0);
    p.think_ms = num(t, "ThinkTime")?.unwrap_or(0);
    p.create = num(t, "FileSize")?;
    if let Some(align) = num::<u64>(t, "Random")? {
        p.random_align = Some(align);
    } else if let Some(stride) = num::<u64>(t, "StrideSize")? {
        p.stride = Some(stride);
    }
    p.thread_stride = num(t, "ThreadStride")?.unwrap_or(0);
    p.max_size = num::<u64>(t, "MaxFileSize")?.filter(|&v| v > 0);
    if pool > 0 {
        p.pool = true;
        p.threads = pool;
        p.outstanding = num(ts, "RequestCount")?.unwrap_or(2);
    } else {
        p.threads = num(t, "ThreadsPerFile")?.unwrap_or(1);
        p.outstanding = num(t, "RequestCount")?.unwrap_or(2);
    }
    p.write_pct = num(t, "WriteRatio")?.unwrap_or(0);
    if let Some(node) = child(t, "Throughput") {
        let n: u64 = num(t, "Throughput")?.unwrap_or(0);
        if n > 0 {
            p.throughput = Some(if node.attribute("unit") == Some("IOPS") {
                Throughput::Iops(n)
            } else {
                Throughput::BytesPerMs(n)
            });
        }
    }
    p.priority = num(t, "IOPriority")?.unwrap_or(3);
    Ok(())
}
