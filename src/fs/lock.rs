//! Advisory locks for read-modify-write of a file by concurrent runs.
//!
//! Two runs that each read an index, add to it and write it back both succeed, and the one
//! that renames last silently drops the other's additions. [`lock_exclusive`] serialises them:
//! it takes an exclusive lock (`File::lock`: `flock(2)` on Unix, `LockFileEx` on Windows) on
//! the file itself, held until the returned guard is dropped (or the process ends: the system
//! releases the locks of a dead process).
//!
//! Writes replace a file by renaming a new one over it ([`write_atomic`](crate::fs::write_atomic)),
//! so a lock on the old file does not exclude a run that opens the new one. After taking the
//! lock, [`lock_exclusive`] therefore checks that the path still names the file it locked
//! (same device and inode); when another run replaced it meanwhile, it locks the new file
//! instead. The holder must write the new file (rename it into place) before dropping the
//! guard. No lock file is created: the file must exist, and be a regular file (through
//! symbolic links, so that every link to one file shares its lock); a missing file, a
//! directory, a FIFO or a device is an [`Error::Io`] naming the path, before anything is
//! created. On a system without file locks, taking one is an [`Error::Io`] of kind
//! [`Unsupported`](std::io::ErrorKind::Unsupported).
//!
//! The lock is advisory: it excludes only runs that take it. Readers need none, as writes
//! replace the file atomically.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// An exclusive lock on a file; released when dropped.
#[derive(Debug)]
pub struct LockGuard {
    file: File,
    path: PathBuf,
}

impl LockGuard {
    /// The locked file's path, as given.
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

/// Opens the regular file `path` for locking, without blocking on a FIFO that may have
/// replaced it since it was checked.
fn open(path: &Path) -> io::Result<File> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file: only an existing file can be locked",
        ));
    }
    let mut o = OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK);
    }
    let file = o.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file: only an existing file can be locked",
        ));
    }
    Ok(file)
}

/// True when `path` still names the open `file` (it was not replaced).
fn still_named(path: &Path, file: &File) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (a, b) = (std::fs::metadata(path)?, file.metadata()?);
        Ok(a.dev() == b.dev() && a.ino() == b.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = (path, file);
        Ok(true)
    }
}

/// Locks `path` (see the [module docs](self)), waiting or not; `None` when not waiting and
/// another holds it.
fn lock(path: &Path, block: bool) -> Result<Option<LockGuard>> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    loop {
        let file = open(path).map_err(io)?;
        if !flock(&file, block).map_err(io)? {
            return Ok(None);
        }
        if still_named(path, &file).map_err(io)? {
            return Ok(Some(LockGuard {
                file,
                path: path.to_path_buf(),
            }));
        }
        // Replaced by the run that held the lock: lock the new file.
    }
}

/// Takes the exclusive lock of the existing file `path` (see the [module docs](self)),
/// waiting for other holders to release it.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("simlsh-doc-lock-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let index = dir.join("codes.simlsh");
/// std::fs::write(&index, b"...")?;
/// let guard = simlsh::fs::lock_exclusive(&index)?;
/// // ... load the index, add to it, save it ...
/// assert!(simlsh::fs::try_lock_exclusive(&index)?.is_none()); // held
/// drop(guard);
/// assert!(simlsh::fs::try_lock_exclusive(&index)?.is_some());
/// // Nothing was created beside the file.
/// assert_eq!(std::fs::read_dir(&dir)?.count(), 1);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Io`] naming `path` when it does not exist or is not a regular file, or when the
/// system has no file locks.
pub fn lock_exclusive(path: &Path) -> Result<LockGuard> {
    lock(path, true)?.ok_or_else(|| Error::Io {
        path: path.to_path_buf(),
        source: io::Error::other("the lock was not taken"),
    })
}

/// Takes the exclusive lock of the existing file `path` if no one holds it; `None` if
/// someone does.
///
/// # Errors
/// As [`lock_exclusive`].
pub fn try_lock_exclusive(path: &Path) -> Result<Option<LockGuard>> {
    lock(path, false)
}
