//! Opening an input: a regular file, whose size is known so that sizes claimed by headers are
//! checked before anything is allocated, or a stream (standard input for the path `-`, a
//! pipe, a device), read as it comes with buffers that grow only as data arrives.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::lines::{format_error, io_error};
use crate::error::Result;

/// The name of standard input in error messages.
pub(crate) const STDIN_NAME: &str = "<stdin>";

/// True for the path `-`, which every reader that can stream takes as standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// An opened input.
pub(crate) struct Source<'a> {
    /// The name errors give: the path, or `<stdin>`.
    pub name: PathBuf,
    /// The bytes.
    pub reader: Box<dyn Read + 'a>,
    /// The size of a regular file; `None` for a stream.
    pub len: Option<u64>,
}

impl<'a> Source<'a> {
    /// A stream read from `reader`, named `name` in errors.
    pub fn stream(reader: impl Read + 'a, name: &Path) -> Self {
        Source {
            name: name.to_path_buf(),
            reader: Box::new(reader),
            len: None,
        }
    }
}

/// Opens `path` (`-`: standard input).
pub(crate) fn open(path: &Path) -> Result<Source<'static>> {
    if is_stdin(path) {
        return Ok(Source::stream(
            std::io::stdin().lock(),
            Path::new(STDIN_NAME),
        ));
    }
    let file = File::open(path).map_err(io_error(path))?;
    let meta = file.metadata().map_err(io_error(path))?;
    if meta.is_dir() {
        return Err(format_error(path, "is a directory, not a file"));
    }
    Ok(Source {
        name: path.to_path_buf(),
        len: meta.is_file().then_some(meta.len()),
        reader: Box::new(file),
    })
}
