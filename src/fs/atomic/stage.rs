//! Where an output goes, and the temporary files that stage it.
//!
//! **Destinations.** Writes follow symbolic links to what they name: a regular file (or
//! nothing yet) is replaced by renaming a temporary file over it, in the directory of the link's
//! target, so that the link itself is kept; anything else (a FIFO, a character or block
//! device, a socket, or a `/proc/<pid>/fd` link such as `/dev/stdout`) is written straight
//! through, as renaming over it would destroy it. A link in a sticky world-writable directory
//! is followed only under the kernel's `protected_symlinks` rule (it belongs to the caller or
//! to the directory's owner), since resolving links here bypasses the kernel's own check.
//!
//! **Temporaries.** A temporary file is named `.<name>.<pid>-<n>.simlsh-tmp` beside its
//! destination and holds an exclusive advisory lock (`flock(2)`) for as long as its writer
//! has it open. A killed writer loses its lock with its process, so the next writer of
//! the same destination removes every temporary of that name whose lock it can take
//! ([`clean_stale_temporaries`]): a live writer's temporary is never touched.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::fs::lock::flock;

/// Suffix of every temporary file.
pub(crate) const SUFFIX: &str = ".simlsh-tmp";

/// Where an output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Dest {
    /// A regular file, or a path that does not exist yet: replaced atomically.
    Replace(PathBuf),
    /// Something else, written straight through; `append` for a regular file reached through
    /// a `/proc/<pid>/fd` link (the shell's `>>` must not be overwritten).
    Through {
        /// The path to open.
        path: PathBuf,
        /// Open in append mode.
        append: bool,
    },
}

/// True when `p` is an entry of a `/proc/<pid>/fd` directory (`/dev/stdout`, `/dev/fd/1`,
/// `/proc/self/fd/1`): a link to an open file that may have no name of its own (a pipe).
fn is_fd_link(p: &Path) -> bool {
    let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return false;
    };
    fs::canonicalize(dir)
        .is_ok_and(|d| d.starts_with("/proc") && d.file_name().is_some_and(|n| n == "fd"))
}

/// The kernel's rule for following the symbolic link `link` (Linux `protected_symlinks`),
/// applied here because links are resolved in user space: a link in a sticky
/// world-writable directory (`/tmp`) is followed only when it belongs to the caller (its
/// effective uid) or to the directory's owner. Otherwise another user could plant a link
/// there that makes an output replace a file they cannot write.
#[cfg(unix)]
fn check_may_follow(link: &Path, meta: &fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let dir = fs::metadata(dir_of(link))?;
    let sticky_world_writable = dir.mode() & 0o1002 == 0o1002;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !sticky_world_writable || meta.uid() == me || meta.uid() == dir.uid() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "refusing to follow the symbolic link {}: it lies in a sticky world-writable \
             directory and belongs to uid {}, neither the caller nor the directory's owner (the \
             kernel's protected_symlinks rule)",
            link.display(),
            meta.uid()
        ),
    ))
}

#[cfg(not(unix))]
fn check_may_follow(_: &Path, _: &fs::Metadata) -> io::Result<()> {
    Ok(())
}

/// Where writing `path` goes (see the [module docs](self)).
pub(crate) fn resolve(path: &Path) -> io::Result<Dest> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        let meta = match fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Dest::Replace(p)),
            Err(e) => return Err(e),
        };
        let t = meta.file_type();
        if t.is_symlink() {
            if is_fd_link(&p) {
                let append = fs::metadata(&p).is_ok_and(|m| m.is_file());
                return Ok(Dest::Through { path: p, append });
            }
            check_may_follow(&p, &meta)?;
            let target = fs::read_link(&p)?;
            p = match p.parent() {
                Some(dir) if target.is_relative() => dir.join(target),
                _ => target,
            };
        } else if t.is_file() {
            return Ok(Dest::Replace(p));
        } else if t.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory, not a file",
            ));
        } else {
            return Ok(Dest::Through {
                path: p,
                append: false,
            });
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// The directory of `path` (`.` for a bare file name).
pub(crate) fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The prefix of the temporary files of `path` (`.<name>.`).
fn prefix(path: &Path) -> io::Result<String> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("not a file path"))?;
    Ok(format!(".{}.", name.to_string_lossy()))
}

/// A temporary file, locked while open; removed on drop unless [`kept`](Temp::keep).
pub(crate) struct Temp {
    pub path: PathBuf,
    pub file: File,
    keep: bool,
}

impl Temp {
    /// The temporary has been renamed over its destination: nothing to remove.
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(unix)]
fn same_inode(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_inode(_: &fs::Metadata, _: &fs::Metadata) -> bool {
    true
}

/// Creates and locks a new temporary file for `dest` in `dir`, after removing the stale
/// temporaries of killed writers.
pub(crate) fn create(dir: &Path, dest: &Path) -> io::Result<Temp> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let prefix = prefix(dest)?;
    clean_stale(dir, &prefix);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{prefix}{}-{n}{SUFFIX}", std::process::id()));
        let file = match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let mut t = Temp {
            path,
            file,
            keep: false,
        };
        match flock(&t.file, false) {
            Ok(true) => {}
            // Another writer's cleaning took it first and removes it.
            Ok(false) => {
                t.keep();
                continue;
            }
            // No locks on this system: temporaries are not cleaned either.
            Err(e) if e.kind() == io::ErrorKind::Unsupported => return Ok(t),
            Err(e) => return Err(e),
        }
        // Between creating and locking, another writer's cleaning could have taken the lock
        // and removed the file: then start again under a new name.
        match fs::metadata(&t.path) {
            Ok(m) if same_inode(&m, &t.file.metadata()?) => return Ok(t),
            _ => {
                t.keep();
                continue;
            }
        }
    }
}

/// Removes the temporaries named `<prefix>*.simlsh-tmp` in `dir` whose lock can be taken
/// (their writer is gone); returns how many. Errors are ignored: cleaning is best effort.
pub(crate) fn clean_stale(dir: &Path, prefix: &str) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(prefix) && name.ends_with(SUFFIX)) {
            continue;
        }
        let path = e.path();
        let Ok(f) = File::open(&path) else { continue };
        if flock(&f, false).unwrap_or(false) && fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Removes the stale temporaries of `path`'s outputs (those whose writer is gone, see the
/// [module docs](crate::fs::atomic)); returns how many.
pub fn clean_stale_temporaries(path: &Path) -> io::Result<usize> {
    let dest = match resolve(path)? {
        Dest::Replace(p) => p,
        Dest::Through { .. } => return Ok(0),
    };
    Ok(clean_stale(&dir_of(&dest), &prefix(&dest)?))
}
