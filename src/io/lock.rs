//! Advisory locks for read-modify-write of a file by concurrent runs.
//!
//! Two runs that each read an index, add to it and write it back both succeed, and the one
//! that renames last silently drops the other's additions. [`lock_exclusive`] serialises them:
//! it takes an exclusive lock (`File::lock`: `flock(2)` on Unix, `LockFileEx` on Windows) on a
//! lock file beside the target, `.<name>.lock`, held until the returned guard is dropped (or
//! the process ends: the system releases the locks of a dead process). The lock file itself is
//! left in place: removing it would let a third run lock a new file while the second still
//! holds the old one. On a system without file locks, taking one is an
//! [`Error::Io`] of kind [`Unsupported`](std::io::ErrorKind::Unsupported).
//!
//! The lock is advisory: it excludes only runs that take it. Readers need none, as writes
//! replace the file atomically ([`write_atomic`](super::write_atomic)).

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use super::atomic::stage::{self, Dest};
use crate::error::{Error, Result};

/// An exclusive lock on a file's lock file; released when dropped.
#[derive(Debug)]
pub struct LockGuard {
    file: File,
    path: PathBuf,
}

impl LockGuard {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = unlock(&self.file);
    }
}

/// Takes an exclusive lock on `file` (`File::lock`), waiting (`block`) or not; `Ok(false)`
/// if another open file holds it and `block` is false. An error of kind
/// [`Unsupported`](io::ErrorKind::Unsupported) where the system has no file locks.
pub(crate) fn flock(file: &File, block: bool) -> io::Result<bool> {
    if block {
        return file.lock().map(|()| true);
    }
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

fn unlock(file: &File) -> io::Result<()> {
    file.unlock()
}

/// The lock file of `path`: beside the file a symbolic link names, so that every link to one
/// file shares its lock.
fn lock_path(path: &Path) -> Result<PathBuf> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let target = match stage::resolve(path).map_err(io)? {
        Dest::Replace(p) => p,
        Dest::Through { path, .. } => path,
    };
    let name = target.file_name().ok_or_else(|| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file path",
        ))
    })?;
    Ok(stage::dir_of(&target).join(format!(".{}.lock", name.to_string_lossy())))
}

fn open(path: &Path) -> Result<(File, PathBuf)> {
    let lock = lock_path(path)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock)
        .map_err(|source| Error::Io {
            path: lock.clone(),
            source,
        })?;
    Ok((file, lock))
}

/// Takes the exclusive lock of `path` (see the [module docs](self)), waiting for other holders
/// to release it.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("simlsh-doc-lock-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let index = dir.join("codes.simlsh");
/// let guard = simlsh::io::lock_exclusive(&index)?;
/// // ... load the index, add to it, save it ...
/// assert!(simlsh::io::try_lock_exclusive(&index)?.is_none()); // held
/// drop(guard);
/// assert!(simlsh::io::try_lock_exclusive(&index)?.is_some());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn lock_exclusive(path: &Path) -> Result<LockGuard> {
    let (file, lock) = open(path)?;
    flock(&file, true).map_err(|source| Error::Io {
        path: lock.clone(),
        source,
    })?;
    Ok(LockGuard { file, path: lock })
}

/// Takes the exclusive lock of `path` if no one holds it; `None` if someone does.
pub fn try_lock_exclusive(path: &Path) -> Result<Option<LockGuard>> {
    let (file, lock) = open(path)?;
    match flock(&file, false) {
        Ok(true) => Ok(Some(LockGuard { file, path: lock })),
        Ok(false) => Ok(None),
        Err(source) => Err(Error::Io { path: lock, source }),
    }
}
