//! `verify = true` with the real binary on real files: no false alarms, and every way a
//! block can come back wrong (damaged, zeroed, torn, written at the wrong place, or an
//! older version of itself) named as what it is. The bar is fio's t/verify.py, plus the
//! lost write fio's verify cannot see.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{engine_stdin, run_job};

use fslab_engine::block::verify::{classify, ReadBack, Verdict};

const MIB: u64 = 1 << 20;

/// A data file and its state file in a directory removed when the test ends.
struct Scratch {
    _dir: tempfile::TempDir,
    data: PathBuf,
    state: PathBuf,
}

fn scratch() -> Scratch {
    // target/ lives on the repository's disk, where io_uring is as it is in real use
    // (on tmpfs it is served by worker threads).
    let dir = tempfile::Builder::new()
        .prefix("fslab-verify-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    Scratch {
        data: dir.path().join("data"),
        state: dir.path().join("state"),
        _dir: dir,
    }
}

impl Scratch {
    /// A verify job on the data file (1 MiB unless `extra` gives `size`), keeping its
    /// state; `extra` adds keys.
    fn job(&self, extra: &str) -> String {
        let size = if extra.lines().any(|l| l.starts_with("size ")) {
            ""
        } else {
            "size = \"1m\"\n"
        };
        format!(
            "filename = {:?}\n{size}verify = true\nverify_state = {:?}\n{extra}",
            self.data.display().to_string(),
            self.state.display().to_string()
        )
    }

    fn run(&self, extra: &str) -> Value {
        run_job(&self.job(extra))
    }

    fn block(&self, bs: u64, n: u64) -> Vec<u8> {
        let all = std::fs::read(&self.data).unwrap();
        all[(n * bs) as usize..((n + 1) * bs) as usize].to_vec()
    }

    fn put(&self, offset: u64, bytes: &[u8]) {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.data)
            .unwrap();
        f.write_all_at(bytes, offset).unwrap();
        f.sync_all().unwrap();
    }
}

fn v(r: &Value) -> &Value {
    &r["verify"]
}

fn n(r: &Value, key: &str) -> u64 {
    v(r)[key]
        .as_u64()
        .unwrap_or_else(|| panic!("verify.{key} in {}", v(r)))
}

/// (offset, class) of each block in `verify.bad`.
fn bad(r: &Value) -> Vec<(u64, String)> {
    v(r)["bad"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["offset"].as_u64().unwrap(),
                b["class"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn verify_warnings(r: &Value) -> Vec<String> {
    r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "verify_failed")
        .map(|w| w["message"].as_str().unwrap().to_string())
        .collect()
}

/// Writes the whole file once with verify at `bs` (generation 1 everywhere).
fn write_all(s: &Scratch, bs: u64) -> Value {
    let r = s.run(&format!("rw = \"write\"\nbs = {bs}\nioengine = \"sync\""));
    assert_eq!(n(&r, "blocks_written"), MIB / bs);
    r
}

fn read_all(s: &Scratch, bs: u64) -> Value {
    let r = s.run(&format!("rw = \"read\"\nbs = {bs}\nioengine = \"sync\""));
    assert_eq!(r["status"], "ok", "bad blocks do not fail the job");
    assert_eq!(n(&r, "blocks_read"), MIB / bs);
    let classes: u64 = [
        "good",
        "corrupt",
        "misplaced",
        "stale",
        "unreadable",
        "unwritten",
    ]
    .iter()
    .map(|k| n(&r, k))
    .sum();
    assert_eq!(
        classes,
        n(&r, "blocks_read"),
        "every read is classified once"
    );
    r
}

#[test]
fn a_file_written_and_read_back_is_all_good_at_every_engine_and_block_size() {
    // Each request submitted alone (the default), in batches, all at once (0), and with a
    // spin before each wait: every way of refilling a slot must leave each block whole.
    for (engine, bs, depth, direct, batching) in [
        ("sync", 4096, 1, false, ""),
        ("io_uring", 4096, 1, false, ""),
        ("io_uring", 4096, 8, false, ""),
        ("io_uring", 4096, 8, true, ""),
        ("io_uring", 4096, 8, true, "iodepth_batch_submit = 3"),
        (
            "io_uring",
            4096,
            8,
            false,
            "iodepth_batch_submit = 0\ncompletion_spin = \"20us\"",
        ),
        ("io_uring", 4096, 1, true, "completion_spin = \"50us\""),
        ("sync", 1024, 1, false, ""),
        ("io_uring", 1024, 4, false, ""),
        ("sync", 65536, 1, false, ""),
        ("io_uring", 65536, 1, false, ""),
    ] {
        let s = scratch();
        let how = format!(
            "ioengine = \"{engine}\"\nbs = {bs}\niodepth = {depth}\ndirect = {direct}\n{batching}"
        );
        let w = s.run(&format!("rw = \"write\"\n{how}"));
        let blocks = MIB / bs;
        assert_eq!(n(&w, "blocks_written"), blocks, "{how}");
        assert_eq!(v(&w)["state_file"], s.state.display().to_string());
        let r = s.run(&format!("rw = \"read\"\n{how}"));
        assert_eq!(
            (n(&r, "blocks_read"), n(&r, "good")),
            (blocks, blocks),
            "{how}: {}",
            v(&r)
        );
        assert!(bad(&r).is_empty(), "{how}: no false alarm");
        assert!(verify_warnings(&r).is_empty(), "{how}");
        assert_eq!(n(&r, "blocks_written"), 0);
    }
}

#[test]
fn damaged_blocks_are_corrupt_and_only_they() {
    let s = scratch();
    write_all(&s, 4096);
    let b = |i: u64| i * 4096;
    // One bit flipped in the payload of block 3.
    let mut three = s.block(4096, 3);
    three[1234] ^= 0x04;
    s.put(b(3), &three);
    // Block 5 zeroed.
    s.put(b(5), &[0u8; 4096]);
    // Block 7 random bytes.
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    s.put(b(7), &noise);
    // Four bytes of 0xff in block 9.
    s.put(b(9) + 700, &[0xff; 4]);

    let r = read_all(&s, 4096);
    assert_eq!(n(&r, "corrupt"), 4, "{}", v(&r));
    assert_eq!(n(&r, "good"), 252);
    let corrupt = |i| (b(i), "corrupt".to_string());
    assert_eq!(
        bad(&r),
        [corrupt(3), corrupt(5), corrupt(7), corrupt(9)],
        "in the order met"
    );
    assert_eq!(v(&r)["bad"][1]["detail"], "bad magic 0000000000000000");
    assert!(v(&r)["bad"][0]["found_generation"].is_null());
    assert_eq!(v(&r)["bad"][0]["expected_generation"], 1);
    let warned = verify_warnings(&r);
    assert_eq!(warned.len(), 1);
    assert!(
        warned[0].starts_with("verify: 4 of 256 blocks bad (4 corrupt); first at offset 12288 (corrupt: crc32c mismatch"),
        "{}",
        warned[0]
    );
}

#[test]
fn a_block_written_at_the_wrong_place_is_misplaced() {
    let s = scratch();
    write_all(&s, 4096);
    s.put(10 * 4096, &s.block(4096, 2));
    let r = read_all(&s, 4096);
    assert_eq!((n(&r, "misplaced"), n(&r, "good")), (1, 255), "{}", v(&r));
    let b = &v(&r)["bad"][0];
    assert_eq!(b["offset"], 40960);
    assert_eq!(b["class"], "misplaced");
    assert_eq!(b["found_offset"], 8192);
    assert_eq!(b["found_generation"], 1);
}

#[test]
fn a_lost_write_is_stale() {
    let s = scratch();
    write_all(&s, 4096);
    let gen1 = s.block(4096, 4);
    write_all(&s, 4096); // every block is now at generation 2
    s.put(4 * 4096, &gen1); // as if the device had dropped block 4's second write

    // What a checksum alone sees: the block that came back is a complete, valid block
    // for offset 16384 (magic, offset and crc32c all hold). fio's verify, which knows
    // no generations, would pass it; only knowing that generation 2 was written since
    // tells it is a lost write.
    assert_eq!(classify(ReadBack::Data(&gen1), 4 * 4096, 1), Verdict::Good);

    let r = read_all(&s, 4096);
    assert_eq!((n(&r, "stale"), n(&r, "good")), (1, 255), "{}", v(&r));
    let b = &v(&r)["bad"][0];
    assert_eq!(b["offset"], 16384);
    assert_eq!(b["class"], "stale");
    assert_eq!(b["found_generation"], 1);
    assert_eq!(b["expected_generation"], 2);
    assert_eq!(bad(&r).len(), 1, "no other bad block");
    assert_eq!(
        verify_warnings(&r),
        ["verify: 1 of 256 blocks bad (1 stale); first at offset 16384 (stale: generation 1, expected 2)"]
    );
}

#[test]
fn a_torn_block_is_corrupt() {
    let s = scratch();
    write_all(&s, 4096);
    let gen1 = s.block(4096, 6);
    write_all(&s, 4096);
    // First half generation 2 (already there), second half generation 1.
    s.put(6 * 4096 + 2048, &gen1[2048..]);
    let r = read_all(&s, 4096);
    assert_eq!(bad(&r), [(6 * 4096, "corrupt".to_string())], "{}", v(&r));
    assert_eq!(n(&r, "good"), 255);
}

#[test]
fn random_reads_classify_each_read_and_list_each_bad_block_once() {
    let s = scratch();
    write_all(&s, 4096);
    s.put(3 * 4096, &[0u8; 4096]);
    s.put(9 * 4096 + 100, &[0xff; 4]);
    let r = s.run("rw = \"randread\"\nio_size = \"4m\"\niodepth = 8");
    assert_eq!(n(&r, "blocks_read"), 1024);
    assert_eq!(n(&r, "good") + n(&r, "corrupt"), 1024, "{}", v(&r));
    // Four reads per block on average: each bad block is met several times, yet listed once.
    assert!(n(&r, "corrupt") > 2, "{}", v(&r));
    let mut listed = bad(&r);
    listed.sort();
    assert_eq!(
        listed,
        [
            (3 * 4096, "corrupt".to_string()),
            (9 * 4096, "corrupt".to_string())
        ]
    );
}

#[test]
fn blocks_no_job_wrote_are_unwritten_not_bad() {
    let s = scratch();
    // The first half only.
    let w = s.run("rw = \"write\"\nio_size = \"512k\"");
    assert_eq!(n(&w, "blocks_written"), 128);
    let r = read_all(&s, 4096);
    assert_eq!((n(&r, "good"), n(&r, "unwritten")), (128, 128), "{}", v(&r));
    assert!(bad(&r).is_empty() && verify_warnings(&r).is_empty());
}

#[test]
fn random_writes_over_several_jobs_keep_every_generation() {
    let s = scratch();
    // Twice the file in random writes drawn with repeats, twice over: some blocks
    // reach generation 4 or more, some are never written.
    for seed in [1, 2] {
        s.run(&format!(
            "rw = \"randwrite\"\nio_size = \"2m\"\nrandseed = {seed}\nnorandommap = true"
        ));
    }
    let r = read_all(&s, 4096);
    assert!(n(&r, "unwritten") > 0 && n(&r, "good") > 200, "{}", v(&r));
    assert_eq!(n(&r, "good") + n(&r, "unwritten"), 256, "{}", v(&r));
    // Reads and writes mixed in one job check what that job wrote, too.
    let m = s.run("rw = \"randrw\"\nio_size = \"2m\"\nioengine = \"sync\"");
    assert!(n(&m, "blocks_written") > 0 && n(&m, "blocks_read") > 0);
    assert!(bad(&m).is_empty(), "{}", v(&m));
    let after = read_all(&s, 4096);
    assert_eq!(n(&after, "good") + n(&after, "unwritten"), 256);
    assert!(n(&after, "unwritten") <= n(&r, "unwritten"));
}

#[test]
fn without_a_state_file_blocks_start_unwritten_and_nothing_is_kept() {
    let s = scratch();
    let job = format!(
        "filename = {:?}\nsize = \"1m\"\nverify = true\nrw = \"readwrite\"\nio_size = \"4m\"",
        s.data.display().to_string()
    );
    let r = run_job(&job);
    assert!(v(&r)["state_file"].is_null());
    // The first pass reads what layout wrote (unwritten); later passes read this job's
    // own writes.
    assert!(n(&r, "unwritten") > 0 && n(&r, "good") > 0, "{}", v(&r));
    assert!(bad(&r).is_empty(), "{}", v(&r));
    assert!(!s.state.exists());
}

#[test]
fn the_state_file_is_replaced_whole() {
    let s = scratch();
    write_all(&s, 4096);
    write_all(&s, 4096);
    let names: Vec<String> = std::fs::read_dir(s.state.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(names, ["data", "state"], "no temporary file left behind");
    // 40-byte header, one u32 per block, a crc32c.
    assert_eq!(std::fs::metadata(&s.state).unwrap().len(), 40 + 4 * 256 + 4);
}

fn refused(job: &str) -> String {
    let (code, out, err) = engine_stdin("run", job);
    assert_eq!(code, 2, "exit code for {job:?}; stderr: {err}");
    assert!(out.is_empty(), "nothing on stdout for a refused job");
    err
}

#[test]
fn what_verify_cannot_check_is_refused_naming_the_key() {
    let s = scratch();
    let cases = [
        (
            "numjobs = 2",
            "`verify_state`: keeps the generations of one thread's blocks",
        ),
        ("bs = 1000", "`verify`: needs `bs` a multiple of 512"),
        ("bs = 256", "`verify`: needs `bs` a multiple of 512"),
        (
            "buffer_content = \"zeros\"",
            "`verify`: cannot be combined with `buffer_content = \"zeros\"`",
        ),
        ("ioengine = \"null\"", "`verify`: has nothing to check"),
    ];
    for (extra, said) in cases {
        let err = refused(&s.job(extra));
        assert!(err.contains(said), "{extra}: {err}");
        assert!(err.contains("hint: "), "{extra}: {err}");
    }
    assert!(!s.data.exists(), "a refused job touches nothing");
    let err = refused(&format!(
        "filename = {:?}\nsize = \"1m\"\nverify_state = \"/tmp/x\"",
        s.data.display().to_string()
    ));
    assert!(
        err.contains("`verify_state`: only applies with `verify = true`"),
        "{err}"
    );
    let err = refused(&format!(
        "kind = \"files\"\nop = \"scan\"\ndirectory = {:?}\nverify = true",
        s.state.parent().unwrap().display().to_string()
    ));
    assert!(
        err.contains("`verify`: only applies to `kind = \"block\"`"),
        "{err}"
    );
    // Random reads, sequential writes and random writes at depth are fine.
    for ok in [
        "rw = \"randread\"\niodepth = 16",
        "rw = \"write\"\niodepth = 16",
        "rw = \"randwrite\"\niodepth = 16",
    ] {
        let (code, _, err) = engine_stdin("check", &s.job(ok));
        assert_eq!(code, 0, "{ok}: {err}");
    }
}

/// Random writes at depth: two I/Os to one block never fly at once (the second waits),
/// so a file written and read back at depth 32 (with fio's random map and without it,
/// where a block is drawn again while in flight) has no false alarm.
#[test]
fn random_writes_at_depth_verify_clean() {
    for map in ["", "norandommap = true\n"] {
        let s = scratch();
        let w = s.run(&format!(
            "size = \"256k\"\nrw = \"randrw\"\niodepth = 32\nio_size = \"8m\"\n{map}"
        ));
        assert_eq!(w["status"], "ok", "{w}");
        let bad = n(&w, "corrupt") + n(&w, "misplaced") + n(&w, "stale");
        assert_eq!(bad, 0, "{map}: {}", v(&w));
        let r = s.run("rw = \"read\"\nsize = \"256k\"\niodepth = 8");
        assert_eq!(n(&r, "good"), 64, "{map}: {}", v(&r));
    }
}

#[test]
fn a_queue_deeper_than_the_file_is_refused_before_any_write() {
    let s = scratch();
    let err = refused(&s.job("size = \"16k\"\nrw = \"write\"\niodepth = 8"));
    assert!(
        err.contains("`verify`: `iodepth` = 8 is more than the 4 blocks of the file"),
        "{err}"
    );
    // Refused before the file is laid out, however large.
    let err = refused(&s.job("size = \"8t\"\nrw = \"read\""));
    assert!(err.contains("at most 1073741824 blocks"), "{err}");
    assert!(!s.data.exists(), "no file laid out");
}

#[test]
fn a_state_for_other_blocks_is_refused_before_any_io() {
    let s = scratch();
    write_all(&s, 4096);
    let before = std::fs::read(&s.data).unwrap();
    let state_before = std::fs::read(&s.state).unwrap();
    let err = refused(&s.job("rw = \"write\"\nbs = \"8k\""));
    assert!(
        err.contains(&format!(
            "`verify_state`: `{}` was written for other blocks: bs 4096 (the job's is 8192)",
            s.state.display()
        )),
        "{err}"
    );
    let err = refused(&s.job("rw = \"write\"\nsize = \"2m\""));
    assert!(err.contains("size 1048576 (the job's is 2097152)"), "{err}");
    assert_eq!(std::fs::read(&s.data).unwrap(), before, "no block written");
    assert_eq!(std::fs::read(&s.state).unwrap(), state_before);
    // A damaged state file is refused too, naming it.
    std::fs::write(&s.state, b"not a state").unwrap();
    let err = refused(&s.job("rw = \"read\""));
    assert!(
        err.contains("is not a verify state file") && err.contains(&*s.state.to_string_lossy()),
        "{err}"
    );
}

#[test]
fn a_missing_state_directory_is_refused_before_the_job_runs() {
    let s = scratch();
    let job = format!(
        "filename = {:?}\nsize = \"1m\"\nverify = true\nrw = \"write\"\nverify_state = {:?}",
        s.data.display().to_string(),
        Path::new(&s.state).join("nope/state").display().to_string()
    );
    let err = refused(&job);
    assert!(
        err.contains("`verify_state`: the directory") && err.contains("does not exist"),
        "{err}"
    );
    assert!(!s.data.exists());
}

fn ios(r: &Value, op: &str) -> u64 {
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["op"] == op)
        .map_or(0, |x| x["ios"].as_u64().unwrap())
}

/// fio's verify phase: once the writes end, every block written is read back (from a
/// cold cache) and checked, once each, and none of it counts as the job's reads.
#[test]
fn a_read_back_checks_every_block_written_exactly_once() {
    for (engine, depth) in [("sync", 1), ("io_uring", 8)] {
        let s = scratch();
        let r = run_job(&format!(
            "filename = {:?}\nsize = \"1m\"\nrw = \"randwrite\"\niodepth = {depth}\nioengine = \"{engine}\"\nverify = true\nverify_read_back = true",
            s.data.display().to_string()
        ));
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(
            n(&r, "blocks_written"),
            256,
            "{engine}: the random map writes each block once"
        );
        assert_eq!(n(&r, "read_back_blocks"), 256, "{engine}: {}", v(&r));
        assert_eq!(n(&r, "good"), 256, "{engine}: {}", v(&r));
        assert_eq!(n(&r, "blocks_read"), 256, "{engine}");
        assert_eq!(
            ios(&r, "read"),
            0,
            "{engine}: the read-back is not the job's reads"
        );
        assert!(v(&r)["read_back_s"].as_f64().unwrap() > 0.0);
    }
}

/// Writes spaced by a skip that is not a multiple of `bs` fall at another place in each
/// block: the read-back must read each where it was written (a wrong offset reads back
/// misplaced or corrupt).
#[test]
fn a_read_back_reads_each_block_where_it_was_written() {
    let s = scratch();
    let r = run_job(&format!(
        "filename = {:?}\nsize = \"1m\"\nbs = \"16k\"\nblockalign = \"4k\"\nrw = \"write\"\nseq_skip = \"4k\"\nioengine = \"sync\"\nverify = true\nverify_read_back = true",
        s.data.display().to_string()
    ));
    // 16k written every 20k: 51 places fit in 1 MiB, each at its own place in its
    // block; 64 writes (1 MiB) come back round to the first 13 (a second generation).
    assert_eq!(n(&r, "blocks_written"), 64, "{}", v(&r));
    assert_eq!(n(&r, "read_back_blocks"), 51, "{}", v(&r));
    assert_eq!(n(&r, "good"), 51, "{}", v(&r));
}

/// fio's `verify_backlog`: after every N writes, those N blocks are read back (oldest
/// first) and checked, measured as the job's reads; the writes still cover `size`.
#[test]
fn a_backlog_reads_back_each_batch_of_writes() {
    let s = scratch();
    let r = run_job(&format!(
        "filename = {:?}\nsize = \"1m\"\nrw = \"write\"\nioengine = \"sync\"\nverify = true\nverify_backlog = 16",
        s.data.display().to_string()
    ));
    assert_eq!(ios(&r, "write"), 256, "{r}");
    assert_eq!(ios(&r, "read"), 256, "16 batches of 16 read back: {r}");
    assert_eq!(n(&r, "good"), 256, "{}", v(&r));
    assert_eq!(n(&r, "read_back_blocks"), 0);
}

/// Threads with regions of their own (fio's cross-stripe-verify) each verify theirs:
/// the counts are the threads' summed; regions that overlap are verified as one.
#[test]
fn threads_verify_regions_of_their_own() {
    let s = scratch();
    let job = |inc: &str| {
        format!(
            "filename = {:?}\nsize = \"256k\"\noffset = \"8k\"\noffset_increment = \"{inc}\"\nnumjobs = 4\nrw = \"randwrite\"\niodepth = 4\nverify = true\nverify_read_back = true\nverify_backlog = 8",
            s.data.display().to_string()
        )
    };
    let r = run_job(&job("256k"));
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(n(&r, "blocks_written"), 4 * 64, "{}", v(&r));
    assert_eq!(n(&r, "read_back_blocks"), 4 * 64, "{}", v(&r));
    let bad = n(&r, "corrupt") + n(&r, "misplaced") + n(&r, "stale") + n(&r, "unwritten");
    assert_eq!(bad, 0, "{}", v(&r));
    assert_eq!(n(&r, "good"), n(&r, "blocks_read"));
    // Regions that overlap are one region shared: each block taken by one thread's I/O
    // at a time, its generation in one table, so every thread checks the others' writes.
    std::fs::remove_file(&s.data).unwrap();
    let r = run_job(&job("128k"));
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(n(&r, "blocks_written"), 4 * 64, "{}", v(&r));
    let bad = n(&r, "corrupt") + n(&r, "misplaced") + n(&r, "stale") + n(&r, "unwritten");
    assert_eq!(bad, 0, "{}", v(&r));
    assert!(n(&r, "good") >= 4 * 60, "{}", v(&r));
    let err = refused(&format!(
        "{}\nverify_state = {:?}",
        job("256k"),
        s.state.display().to_string()
    ));
    assert!(
        err.contains("`verify_state`: keeps the generations of one thread's blocks"),
        "{err}"
    );
    let err = refused(&format!(
        "filename = {:?}\nsize = \"1m\"\nrw = \"read\"\nverify = true\nverify_read_back = true",
        s.data.display().to_string()
    ));
    assert!(
        err.contains("`verify_read_back`: reads back what the job writes"),
        "{err}"
    );
}

/// `ioengine = "mmap"` moves real data: blocks written through a mapping read back good
/// through pread, and blocks written with pwrite read back good through a mapping.
#[test]
fn a_mapped_file_reads_and_writes_what_pread_and_pwrite_see() {
    for (writer, reader) in [("mmap", "sync"), ("sync", "mmap")] {
        let s = scratch();
        let w = s.run(&format!(
            "rw = \"randwrite\"\nioengine = \"{writer}\"\nend_fsync = true"
        ));
        assert_eq!(n(&w, "blocks_written"), 256, "{writer}: {}", v(&w));
        let r = s.run(&format!("rw = \"randread\"\nioengine = \"{reader}\""));
        assert_eq!(n(&r, "good"), 256, "{writer} then {reader}: {}", v(&r));
    }
    // fio's "direct" mmap: each range written back and dropped after its copy.
    let s = scratch();
    let w = s.run("rw = \"randwrite\"\nioengine = \"mmap\"\ndirect = true");
    assert_eq!(n(&w, "blocks_written"), 256, "{}", v(&w));
    let r = s.run("rw = \"randread\"\nioengine = \"sync\"\ndirect = true");
    assert_eq!(n(&r, "good"), 256, "{}", v(&r));
}
