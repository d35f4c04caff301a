//! File-system utilities: writes that lose nothing and locks for read-modify-write.
//!
//! - [`atomic`]: [`write_atomic`] replaces a file by a renamed temporary (keeping symbolic
//!   links, writing pipes and devices straight through, cleaning the temporaries of killed
//!   runs); [`OutputSet`] replaces several files together or none; [`check_distinct`] refuses
//!   an output that is an input.
//! - [`lock`]: [`lock_exclusive`] serialises read-modify-write of a file by concurrent runs.
//! - [`sync_dir`] makes a directory's entries (creations, renames, removals) durable.
//!
//! The [file format](crate::persist::format) and every writer of the crate (signatures,
//! `.npy` arrays, IDF tables, stores) write through these.

pub mod atomic;
pub mod lock;

pub use atomic::{OutputSet, check_distinct, clean_stale_temporaries, write_atomic};
pub use lock::{LockGuard, lock_exclusive, try_lock_exclusive};

use std::path::Path;

use crate::error::{Error, Result};

/// Flushes the entries of directory `dir` (file creations, renames, removals) to disk, so
/// that they survive a crash (Unix; elsewhere a no-op). Errors name `dir`.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
