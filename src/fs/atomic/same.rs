//! Refusing an output that is also an input (or another output) of the same run.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::stage::{self, Dest};
use crate::error::{Error, Result};
use crate::io::source::is_stdin;

/// What a path names: a file (device and inode), or, for a file that does not exist yet, the
/// path it will have.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    #[cfg(unix)]
    Inode(u64, u64),
    #[cfg(not(unix))]
    Canonical(PathBuf),
    New(PathBuf),
}

#[cfg(unix)]
fn file_identity(path: &Path, m: &fs::Metadata) -> Identity {
    use std::os::unix::fs::MetadataExt;
    let _ = path;
    Identity::Inode(m.dev(), m.ino())
}

#[cfg(not(unix))]
fn file_identity(path: &Path, _: &fs::Metadata) -> Identity {
    Identity::Canonical(fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// The identity of a regular file at `path` (through any links), `None` for standard input,
/// pipes and devices (reading and writing those does not destroy anything).
fn identity(path: &Path) -> io::Result<Option<Identity>> {
    if is_stdin(path) {
        return Ok(None);
    }
    match fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Some(file_identity(path, &m))),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match stage::resolve(path)? {
            // A file to be created: the same as another output to be created at the same
            // place (through any links to it).
            Dest::Replace(p) => {
                let dir = fs::canonicalize(stage::dir_of(&p)).unwrap_or_else(|_| stage::dir_of(&p));
                Ok(Some(Identity::New(
                    dir.join(p.file_name().unwrap_or_default()),
                )))
            }
            Dest::Through { .. } => Ok(None),
        },
        Err(e) => Err(e),
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks that no output of a run is one of its inputs, and that no two outputs are the same
/// file, whatever the paths: the same file through symbolic links or hard links counts (same
/// device and inode). Standard input (`-`), pipes and devices are not files and never clash
/// (`--out /dev/stdout` with `/dev/stdin` as input is fine). The error,
/// [`Error::SameFile`], names both paths. Call it before reading anything: writing an output
/// over an input destroys the input even when the write is atomic (`index add` reads the index
/// it rewrites: it is its own input and output by design, and must not be listed twice).
pub fn check_distinct(inputs: &[&Path], outputs: &[&Path]) -> Result<()> {
    let ins: Vec<(PathBuf, Identity)> = inputs
        .iter()
        .map(|p| {
            Ok(identity(p)
                .map_err(io_err(p))?
                .map(|i| (p.to_path_buf(), i)))
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let mut outs: Vec<(PathBuf, Identity)> = Vec::new();
    for p in outputs {
        let Some(id) = identity(p).map_err(io_err(p))? else {
            continue;
        };
        if let Some((input, _)) = ins.iter().find(|(_, i)| *i == id) {
            return Err(Error::SameFile {
                first: input.clone(),
                second: p.to_path_buf(),
                what: "an input and an output",
            });
        }
        if let Some((other, _)) = outs.iter().find(|(_, i)| *i == id) {
            return Err(Error::SameFile {
                first: other.clone(),
                second: p.to_path_buf(),
                what: "two outputs",
            });
        }
        outs.push((p.to_path_buf(), id));
    }
    Ok(())
}
