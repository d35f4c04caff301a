//! The library's errors as Python exceptions.
//!
//! Bad input or parameters raise `ValueError`, an operation a signer or index does not support
//! `TypeError`, a store that is busy (its write queue full) or unavailable (closed, read-only,
//! held by another writer) `RuntimeError`, a failed file operation `OSError` (with its errno, so `FileNotFoundError` and
//! friends come out as Python would raise them) and a foreign, truncated or corrupt file
//! (a field of a file that contradicts another included) `simlsh.FormatError`, a subclass of
//! `OSError`; what cannot be allocated `MemoryError`. The message is the library's, naming the
//! row, column, file or line.

use pyo3::exceptions::{PyMemoryError, PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use simlsh::Error;

pyo3::create_exception!(
    _simlsh,
    FormatError,
    PyOSError,
    "A file is not a valid simlsh file (foreign, truncated, corrupt or of another version), or a line of a text input cannot be parsed."
);

/// Converts a library error into the matching Python exception.
pub fn to_py(e: Error) -> PyErr {
    match &e {
        Error::Io { path, source } => match source.raw_os_error() {
            Some(errno) => PyOSError::new_err((
                errno,
                source.to_string(),
                path.to_string_lossy().into_owned(),
            )),
            None => PyOSError::new_err(e.to_string()),
        },
        Error::Format { .. }
        | Error::Parse { .. }
        | Error::Version { .. }
        | Error::Checksum { .. }
        | Error::InvalidField { .. } => FormatError::new_err(e.to_string()),
        Error::Unsupported(_) => PyTypeError::new_err(e.to_string()),
        Error::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        Error::Busy(_) | Error::Unavailable(_) => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// `Result` of the library into `PyResult`.
pub trait IntoPy<T> {
    /// Maps the error with [`to_py`].
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for simlsh::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// A `ValueError` with this message.
pub fn value_error(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}
