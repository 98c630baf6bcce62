//! Laying a file out before timing: written once up to its size with incompressible
//! content and fsynced, so reads hit real blocks instead of holes (as fio does). Block
//! jobs lay out their target; application models their data and log files.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::RunError;

/// Writes a file up to `size` with incompressible content, so reads hit real blocks.
/// Returns the bytes written (0 when the file was already large enough).
pub fn lay_out(path: &Path, size: u64, seed: u64, stop: &AtomicBool) -> Result<u64, RunError> {
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| RunError::io(format!("cannot lay out {}", path.display()), e))?;
    lay_out_file(&mut f, path, size, seed, stop)
}

/// As `lay_out`, on a file the caller opened for reading and writing (a job confined
/// to a directory opens its files itself: beneath.rs); `path` names it in errors.
pub fn lay_out_file(
    f: &mut File,
    path: &Path,
    size: u64,
    seed: u64,
    stop: &AtomicBool,
) -> Result<u64, RunError> {
    let ctx = |e| RunError::io(format!("cannot lay out {}", path.display()), e);
    let have = f.metadata().map_err(ctx)?.len();
    if have >= size {
        return Ok(0);
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x1a70);
    let mut buf = vec![0u8; 1 << 20];
    f.seek(SeekFrom::Start(have)).map_err(ctx)?;
    let mut left = size - have;
    while left > 0 {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        rng.fill_bytes(&mut buf);
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n]).map_err(ctx)?;
        left -= n as u64;
    }
    f.sync_all().map_err(ctx)?;
    Ok(size - have - left)
}
