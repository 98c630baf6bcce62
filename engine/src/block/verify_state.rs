//! The `verify_state` file: the expected generation of every block, from one verify job
//! to the next. What lets a later job tell a lost write (an older valid block) from a
//! good one.
//!
//! Little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `FSLABVST` |
//! | 8..12 | format version, 1 |
//! | 12..16 | 0 (reserved) |
//! | 16..24 | `bs` |
//! | 24..32 | `size` |
//! | 32..40 | blocks, N = max(size / bs, 1) |
//! | 40..40+4N | one u32 generation per block, in block order (0: never written) |
//! | last 4 | crc32c of every byte before it |

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crc32c::{crc32c, crc32c_append};

use crate::error::{JobError, RunError};

const MAGIC: [u8; 8] = *b"FSLABVST";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 40;
const KEY: &str = "verify_state";

/// A state file as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub bs: u64,
    pub size: u64,
    pub generations: Vec<u32>,
}

/// The number of blocks a job of `bs` and `size` addresses (as `Offsets` counts them).
pub fn blocks(bs: u64, size: u64) -> u64 {
    (size / bs).max(1)
}

fn not_state(path: &Path, why: &str) -> RunError {
    JobError::new(
        KEY,
        format!("`{}` is not a verify state file: {why}", path.display()),
    )
    .hint("point `verify_state` at a file a verify job wrote, or delete it to start afresh (every block is then unwritten)")
    .into()
}

/// Checks what can be checked of `verify_state` before anything else happens: its
/// directory exists (the file is written at the end, too late to find out then), it is
/// not a directory, and it is not the job's own target.
pub fn check_path(path: &Path, target: Option<&Path>) -> Result<(), RunError> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(JobError::new(
            KEY,
            format!("the directory `{}` does not exist", parent.display()),
        )
        .hint("create it first; the state is written there at the end of the job")
        .into());
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if meta.is_dir() {
        return Err(JobError::new(KEY, format!("`{}` is a directory", path.display())).into());
    }
    let same = target
        .and_then(|t| std::fs::metadata(t).ok())
        .is_some_and(|t| t.dev() == meta.dev() && t.ino() == meta.ino());
    if same {
        return Err(
            JobError::new(KEY, format!("`{}` is the job's own target", path.display()))
                .hint("keep the state in a file of its own, beside the target")
                .into(),
        );
    }
    Ok(())
}

/// Reads the state file; `None` when it does not exist yet.
pub fn load(path: &Path) -> Result<Option<Saved>, RunError> {
    let ctx = |e| RunError::io(format!("cannot read {}", path.display()), e);
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ctx(e)),
    };
    let len = f.metadata().map_err(ctx)?.len();
    if len < (HEADER_LEN + 4) as u64 {
        return Err(not_state(path, &format!("{len} bytes is too short")));
    }
    let mut header = [0u8; HEADER_LEN];
    f.read_exact(&mut header).map_err(ctx)?;
    if header[..8] != MAGIC {
        return Err(not_state(path, "wrong magic"));
    }
    let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(not_state(
            path,
            &format!("format version {version}; this engine reads {VERSION}"),
        ));
    }
    let (bs, size, n) = (word(16), word(24), word(32));
    // Checked before allocating: a damaged count must not ask for terabytes.
    if bs == 0 || n != blocks(bs, size) || Some(len) != n.checked_mul(4).map(|b| b + 44) {
        return Err(not_state(
            path,
            &format!("{len} bytes do not hold {n} blocks of bs {bs}, size {size}"),
        ));
    }
    let mut rest = vec![0u8; len as usize - HEADER_LEN];
    f.read_exact(&mut rest).map_err(ctx)?;
    let (gens, tail) = rest.split_at(rest.len() - 4);
    let stored = u32::from_le_bytes(tail.try_into().expect("4 bytes"));
    if stored != crc32c_append(crc32c(&header), gens) {
        return Err(not_state(path, "checksum mismatch (damaged)"));
    }
    let generations = gens
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    Ok(Some(Saved {
        bs,
        size,
        generations,
    }))
}

/// Refuses a state written for other blocks than this job's: the generations of one
/// block would be taken for another's.
pub fn check_fits(saved: &Saved, path: &Path, bs: u64, size: Option<u64>) -> Result<(), RunError> {
    let mut differs = Vec::new();
    if saved.bs != bs {
        differs.push(format!("bs {} (the job's is {bs})", saved.bs));
    }
    if let Some(size) = size.filter(|s| *s != saved.size) {
        differs.push(format!("size {} (the job's is {size})", saved.size));
    }
    if differs.is_empty() {
        return Ok(());
    }
    Err(JobError::new(
        KEY,
        format!(
            "`{}` was written for other blocks: {}",
            path.display(),
            differs.join(", ")
        ),
    )
    .hint(format!(
        "run with bs = {}, size = {} as the job that wrote it, or give another `verify_state` (or delete it: every block is then unwritten)",
        saved.bs, saved.size
    ))
    .into())
}

/// Writes the state whole or not at all: a temporary file in the same directory,
/// flushed, then renamed over the old one, so a crash leaves the old state or the new,
/// never half of one.
pub fn save(path: &Path, bs: u64, size: u64, generations: &[u32]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp: PathBuf = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = write(&tmp, bs, size, generations).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return written;
    }
    // The rename is durable once the directory is; not every file system lets a
    // directory be opened and synced, and the state is already in place.
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

fn write(tmp: &Path, bs: u64, size: u64, generations: &[u32]) -> std::io::Result<()> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(tmp)?;
    let mut out = BufWriter::with_capacity(1 << 20, f);
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[16..24].copy_from_slice(&bs.to_le_bytes());
    header[24..32].copy_from_slice(&size.to_le_bytes());
    header[32..40].copy_from_slice(&(generations.len() as u64).to_le_bytes());
    out.write_all(&header)?;
    let mut crc = crc32c(&header);
    let mut chunk = Vec::with_capacity(64 << 10);
    for gens in generations.chunks(16 << 10) {
        chunk.clear();
        chunk.extend(gens.iter().flat_map(|g| g.to_le_bytes()));
        crc = crc32c_append(crc, &chunk);
        out.write_all(&chunk)?;
    }
    out.write_all(&crc.to_le_bytes())?;
    out.into_inner().map_err(|e| e.into_error())?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(e: RunError) -> String {
        match e {
            RunError::Job(j) => j.to_string(),
            other => panic!("not a job error: {other}"),
        }
    }

    #[test]
    fn a_saved_state_loads_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state");
        assert_eq!(load(&p).unwrap(), None, "no file yet");
        let gens: Vec<u32> = (0..100_000).map(|i| i % 7).collect();
        save(&p, 4096, 100_000 * 4096 + 5, &gens).unwrap();
        let s = load(&p).unwrap().unwrap();
        assert_eq!((s.bs, s.size), (4096, 100_000 * 4096 + 5));
        assert_eq!(s.generations, gens);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
    }

    #[test]
    fn a_damaged_or_foreign_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state");
        save(&p, 512, 4096, &[1; 8]).unwrap();
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[45] ^= 1;
        std::fs::write(&p, &bytes).unwrap();
        let m = message(load(&p).unwrap_err());
        assert!(
            m.contains("`verify_state`") && m.contains("checksum"),
            "{m}"
        );
        assert!(m.contains(&p.display().to_string()), "{m}");
        std::fs::write(&p, [b'x'; 100]).unwrap();
        assert!(message(load(&p).unwrap_err()).contains("wrong magic"));
        bytes.truncate(50);
        std::fs::write(&p, &bytes).unwrap();
        assert!(message(load(&p).unwrap_err()).contains("do not hold"));
    }

    #[test]
    fn a_state_for_other_blocks_is_refused_saying_what_differs() {
        let saved = Saved {
            bs: 4096,
            size: 1 << 20,
            generations: vec![0; 256],
        };
        let p = Path::new("/x/state");
        assert!(check_fits(&saved, p, 4096, Some(1 << 20)).is_ok());
        assert!(
            check_fits(&saved, p, 4096, None).is_ok(),
            "size not known yet"
        );
        let m = message(check_fits(&saved, p, 8192, Some(2 << 20)).unwrap_err());
        assert!(
            m.contains("`/x/state` was written for other blocks: bs 4096 (the job's is 8192), size 1048576 (the job's is 2097152)"),
            "{m}"
        );
    }
}
