//! Writes that lose nothing: a crash at any moment leaves either the old file or the new one,
//! symbolic links, pipes and devices survive, killed runs leave no debris behind, several
//! outputs replace their files together, and an output is never one of the inputs.
//!
//! - [`write_atomic`]: one output, written to a temporary file in the destination's directory,
//!   fsynced and renamed over it (the directory is then fsynced). A symbolic link is followed:
//!   its target is replaced and the link kept. A FIFO, a character or block device, or
//!   `/dev/stdout` is written straight through (renaming over `/dev/null` would replace the
//!   device by a regular file).
//! - [`OutputSet`]: several outputs, each written to its temporary first; they replace their
//!   destinations only once all are complete, so a failed run replaces none.
//! - Temporaries are named `.<name>.<pid>-<n>.simlsh-tmp` and locked while written; a killed
//!   run's temporaries are removed by the next write to the same destination (see
//!   [`clean_stale_temporaries`]).
//! - [`check_distinct`]: refuses an output that is an input, or two outputs that are the same
//!   file, by device and inode.
//! - Read-modify-write of a file by concurrent runs needs a lock besides:
//!   [`lock_exclusive`](crate::fs::lock::lock_exclusive).

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::Path;

mod same;
mod set;
mod stage;

pub use same::check_distinct;
pub use set::OutputSet;
pub use stage::clean_stale_temporaries;
pub(crate) use stage::{Temp, create as create_temp};

use crate::error::{Error, Result};
use stage::Dest;

/// Writes `path` atomically through `write` (see the [module docs](self)): a regular file (or
/// a new one, or the target of a symbolic link) is replaced by a renamed temporary, so that a
/// failure of `write` or of any step leaves the old file untouched and no temporary behind; a
/// pipe or device is written straight through. Errors name `path`.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    match stage::resolve(path).map_err(io)? {
        Dest::Through { path: p, append } => {
            let result = (|| {
                let file = OpenOptions::new().write(true).append(append).open(&p)?;
                let mut w = BufWriter::with_capacity(1 << 16, file);
                write(&mut w)?;
                w.flush()
            })();
            result.map_err(io)
        }
        Dest::Replace(_) => {
            let mut set = OutputSet::new();
            set.write(path, write)?;
            set.commit()
        }
    }
}

#[cfg(test)]
mod tests;
