//! Trims and the engines that move no data (`falloc`, `ftruncate`), checked on real
//! files by what they leave: the blocks a file holds and its length.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;
use common::{result, run_job};

fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("fslab-trim-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let file = dir.path().join("data");
    (dir, file)
}

/// Bytes the file's blocks hold on disk.
fn allocated(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().blocks() * 512
}

fn run(file: &Path, keys: &str) -> Value {
    let r = run_job(&format!(
        "filename = {:?}\n{keys}",
        file.display().to_string()
    ));
    assert_eq!(r["status"], "ok", "{r}");
    r
}

#[test]
fn a_pass_of_random_trims_frees_every_block_once() {
    for engine in ["io_uring", "sync"] {
        let (_dir, file) = scratch();
        run(&file, "size = \"8m\"\nrw = \"write\"\nbs = \"64k\"");
        assert!(allocated(&file) >= 8 << 20, "laid out whole");
        // One pass of the random map: each 64k block trimmed exactly once.
        let r = run(
            &file,
            &format!("size = \"8m\"\nrw = \"randtrim\"\nbs = \"64k\"\nioengine = \"{engine}\"\niodepth = 1"),
        );
        let t = result(&r, "trim");
        assert_eq!(t["ios"], 128, "{engine}: {r}");
        assert_eq!(t["bytes"], 8 << 20);
        assert!(
            r["results"].as_array().unwrap().len() == 1,
            "only trims: {r}"
        );
        assert_eq!(allocated(&file), 0, "{engine}: every block punched out");
        assert_eq!(
            std::fs::metadata(&file).unwrap().len(),
            8 << 20,
            "the length stays"
        );
    }
}

#[test]
fn falloc_allocates_writes_and_punches_trims() {
    let (_dir, file) = scratch();
    std::fs::File::create(&file)
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    assert_eq!(allocated(&file), 0, "sparse to begin with");
    let r = run(
        &file,
        "size = \"4m\"\nrw = \"randwrite\"\nbssplit = \"4k/10:64k/50:32k/40\"\nioengine = \"falloc\"\nio_size = \"4m\"",
    );
    assert!(result(&r, "write")["ios"].as_u64().unwrap() > 0);
    let after_writes = allocated(&file);
    assert!(
        after_writes >= 2 << 20,
        "fallocate allocated: {after_writes}"
    );
    run(
        &file,
        "size = \"4m\"\nrw = \"trim\"\nbs = \"64k\"\nioengine = \"falloc\"",
    );
    assert_eq!(allocated(&file), 0, "the holes punched");
}

#[test]
fn ftruncate_cuts_the_file_at_each_writes_offset() {
    let (_dir, file) = scratch();
    // 16 sequential writes of 4k: the last truncates the file to 15 x 4k.
    let r = run(
        &file,
        "size = \"64k\"\nrw = \"write\"\nbs = \"4k\"\nioengine = \"ftruncate\"",
    );
    assert_eq!(result(&r, "write")["ios"], 16, "{r}");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 15 * 4096);
}

#[test]
fn what_moves_no_data_is_not_verified_and_ftruncate_only_writes() {
    let (_dir, file) = scratch();
    for (keys, says) in [
        (
            "rw = \"randtrim\"\nverify = true",
            "trims, `falloc`, `ftruncate` and `e4defrag`",
        ),
        ("rw = \"read\"\nioengine = \"ftruncate\"", "only writes"),
    ] {
        let text = format!(
            "filename = {:?}\nsize = \"1m\"\n{keys}",
            file.display().to_string()
        );
        let (code, _, err) = common::engine_stdin("check", &text);
        assert_eq!(code, 2, "{keys}: {err}");
        assert!(err.contains(says), "{keys}: {err}");
    }
    assert!(!file.exists(), "a refused job touches nothing");
}

/// `nrfiles`: each thread's files get their own pass of the random map, so one pass of
/// trims over three files frees every block of each, once, with either engine.
#[test]
fn a_pass_over_several_files_frees_every_block_of_each() {
    for engine in ["io_uring", "sync"] {
        let (dir, _) = scratch();
        let depth = if engine == "io_uring" { 8 } else { 1 };
        let r = run_job(&format!(
            "directory = {:?}\nname = \"t\"\nnrfiles = 3\nsize = \"1m\"\nrw = \"randtrim\"\nbs = \"64k\"\nioengine = \"{engine}\"\niodepth = {depth}",
            dir.path().display().to_string()
        ));
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(
            result(&r, "trim")["ios"],
            3 * 16,
            "{engine}: every file once: {r}"
        );
        for f in 0..3 {
            let p = dir.path().join(format!("t.0.{f}"));
            assert_eq!(std::fs::metadata(&p).unwrap().len(), 1 << 20, "laid out");
            assert_eq!(
                allocated(&p),
                0,
                "{engine}: every block of file {f} punched out"
            );
        }
    }
}
