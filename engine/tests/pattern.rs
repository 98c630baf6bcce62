//! What the engine writes and how fast it issues it, checked from outside on real files:
//! a compressible share compresses by the asked ratio (zstd of the file), a dedupe share
//! repeats blocks, a pattern is the file's content, and a rate is the rate achieved.

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::Value;

mod common;
use common::run_job;

struct Scratch {
    _dir: tempfile::TempDir,
    file: PathBuf,
}

fn scratch() -> Scratch {
    let dir = tempfile::Builder::new()
        .prefix("fslab-pattern-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    Scratch {
        file: dir.path().join("data"),
        _dir: dir,
    }
}

impl Scratch {
    /// Writes the whole file once, sequentially, with `extra` keys; the report.
    fn write(&self, size: &str, extra: &str) -> Value {
        let bs = if extra.contains("bs =") {
            ""
        } else {
            "bs = \"64k\"\n"
        };
        let r = run_job(&format!(
            "filename = {:?}\nsize = \"{size}\"\nrw = \"write\"\n{bs}{extra}",
            self.file.display().to_string()
        ));
        assert_eq!(r["status"], "ok", "{r}");
        r
    }

    fn zstd_ratio(&self) -> f64 {
        let data = std::fs::read(&self.file).unwrap();
        let packed = zstd::encode_all(&data[..], 3).unwrap();
        data.len() as f64 / packed.len() as f64
    }
}

#[test]
fn a_compressible_share_compresses_by_the_asked_ratio() {
    for (pct, want) in [(50u32, 2.0f64), (75, 4.0), (90, 10.0)] {
        let s = scratch();
        s.write("16m", &format!("buffer_compress_percentage = {pct}"));
        let got = s.zstd_ratio();
        // Each 512-byte chunk's random part stays whole, and zstd spends a few bytes on
        // the pattern part: a little under the ideal 100 / (100 - p).
        assert!(
            got > 0.85 * want && got < 1.05 * want,
            "{pct}%: zstd ratio {got:.2}, asked about {want}"
        );
    }
}

#[test]
fn refilled_random_writes_do_not_compress_and_reused_buffers_do() {
    let s = scratch();
    s.write("16m", "refill_buffers = true");
    let fresh = s.zstd_ratio();
    assert!(fresh < 1.01, "refilled: {fresh:.3}");
    // Without refill a thread cycles through `iodepth` buffers stamped per write: a
    // compressor with a window of a few buffers finds the repeats (fio's default too).
    let s = scratch();
    s.write("16m", "iodepth = 4");
    let reused = s.zstd_ratio();
    assert!(reused > 5.0, "reused buffers: {reused:.2}");
}

#[test]
fn a_dedupe_share_repeats_that_share_of_blocks() {
    let s = scratch();
    // 4096 writes of 4 KiB, half of them repeating an earlier write's content.
    s.write("16m", "bs = \"4k\"\ndedupe_percentage = 50");
    let data = std::fs::read(&s.file).unwrap();
    let distinct: HashSet<[u8; 32]> = data
        .chunks(4096)
        .map(|b| *blake3::hash(b).as_bytes())
        .collect();
    let unique = distinct.len() as f64 / 4096.0;
    // Binomial: sd 0.8 percentage points.
    assert!(
        (unique - 0.5).abs() < 0.04,
        "{unique:.3} of the blocks are unique"
    );
}

#[test]
fn a_working_set_bounds_the_contents_dedupe_writes_repeat() {
    let s = scratch();
    // 4096 blocks: half fresh, half from a working set of 5% of the blocks (204).
    s.write(
        "16m",
        "bs = \"4k\"\ndedupe_percentage = 50\ndedupe_working_set_percentage = 5",
    );
    let data = std::fs::read(&s.file).unwrap();
    let mut count: std::collections::HashMap<[u8; 32], u32> = Default::default();
    for b in data.chunks(4096) {
        *count.entry(*blake3::hash(b).as_bytes()).or_default() += 1;
    }
    let repeated = count.values().filter(|&&n| n > 1).count();
    // The set's 204 contents each come back ~10 times; fresh ones never.
    assert!(
        (150..=204).contains(&repeated),
        "{repeated} contents repeat"
    );
    let unique = count.len() as f64 / 4096.0;
    assert!((unique - 0.55).abs() < 0.05, "{unique:.3} distinct");
}

#[test]
fn a_pattern_is_what_the_file_holds() {
    let s = scratch();
    s.write("1m", "buffer_pattern = \"0xdeadbeef|'fslab'\"");
    let data = std::fs::read(&s.file).unwrap();
    let unit = b"\xde\xad\xbe\xeffslab";
    // Each 64k write starts the pattern afresh.
    for block in data.chunks(65536) {
        for (i, b) in block.iter().enumerate() {
            assert_eq!(*b, unit[i % unit.len()], "byte {i} of a block");
        }
    }
}

#[test]
fn a_rate_is_the_rate_achieved_and_one_the_target_cannot_carry_is_warned() {
    let s = scratch();
    let r = run_job(&format!(
        "filename = {:?}\nsize = \"8m\"\nrw = \"randread\"\nrate_iops = 400\nruntime = \"2s\"\nnumjobs = 2",
        s.file.display().to_string()
    ));
    let rate = &r["rate"];
    assert_eq!(rate["unit"], "iops");
    assert_eq!(rate["asked_per_s"], 800.0);
    let share = rate["share"].as_f64().unwrap();
    assert!((share - 1.0).abs() < 0.03, "{rate}");
    assert!(r["warnings"].as_array().unwrap().is_empty(), "{r}");
    // The null engine's own ceiling is far below 10^12 I/Os a second.
    let r = run_job("ioengine = \"null\"\nruntime = \"0.5s\"\nrate_iops = 1000000000000");
    let w = &r["warnings"][0];
    assert_eq!(w["kind"], "rate_short", "{r}");
    assert!(r["rate"]["share"].as_f64().unwrap() < 0.5);
}

#[test]
fn a_poisson_rate_keeps_its_mean() {
    let s = scratch();
    let r = run_job(&format!(
        "filename = {:?}\nsize = \"8m\"\nrw = \"randread\"\nrate_iops = 1000\nrate_process = \"poisson\"\nruntime = \"3s\"",
        s.file.display().to_string()
    ));
    // 3000 arrivals: the count's sd is 1.8%.
    let share = r["rate"]["share"].as_f64().unwrap();
    assert!((share - 1.0).abs() < 0.08, "{}", r["rate"]);
}

#[test]
fn think_time_spaces_the_ios() {
    let s = scratch();
    let r = run_job(&format!(
        "filename = {:?}\nsize = \"8m\"\nrw = \"read\"\nthinktime = \"10ms\"\nthinktime_blocks = 2\nruntime = \"1s\"",
        s.file.display().to_string()
    ));
    // Two reads per 10 ms: about 200 in the second.
    let ios = r["results"][0]["ios"].as_u64().unwrap();
    assert!((170..=202).contains(&ios), "{ios} reads");
}

#[test]
fn fill_device_writes_the_file_itself_up_to_its_size_or_the_space() {
    let s = scratch();
    // Capped by `size` here (the space free is larger): no layout first, one pass.
    let r = s.write("4m", "fill_device = true\nbs = \"64k\"");
    assert!(
        r.get("layout").is_none_or(Value::is_null),
        "not laid out: {r}"
    );
    assert_eq!(r["results"][0]["bytes"], 4 << 20);
    assert_eq!(std::fs::metadata(&s.file).unwrap().len(), 4 << 20);
    // Only a sequential write fills.
    let text = format!(
        "filename = {:?}\nrw = \"randwrite\"\nfill_device = true",
        s.file.display().to_string()
    );
    let (code, _, err) = common::engine_stdin("check", &text);
    assert_eq!(code, 2);
    assert!(err.contains("fill_device"), "{err}");
}

/// fio's `size=50%` and `offset=25%`: shares of an existing file (or device), made bytes
/// aligned to the block size once it is open; a file not there yet has no share.
#[test]
fn a_size_and_an_offset_in_percent_are_shares_of_the_target() {
    let s = scratch();
    std::fs::write(&s.file, vec![0u8; 1 << 20]).unwrap();
    let job = |size: &str, offset: &str| {
        format!(
            "filename = {:?}\nsize = \"{size}\"\noffset = \"{offset}\"\nrw = \"read\"\nioengine = \"sync\"",
            s.file.display().to_string()
        )
    };
    let r = run_job(&job("50%", "25%"));
    assert_eq!(r["job"]["size"], 512 << 10, "{}", r["job"]);
    assert_eq!(r["job"]["offset"], 256 << 10);
    assert_eq!(common::result(&r, "read")["ios"], 128);
    // 95% of 1 MiB, down to a whole 4k block: 243 blocks (fio reads the same).
    let r = run_job(&job("95%", "0"));
    assert_eq!(r["job"]["size"], 243 * 4096);
    // A share past the end keeps to the file.
    let r = run_job(&job("100%", "50%"));
    assert_eq!(r["job"]["size"], 512 << 10);
    let missing = job("50%", "0").replace("data", "not-there");
    let (code, _, err) = common::engine_stdin("run", &missing);
    assert_eq!(code, 2);
    assert!(
        err.contains("`size`: is in percent of the target, and"),
        "{err}"
    );
    let (code, _, err) = common::engine_stdin("check", &job("150%", "0"));
    assert_eq!(code, 2);
    assert!(
        err.contains("`size`: `150%` is not a percent of the target"),
        "{err}"
    );
}

/// `fdatasync` flushes after every N writes, counted with the report's flushes; it
/// cannot be combined with `fsync`.
#[test]
fn fdatasync_flushes_every_n_writes() {
    let s = scratch();
    let r = s.write("1m", "bs = \"4k\"\nioengine = \"sync\"\nfdatasync = 16");
    assert_eq!(r["fsync"]["count"], 256 / 16, "{}", r["fsync"]);
    let (code, _, err) = common::engine_stdin(
        "check",
        &format!(
            "filename = {:?}\nsize = \"1m\"\nrw = \"write\"\nfsync = 1\nfdatasync = 1",
            s.file.display().to_string()
        ),
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("`fdatasync`: cannot be combined with `fsync`"),
        "{err}"
    );
}
