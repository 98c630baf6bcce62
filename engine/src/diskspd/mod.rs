//! DiskSpd's command line (`fslab-engine diskspd -b8K -d30 -o8 -t8 -r -w0 -Sh -L FILE`),
//! read as DiskSpd 2.2 reads it (microsoft/diskspd, CmdLineParser.cpp) and turned into
//! one engine job, as fio's job files are (`crate::fio`).
//!
//! Every switch is mapped onto the engine's keys or refused at the switch, with the
//! reason: Windows's own mechanisms (completion routines, large pages, named events,
//! ETW, processor groups, drive letters and disk numbers) have no Linux meaning, and a
//! few of DiskSpd's patterns have no engine equivalent yet. All problems are found
//! before any I/O: one exit 2.
//!
//! DiskSpd's defaults are kept where they differ from the engine's: 64 KiB blocks, 10 s
//! measured after a 5 s warm-up, 2 requests in flight per thread, sequential reads,
//! and the OS cache *on* (`-S`/`-Su`/`-Sh` turn it off, as O_DIRECT).

pub mod profile_xml;
pub mod text;
pub mod xml;

use serde_json::{json, Map, Value};

/// DiskSpd's defaults (its `Target` and `TimeSpan` constructors).
const DEFAULT_BLOCK: u64 = 64 << 10;
const DEFAULT_DURATION_S: u64 = 10;
const DEFAULT_WARMUP_S: u64 = 5;
const DEFAULT_OUTSTANDING: u32 = 2;
const DEFAULT_IOPS_BUCKET_MS: u64 = 1000;
/// The engine's shortest series interval.
const MIN_INTERVAL_MS: u64 = 100;

/// One thing wrong with a command line: the switch it is about, what, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub switch: String,
    pub what: String,
    pub hint: String,
}

impl Problem {
    fn new(switch: &str, what: impl Into<String>, hint: impl Into<String>) -> Self {
        Problem {
            switch: switch.to_string(),
            what: what.into(),
            hint: hint.into(),
        }
    }
}

/// Whether the OS cache is used (DiskSpd's `TargetCacheMode`, the two Linux has).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cache {
    #[default]
    Cached,
    Disabled,
}

/// How the output is written (`-R`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// DiskSpd's text layout.
    #[default]
    Text,
    /// DiskSpd's XML results (what `fslab import` reads).
    Xml,
    /// The engine's report (fslab's own: what the lab reads).
    Json,
}

/// A `-g` limit: bytes per millisecond, or I/Os per second (`-g<n>i`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throughput {
    BytesPerMs(u64),
    Iops(u64),
}

/// A DiskSpd command line as read: what the text report's "Input parameters" show, and
/// what `job` maps onto the engine's keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The command line as given (after `diskspd`), for the report.
    pub cmdline: String,
    pub block: u64,
    pub duration_s: u64,
    pub warmup_s: u64,
    pub cooldown_s: u64,
    pub outstanding: u32,
    pub threads: u32,
    /// `-F`: a thread pool of this many threads (its `-O` the requests per thread).
    pub pool: bool,
    /// `-r[align]`: random, at this alignment (the block size when not given).
    pub random_align: Option<u64>,
    /// `-s[size]`: sequential at this stride (the block size when not given).
    pub stride: Option<u64>,
    pub thread_stride: u64,
    pub write_pct: u32,
    pub cache: Cache,
    pub write_through: bool,
    pub latency: bool,
    /// `-D[ms]`: IOPS gathered per bucket of this many ms.
    pub iops_bucket_ms: Option<u64>,
    pub create: Option<u64>,
    pub base: u64,
    pub length: Option<u64>,
    pub max_size: Option<u64>,
    pub random_hint: bool,
    pub sequential_hint: bool,
    pub throughput: Option<Throughput>,
    pub burst: u32,
    pub think_ms: u32,
    pub seed: u64,
    pub zeros: bool,
    pub random_each_write: bool,
    pub priority: u32,
    pub cpus: Option<Vec<u32>>,
    pub no_affinity: bool,
    pub output: Output,
    /// `-Rp`: print the profile, run nothing.
    pub profile_only: bool,
    pub path: String,
    /// `-rd` as the engine's `random_distribution` (fio's `zoned` syntax).
    pub distribution: Option<String>,
    /// DiskSpd's text of `-rd`, for the report.
    pub distribution_text: Option<String>,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            cmdline: String::new(),
            block: DEFAULT_BLOCK,
            duration_s: DEFAULT_DURATION_S,
            warmup_s: DEFAULT_WARMUP_S,
            cooldown_s: 0,
            outstanding: DEFAULT_OUTSTANDING,
            threads: 1,
            pool: false,
            random_align: None,
            stride: None,
            thread_stride: 0,
            write_pct: 0,
            cache: Cache::Cached,
            write_through: false,
            latency: false,
            iops_bucket_ms: None,
            create: None,
            base: 0,
            length: None,
            max_size: None,
            random_hint: false,
            sequential_hint: false,
            throughput: None,
            burst: 0,
            think_ms: 0,
            seed: 0,
            zeros: false,
            random_each_write: false,
            priority: 3,
            cpus: None,
            no_affinity: false,
            output: Output::Text,
            profile_only: false,
            path: String::new(),
            distribution: None,
            distribution_text: None,
        }
    }
}

/// Why a switch is refused: it has no meaning on Linux, or no engine equivalent yet.
fn refused(switch: &str) -> Option<(&'static str, &'static str)> {
    let first = switch.chars().next()?;
    Some(match first {
        'x' => (
            "completion routines (ReadFileEx/WriteFileEx) are Windows's",
            "leave -x out: the engine completes requests through io_uring, as DiskSpd's \
             default I/O completion ports do",
        ),
        'l' => (
            "large pages (VirtualAlloc MEM_LARGE_PAGES) are not supported",
            "leave -l out",
        ),
        'y' => (
            "named events are Windows synchronization objects",
            "leave -y out: start the runs one after another instead",
        ),
        'e' => (
            "ETW tracing is Windows's",
            "leave -e out: fslab's lab samples /proc counters beside every run",
        ),
        'N' => (
            "flush modes belong to memory-mapped I/O (-Sm), which is not supported",
            "leave -N out",
        ),
        'p' => (
            "parallel async I/O from one offset (-p) has no engine equivalent",
            "leave -p out",
        ),
        'u' => (
            "IoRing (-u) is Windows's",
            "leave -u out: the engine uses Linux's io_uring, which IoRing copies",
        ),
        _ => return None,
    })
}

/// Reads a DiskSpd command line (the arguments after `diskspd`).
pub fn parse(args: &[String]) -> Result<Profile, Vec<Problem>> {
    if let Some(path) = args.iter().find_map(|a| a.strip_prefix("-X")) {
        return with_profile(path, args);
    }
    let mut p = Profile {
        cmdline: args.join(" "),
        ..Profile::default()
    };
    let mut problems = Vec::new();
    let mut targets: Vec<String> = Vec::new();
    // DiskSpd reads -b first: a size in blocks (`8b`) counts in it wherever it is.
    for s in args.iter().filter_map(|a| switch_of(a)) {
        if let Some(rest) = s.strip_prefix('b') {
            match size(rest, DEFAULT_BLOCK) {
                Some(b) if b > 0 => p.block = b,
                _ => problems.push(Problem::new(
                    "-b",
                    format!("`{rest}` is not a block size"),
                    "give bytes, or K/M/G/T (binary): -b8K",
                )),
            }
        }
    }
    for a in args {
        match switch_of(a) {
            None => targets.push(a.clone()),
            Some(s) => {
                if let Err(e) = p.switch(s) {
                    problems.push(e);
                }
            }
        }
    }
    match targets.as_slice() {
        [] => problems.push(Problem::new(
            "target",
            "no target: DiskSpd's line ends with the file or device to test",
            "add a path: `... -c1G testfile.dat`",
        )),
        [one] => {
            if let Some(e) = target_problem(one) {
                problems.push(e);
            }
            p.path = one.clone();
        }
        more => problems.push(Problem::new(
            "target",
            format!("{} targets: the engine runs one file per job", more.len()),
            "run the line once per target",
        )),
    }
    if p.burst > 0 && p.think_ms == 0 || p.think_ms > 0 && p.burst == 0 {
        problems.push(Problem::new(
            if p.burst > 0 { "-i" } else { "-j" },
            "bursts need both -i (I/Os per burst) and -j (ms between bursts)",
            "give both, or neither",
        ));
    }
    if (p.base > 0 || p.length.is_some())
        && p.create.is_none()
        && p.length.is_none()
        && p.max_size.is_none()
    {
        problems.push(Problem::new(
            "-B",
            "a base offset without the region's end: the engine needs the region's size",
            "give -B<base>:<length>, or create the file with -c<size>",
        ));
    }
    if problems.is_empty() {
        Ok(p)
    } else {
        Err(problems)
    }
}

/// `-X<profile.xml>`: the profile gives the switches; beside it only an output switch
/// (`-R...`), `-v` and the target filling the profile's template target.
fn with_profile(path: &str, args: &[String]) -> Result<Profile, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut targets = Vec::new();
    let mut outputs = Vec::new();
    for a in args {
        match switch_of(a) {
            None => targets.push(a.clone()),
            Some(s) if s.starts_with('X') || s == "v" => {}
            Some(s) if s.starts_with('R') => outputs.push(s[1..].to_string()),
            Some(s) => problems.push(Problem::new(
                &format!("-{}", s.chars().next().unwrap_or('?')),
                "a switch beside -X: the profile gives the workload",
                "put it in the profile, or give the line without -X",
            )),
        }
    }
    if path.is_empty() {
        problems.push(Problem::new("-X", "no profile after -X", "-Xprofile.xml"));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut p = profile_xml::read(std::path::Path::new(path), &targets)?;
    p.cmdline = args.join(" ");
    for o in outputs {
        p.output(&o).map_err(|e| vec![e])?;
    }
    Ok(p)
}

/// `-b8K` -> `b8K`; None for a target. (DiskSpd on Windows also takes `/b8K`; here a
/// leading `/` is a path.)
fn switch_of(arg: &str) -> Option<&str> {
    arg.strip_prefix('-').filter(|s| !s.is_empty())
}

fn target_problem(path: &str) -> Option<Problem> {
    let b = path.as_bytes();
    if b.first() == Some(&b'#') {
        return Some(Problem::new(
            "target",
            format!("`{path}` is a Windows physical disk number"),
            "name the block device instead (/dev/sdb); fslab's lab checks it is safe to write",
        ));
    }
    if b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return Some(Problem::new(
            "target",
            format!("`{path}` is a Windows drive letter"),
            "name a file on the file system to test (/mnt/test/testfile.dat)",
        ));
    }
    None
}

/// A DiskSpd size: bytes, or K/M/G/T (binary), or `b` blocks of `block`.
pub fn size(text: &str, block: u64) -> Option<u64> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = text[..digits].parse().ok()?;
    let mult: u64 = match text[digits..].to_ascii_uppercase().as_str() {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        "B" => block,
        _ => return None,
    };
    n.checked_mul(mult)
}

fn number<T: std::str::FromStr>(switch: &str, text: &str, what: &str) -> Result<T, Problem> {
    text.parse().map_err(|_| {
        Problem::new(
            switch,
            format!("`{text}` is not {what}"),
            format!("give a whole number: {switch}{}", example(switch)),
        )
    })
}

fn example(switch: &str) -> &'static str {
    match switch {
        "-d" | "-W" | "-C" => "30",
        "-o" | "-O" => "8",
        "-t" | "-F" => "4",
        "-w" => "30",
        "-D" => "500",
        _ => "1",
    }
}

impl Profile {
    fn switch(&mut self, s: &str) -> Result<(), Problem> {
        let name = format!("-{}", s.chars().next().unwrap_or('?'));
        if let Some((what, hint)) = refused(s) {
            return Err(Problem::new(&name, what, hint));
        }
        let rest = &s[1..];
        match s.as_bytes()[0] {
            b'b' => {} // read first, above
            b'd' => self.duration_s = number(&name, rest, "a duration in seconds")?,
            b'W' => self.warmup_s = number(&name, rest, "a warm-up in seconds")?,
            b'C' => self.cooldown_s = number(&name, rest, "a cool-down in seconds")?,
            b'o' | b'O' => {
                let n: u32 = number(&name, rest, "a number of requests")?;
                if n == 0 || n > 32768 {
                    return Err(Problem::new(
                        &name,
                        format!("{n} requests in flight"),
                        "give 1 to 32768",
                    ));
                }
                self.outstanding = n;
            }
            b't' | b'F' => {
                let n: u32 = number(&name, rest, "a number of threads")?;
                if n == 0 || n > 1024 {
                    return Err(Problem::new(
                        &name,
                        format!("{n} threads"),
                        "give 1 to 1024",
                    ));
                }
                self.threads = n;
                self.pool = s.starts_with('F');
            }
            b'w' => {
                let n: u32 = if rest.is_empty() {
                    // DiskSpd 2.2 reads a bare -w as a write test.
                    100
                } else {
                    number(&name, rest, "a write percentage")?
                };
                if n > 100 {
                    return Err(Problem::new(&name, format!("{n}% writes"), "give 0 to 100"));
                }
                self.write_pct = n;
            }
            b'r' => self.random(rest)?,
            b's' => {
                if rest.starts_with('i') {
                    return Err(Problem::new(
                        "-si",
                        "interlocked sequential I/O (threads sharing one offset) has no \
                         engine equivalent",
                        "use -s with -T<offset> to give each thread its own stretch, or -t1",
                    ));
                }
                if self.random_align.is_some() {
                    return Err(Problem::new(
                        "-s",
                        "sequential I/O (-s) conflicts with random I/O (-r)",
                        "give one of them",
                    ));
                }
                self.stride = Some(if rest.is_empty() {
                    self.block
                } else {
                    size(rest, self.block).ok_or_else(|| {
                        Problem::new("-s", format!("`{rest}` is not a stride"), "-s64K")
                    })?
                });
            }
            b'T' => {
                self.thread_stride = size(rest, self.block)
                    .ok_or_else(|| Problem::new("-T", format!("`{rest}` is not a size"), "-T1G"))?
            }
            b'S' => self.cache_switch(rest)?,
            b'h' if rest.is_empty() => self.cache_switch("h")?,
            b'L' if rest.is_empty() => self.latency = true,
            b'D' => {
                let ms = if rest.is_empty() {
                    DEFAULT_IOPS_BUCKET_MS
                } else {
                    number(&name, rest, "milliseconds")?
                };
                if ms < MIN_INTERVAL_MS {
                    return Err(Problem::new(
                        "-D",
                        format!(
                            "buckets of {ms} ms: the engine's series is at least 100 ms a point"
                        ),
                        "give -D100 or more",
                    ));
                }
                self.iops_bucket_ms = Some(ms);
            }
            b'c' => {
                self.create = Some(size(rest, self.block).filter(|&n| n > 0).ok_or_else(|| {
                    Problem::new("-c", format!("`{rest}` is not a file size"), "-c1G")
                })?)
            }
            b'B' => {
                let (base, len) = rest.split_once(':').unwrap_or((rest, ""));
                self.base = size(base, self.block).ok_or_else(|| {
                    Problem::new("-B", format!("`{base}` is not an offset"), "-B1G")
                })?;
                if !len.is_empty() {
                    self.length = Some(size(len, self.block).ok_or_else(|| {
                        Problem::new("-B", format!("`{len}` is not a length"), "-B1G:4G")
                    })?);
                }
            }
            b'f' => match rest {
                "r" => self.random_hint = true,
                "s" => self.sequential_hint = true,
                "t" => {
                    return Err(Problem::new(
                        "-ft",
                        "FILE_ATTRIBUTE_TEMPORARY is Windows's",
                        "leave -ft out",
                    ))
                }
                _ => {
                    self.max_size = Some(size(rest, self.block).ok_or_else(|| {
                        Problem::new("-f", format!("`{rest}` is not a size"), "-f4G")
                    })?)
                }
            },
            b'g' => {
                let (n, iops) = match rest.strip_suffix('i') {
                    Some(n) => (n, true),
                    None => (rest, false),
                };
                let n: u64 = number(&name, n, "a throughput")?;
                self.throughput = (n > 0).then_some(if iops {
                    Throughput::Iops(n)
                } else {
                    Throughput::BytesPerMs(n)
                });
            }
            b'i' => self.burst = number(&name, rest, "a burst size")?,
            b'j' => self.think_ms = number(&name, rest, "milliseconds")?,
            b'z' => {
                self.seed = if rest.is_empty() {
                    // DiskSpd seeds from the tick count: a different run each time.
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(1, |d| d.as_nanos() as u64 & 0xffff_ffff)
                } else {
                    number(&name, rest, "a seed")?
                }
            }
            b'Z' => match rest {
                "" => self.zeros = true,
                "r" => self.random_each_write = true,
                _ => {
                    return Err(Problem::new(
                        "-Z",
                        format!(
                            "`-Z{rest}`: a write buffer of a given size or file is not supported"
                        ),
                        "use -Zr (fresh random data for every write) or -Z (zeros)",
                    ))
                }
            },
            b'I' => {
                let n: u32 = number(&name, rest, "a priority")?;
                if !(1..=3).contains(&n) {
                    return Err(Problem::new(
                        "-I",
                        format!("priority {n}"),
                        "give 1 (very low), 2 (low) or 3 (normal)",
                    ));
                }
                self.priority = n;
            }
            b'a' => {
                if rest.starts_with('g') {
                    return Err(Problem::new(
                        "-ag",
                        "processor groups are Windows's",
                        "give CPUs as -a0,1,2 (or leave -a out)",
                    ));
                }
                let cpus: Result<Vec<u32>, _> = rest.split(',').map(str::parse).collect();
                self.cpus = Some(cpus.ok().filter(|c| !c.is_empty()).ok_or_else(|| {
                    Problem::new("-a", format!("`{rest}` is not a list of CPUs"), "-a0,1,2,3")
                })?);
            }
            b'n' if rest.is_empty() => self.no_affinity = true,
            b'v' | b'P' => {} // verbose, progress dots: `--progress` shows the run live
            b'R' => self.output(rest)?,
            b'?' => {
                return Err(Problem::new(
                    "-?",
                    "DiskSpd's usage text is not printed here",
                    "see docs/diskspd.md for the switches the engine takes",
                ))
            }
            _ => {
                return Err(Problem::new(
                    &name,
                    format!("`-{s}` is not a DiskSpd switch"),
                    "see docs/diskspd.md for the switches the engine takes",
                ))
            }
        }
        Ok(())
    }

    fn random(&mut self, rest: &str) -> Result<(), Problem> {
        if let Some(pct) = rest.strip_prefix('s') {
            let n: u32 = number("-rs", pct, "a percentage")?;
            if n == 100 {
                self.random_align.get_or_insert(self.block);
                return Ok(());
            }
            return Err(Problem::new(
                "-rs",
                "mixed random and sequential I/O has no engine equivalent yet",
                "use -r (all random) or -s (all sequential)",
            ));
        }
        if let Some(spec) = rest.strip_prefix('d') {
            let (zoned, shown) = distribution(spec)?;
            self.distribution = Some(zoned);
            self.distribution_text = Some(shown);
            return Ok(());
        }
        if self.stride.is_some() {
            return Err(Problem::new(
                "-r",
                "random I/O (-r) conflicts with sequential I/O (-s)",
                "give one of them",
            ));
        }
        let align = if rest.is_empty() {
            self.block
        } else {
            size(rest, self.block).filter(|&n| n > 0).ok_or_else(|| {
                Problem::new("-r", format!("`{rest}` is not an alignment"), "-r4K")
            })?
        };
        self.random_align = Some(align);
        Ok(())
    }

    fn cache_switch(&mut self, flags: &str) -> Result<(), Problem> {
        let name = format!("-S{flags}");
        if flags.is_empty() {
            self.cache = Cache::Disabled;
            return Ok(());
        }
        for f in flags.chars() {
            match f {
                'b' => self.cache = Cache::Cached,
                'u' => self.cache = Cache::Disabled,
                'w' => self.write_through = true,
                'h' => {
                    self.cache = Cache::Disabled;
                    self.write_through = true;
                }
                'm' => {
                    return Err(Problem::new(
                        &name,
                        "memory-mapped I/O (-Sm) is not supported",
                        "leave m out: -Sh bypasses the cache, -Sb uses it",
                    ))
                }
                'r' => {
                    return Err(Problem::new(
                        &name,
                        "remote (SMB) caching (-Sr) is Windows's",
                        "leave r out: -Sb uses the page cache, -Su bypasses it",
                    ))
                }
                other => {
                    return Err(Problem::new(
                        &name,
                        format!("`{other}` is not a -S flag"),
                        "DiskSpd's -S flags: b (cached), u (unbuffered), w (write-through), \
                         h (both u and w)",
                    ))
                }
            }
        }
        Ok(())
    }

    fn output(&mut self, rest: &str) -> Result<(), Problem> {
        let (only, format) = match rest.strip_prefix('p') {
            Some(f) => (true, f),
            None => (false, rest),
        };
        self.profile_only = only;
        self.output = match format.to_ascii_lowercase().as_str() {
            "" | "text" => Output::Text,
            "json" => Output::Json,
            "xml" => Output::Xml,
            other => {
                return Err(Problem::new(
                    "-R",
                    format!("`{other}` is not an output format"),
                    "use -Rtext, -Rxml or -Rjson",
                ))
            }
        };
        Ok(())
    }

    /// The engine job the profile is, as JSON keys (`crate::spec::load` checks it).
    pub fn job(&self) -> Map<String, Value> {
        let mut j = Map::new();
        let random = self.random_align.is_some();
        let rw = match (random, self.write_pct) {
            (true, 0) => "randread",
            (true, 100) => "randwrite",
            (true, _) => "randrw",
            (false, 0) => "read",
            (false, 100) => "write",
            (false, _) => "readwrite",
        };
        j.insert("kind".into(), json!("block"));
        j.insert("filename".into(), json!(self.path));
        j.insert("rw".into(), json!(rw));
        if self.write_pct > 0 && self.write_pct < 100 {
            j.insert("rwmixread".into(), json!(100 - self.write_pct));
        }
        j.insert("bs".into(), json!(self.block));
        if random {
            // DiskSpd draws each random offset anew (no map of blocks done), as fio's
            // `norandommap`.
            j.insert("norandommap".into(), json!(true));
        }
        if let Some(a) = self.random_align.filter(|&a| a != self.block) {
            j.insert("blockalign".into(), json!(a));
        }
        if let Some(s) = self.stride.filter(|&s| s != self.block) {
            j.insert("seq_skip".into(), json!(s as i64 - self.block as i64));
        }
        if let Some(d) = &self.distribution {
            j.insert("random_distribution".into(), json!(d));
        }
        j.insert("numjobs".into(), json!(self.threads));
        j.insert("iodepth".into(), json!(self.outstanding));
        j.insert("ioengine".into(), json!("io_uring"));
        j.insert("direct".into(), json!(self.cache == Cache::Disabled));
        if self.write_through {
            j.insert("sync".into(), json!("dsync"));
        }
        j.insert("runtime".into(), json!(format!("{}s", self.duration_s)));
        j.insert("ramp_time".into(), json!(format!("{}s", self.warmup_s)));
        let end = self
            .length
            .map(|l| self.base + l)
            .or(self.max_size)
            .or(self.create);
        if let Some(create) = self.create {
            // The file is laid out at this size; the region is what -B/-f leave of it.
            j.insert("size".into(), json!(end.unwrap_or(create) - self.base));
        } else if let Some(end) = end {
            j.insert("size".into(), json!(end - self.base));
        }
        if self.base > 0 {
            j.insert("offset".into(), json!(self.base));
        }
        if self.thread_stride > 0 {
            j.insert("offset_increment".into(), json!(self.thread_stride));
        }
        if self.random_hint || self.sequential_hint {
            j.insert("fadvise_hint".into(), json!(true));
        }
        match self.throughput {
            Some(Throughput::BytesPerMs(n)) => {
                j.insert("rate".into(), json!(n * 1000));
            }
            Some(Throughput::Iops(n)) => {
                j.insert("rate_iops".into(), json!(n));
            }
            None => {}
        }
        if self.burst > 0 {
            j.insert("thinktime".into(), json!(format!("{}ms", self.think_ms)));
            j.insert("thinktime_blocks".into(), json!(self.burst));
        }
        j.insert("randseed".into(), json!(self.seed));
        if self.zeros {
            j.insert("buffer_content".into(), json!("zeros"));
        }
        if self.random_each_write {
            j.insert("refill_buffers".into(), json!(true));
        }
        match self.priority {
            1 => {
                j.insert("prioclass".into(), json!(3));
            }
            2 => {
                j.insert("prioclass".into(), json!(2));
                j.insert("prio".into(), json!(7));
            }
            _ => {}
        }
        if let Some(cpus) = &self.cpus {
            let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
            j.insert("cpus_allowed".into(), json!(list.join(",")));
        }
        if let Some(ms) = self.iops_bucket_ms {
            j.insert("interval".into(), json!(format!("{ms}ms")));
        }
        j
    }

    /// Notes for stderr: what runs otherwise than on Windows.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.cooldown_s > 0 {
            out.push(format!(
                "-C{}: no cool-down is run (the engine stops its I/O when the measured time ends)",
                self.cooldown_s
            ));
        }
        if self.random_hint || self.sequential_hint {
            out.push(
                "-fr/-fs: posix_fadvise RANDOM for random I/O, SEQUENTIAL otherwise (fadvise_hint)"
                    .into(),
            );
        }
        if self.write_through && self.cache == Cache::Cached {
            out.push("-Sw: write-through is O_DSYNC, through the page cache".into());
        }
        out
    }
}

/// `-rd`'s distribution as fio's `zoned` (DiskSpd: `pct<IO%>/<target%>:...`, the
/// target's rest taking what is left; `abs<IO%>/<size>:...` as `zoned_abs`), and
/// DiskSpd's own text of it.
fn distribution(spec: &str) -> Result<(String, String), Problem> {
    let bad = |what: String| {
        Problem::new(
            "-rd",
            what,
            "give -rdpct<IO%>/<target%>:... (-rdpct90/10:10/90) or -rdabs<IO%>/<size>:...",
        )
    };
    let (kind, body) = if let Some(b) = spec.strip_prefix("pct") {
        ("zoned", b)
    } else if let Some(b) = spec.strip_prefix("abs") {
        ("zoned_abs", b)
    } else {
        return Err(bad(format!("`{spec}` is not a distribution")));
    };
    let mut parts = Vec::new();
    let (mut io, mut span) = (0u32, 0u64);
    for range in body.split(':') {
        let (a, b) = range
            .split_once('/')
            .ok_or_else(|| bad(format!("`{range}` is not IO%/span")))?;
        let a: u32 = a
            .parse()
            .map_err(|_| bad(format!("`{a}` is not a percentage")))?;
        let b_val = if kind == "zoned" {
            b.parse::<u64>().ok()
        } else {
            size(b, DEFAULT_BLOCK)
        };
        let b_val = b_val.ok_or_else(|| bad(format!("`{b}` is not a span")))?;
        io += a;
        span += b_val;
        parts.push(format!("{a}/{b}"));
    }
    if io > 100 || (kind == "zoned" && span > 100) {
        return Err(bad(format!(
            "the ranges add up to more than 100% ({io}% of I/O)"
        )));
    }
    // DiskSpd gives what the ranges leave to the rest of the target; fio's zones must
    // cover all of it, so the rest is one more zone.
    if kind == "zoned" && (io < 100 || span < 100) {
        parts.push(format!("{}/{}", 100 - io, 100 - span));
    }
    Ok((format!("{kind}:{}", parts.join(":")), spec.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn job(line: &str) -> Map<String, Value> {
        parse(&args(line)).expect("parses").job()
    }

    #[test]
    fn seed_004_oltp_line_maps_onto_engine_keys() {
        let j = job("-b8K -d30 -o8 -t8 -r -w0 -Sh -L -c1G testfile.dat");
        assert_eq!(j["rw"], "randread");
        assert_eq!(j["bs"], 8192);
        assert_eq!(j["iodepth"], 8);
        assert_eq!(j["numjobs"], 8);
        assert_eq!(j["direct"], true);
        assert_eq!(j["sync"], "dsync");
        assert_eq!(j["runtime"], "30s");
        assert_eq!(j["ramp_time"], "5s");
        assert_eq!(j["size"], 1u64 << 30);
        assert_eq!(j["norandommap"], true, "DiskSpd keeps no random map");
        assert!(!j.contains_key("blockalign"));
    }

    #[test]
    fn defaults_are_diskspds() {
        let p = parse(&args("file.dat")).unwrap();
        let j = p.job();
        assert_eq!(j["bs"], 65536);
        assert_eq!(j["iodepth"], 2);
        assert_eq!(j["rw"], "read");
        assert_eq!(
            j["direct"], false,
            "DiskSpd uses the OS cache unless told not to"
        );
        assert_eq!(j["runtime"], "10s");
        assert_eq!(j["ramp_time"], "5s");
    }

    #[test]
    fn sizes_count_in_blocks_wherever_b_is() {
        assert_eq!(size("8K", 4096), Some(8192));
        assert_eq!(size("2b", 4096), Some(8192));
        assert_eq!(size("1t", 1), Some(1 << 40));
        assert_eq!(size("K", 1), None);
        assert_eq!(size("8Q", 1), None);
        // -c2b before -b8K still counts in 8K blocks
        assert_eq!(job("-c2b -b8K f")["size"], 16384);
    }

    #[test]
    fn mixes_strides_and_limits() {
        let j = job("-w30 -r4K -b8K -g100i -i4 -j10 -T1M -Zr -z7 f");
        assert_eq!(j["rw"], "randrw");
        assert_eq!(j["rwmixread"], 70);
        assert_eq!(j["blockalign"], 4096);
        assert_eq!(j["rate_iops"], 100);
        assert_eq!(j["thinktime"], "10ms");
        assert_eq!(j["thinktime_blocks"], 4);
        assert_eq!(j["offset_increment"], 1 << 20);
        assert_eq!(j["refill_buffers"], true);
        assert_eq!(j["randseed"], 7);
        let s = job("-s128K -b64K -g64 f");
        assert_eq!(s["seq_skip"], 65536);
        assert_eq!(s["rate"], 64_000);
        assert_eq!(job("-B1G:2G -c8G f")["offset"], 1u64 << 30);
        assert_eq!(job("-B1G:2G -c8G f")["size"], 2u64 << 30);
    }

    #[test]
    fn a_distribution_is_fios_zoned_with_the_rest_as_a_zone() {
        assert_eq!(
            job("-r -rdpct90/10 f")["random_distribution"],
            "zoned:90/10:10/90"
        );
        assert_eq!(
            job("-r -rdpct80/20:20/80 f")["random_distribution"],
            "zoned:80/20:20/80"
        );
        assert!(parse(&args("-r -rdpct90/10:20/10 f")).is_err());
    }

    #[test]
    fn windows_switches_are_refused_at_the_switch_with_the_reason() {
        let e = parse(&args("-x -l -Sm -ag -y -e -si -rs50 #1")).unwrap_err();
        let switches: Vec<&str> = e.iter().map(|p| p.switch.as_str()).collect();
        assert_eq!(
            switches,
            ["-x", "-l", "-Sm", "-ag", "-y", "-e", "-si", "-rs", "target"]
        );
        assert!(e[0].what.contains("Windows"));
        assert!(e.iter().all(|p| !p.hint.is_empty()));
        let e = parse(&args("-Q5 c:")).unwrap_err();
        assert_eq!(e[0].what, "`-Q5` is not a DiskSpd switch");
        assert!(e[1].what.contains("drive letter"));
    }

    #[test]
    fn a_line_without_a_target_or_with_two_is_refused() {
        assert_eq!(parse(&args("-b4K")).unwrap_err()[0].switch, "target");
        assert!(parse(&args("a b")).unwrap_err()[0]
            .what
            .contains("2 targets"));
    }

    #[test]
    fn bad_numbers_name_their_switch() {
        let e = parse(&args("-dX -o0 -w101 -t0 f")).unwrap_err();
        let switches: Vec<&str> = e.iter().map(|p| p.switch.as_str()).collect();
        assert_eq!(switches, ["-d", "-o", "-w", "-t"]);
    }
}
