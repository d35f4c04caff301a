//! The library's typed error.

use std::path::PathBuf;

/// Everything that can go wrong in simlsh, with enough context (row, column, value, file) to
/// find the offending input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter given to a builder or a function is out of its valid range.
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The parameter's name, as in the builder method.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An input value is NaN or infinite.
    #[error("row {row}, column {col}: value {value} is not finite")]
    NonFinite {
        /// Row (vector) number, 0-based.
        row: usize,
        /// Column (feature index), 0-based.
        col: u64,
        /// The offending value.
        value: f64,
    },
    /// An input value is finite but too large to sign: beyond
    /// [`signers::MAX_VALUE`](crate::signers::MAX_VALUE) (`2^64`) in magnitude, where the
    /// `f32` projections could overflow.
    #[error(
        "row {row}, column {col}: value {value:e} exceeds 2^64 in magnitude, where a projection \
         could overflow float32 (a signature depends only on the direction: scale the vector)"
    )]
    ValueTooLarge {
        /// Row (vector) number, 0-based.
        row: usize,
        /// Column (feature index), 0-based.
        col: u64,
        /// The offending value.
        value: f64,
    },
    /// A dense input's width does not match the signer's dimension.
    #[error("input has {got} columns but the signer was built for dimension {expected}")]
    DimensionMismatch {
        /// The signer's dimension.
        expected: u64,
        /// The input's number of columns.
        got: u64,
    },
    /// A sparse index lies outside the signer's dimension.
    #[error("row {row}: feature index {col} is out of range for dimension {dim}")]
    IndexOutOfRange {
        /// Row number, 0-based.
        row: usize,
        /// The offending feature index.
        col: u64,
        /// The signer's dimension.
        dim: u64,
    },
    /// Sparse indices of a row are not strictly increasing (unsorted or duplicated).
    #[error(
        "row {row}: sparse indices must be strictly increasing, but index {col} follows {prev} \
         (use `sparse::sort_and_merge` to sort and merge duplicates)"
    )]
    UnsortedIndices {
        /// Row number, 0-based.
        row: usize,
        /// The index found.
        col: u64,
        /// The index before it.
        prev: u64,
    },
    /// Two arrays that must have the same length do not.
    #[error("{what}: lengths differ ({left} vs {right})")]
    LengthMismatch {
        /// What was being compared.
        what: &'static str,
        /// First length.
        left: usize,
        /// Second length.
        right: usize,
    },
    /// Signatures of different widths were mixed.
    #[error("signature width mismatch: expected {expected} bits, got {got}")]
    BitsMismatch {
        /// Width expected.
        expected: usize,
        /// Width found.
        got: usize,
    },
    /// A signature has bits set beyond its width f in its last word.
    #[error("row {row}: bits set beyond the signature width of {bits} bits")]
    PaddingBits {
        /// Row number, 0-based.
        row: usize,
        /// The signature width.
        bits: usize,
    },
    /// The operation is not supported by this signer or index.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// An I/O error, with the file it concerns.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not in the expected format (foreign, truncated or corrupt).
    #[error("{}: {reason}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A line (or record) of a text input cannot be parsed.
    #[error("{}:{line}: {reason}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Line number, 1-based (for CSV, the line where the record starts).
        line: usize,
        /// What is wrong, quoting the offending token.
        reason: String,
    },
    /// A file was written by an unsupported format version.
    #[error("{}: format version {got} is not supported (this build reads version {expected})", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// The version this build reads.
        expected: u32,
        /// The version found.
        got: u32,
    },
    /// A parameter or section of a file is out of range or inconsistent with the others.
    #[error("{}: {field}: {reason}", path.display())]
    InvalidField {
        /// The file.
        path: PathBuf,
        /// The parameter (`param bits`) or section (`section rows`) at fault.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Two paths of one run name the same file (the same device and inode, through any
    /// links): an output that is also an input, or two outputs.
    #[error("{} and {} are the same file ({what}): refusing to overwrite it", first.display(), second.display())]
    SameFile {
        /// The input (or the first output).
        first: PathBuf,
        /// The output.
        second: PathBuf,
        /// `"an input and an output"` or `"two outputs"`.
        what: &'static str,
    },
    /// Memory for what was asked could not be had: more than the process may still allocate
    /// (see [`memory::available`](crate::memory::available)), or refused by the allocator.
    #[error(
        "{what} needs {needed} bytes, more than the {available} bytes this process may still \
         allocate"
    )]
    OutOfMemory {
        /// What was to be allocated (a matrix, a pool, a result array).
        what: String,
        /// Bytes asked for (`u64::MAX` when the size overflows).
        needed: u64,
        /// Bytes available when it was asked.
        available: u64,
    },
    /// A file's checksum does not match its contents.
    #[error("{}: checksum mismatch (stored {stored:#018x}, computed {computed:#018x}): the file is corrupt", path.display())]
    Checksum {
        /// The file.
        path: PathBuf,
        /// Checksum stored in the file.
        stored: u64,
        /// Checksum of the contents.
        computed: u64,
    },
    /// A store cannot take the request now (its write queue is full): retry later.
    #[error("busy: {0}")]
    Busy(String),
    /// A store cannot take the request at all (closed, opened read-only, or held by another
    /// writer).
    #[error("unavailable: {0}")]
    Unavailable(String),
}

/// Short for `std::result::Result<T, simlsh::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Shorthand for [`Error::InvalidParameter`].
    pub fn param(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidParameter {
            name,
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::LengthMismatch`]: `what` (`"a vs b"`) have `left` and `right`
    /// elements.
    pub fn lengths(what: &'static str, left: usize, right: usize) -> Self {
        Error::LengthMismatch { what, left, right }
    }

    /// The error of a call on rows `offset..` of a larger input, with its row number made
    /// relative to the whole input (errors without a row are unchanged): what a caller that
    /// signs or checks an input in chunks reports.
    ///
    /// ```
    /// use simlsh::Error;
    /// let e = Error::NonFinite { row: 2, col: 5, value: f64::NAN }.offset_rows(1000);
    /// assert!(matches!(e, Error::NonFinite { row: 1002, col: 5, .. }));
    /// ```
    pub fn offset_rows(self, offset: usize) -> Self {
        match self {
            Error::NonFinite { row, col, value } => Error::NonFinite {
                row: row + offset,
                col,
                value,
            },
            Error::ValueTooLarge { row, col, value } => Error::ValueTooLarge {
                row: row + offset,
                col,
                value,
            },
            Error::IndexOutOfRange { row, col, dim } => Error::IndexOutOfRange {
                row: row + offset,
                col,
                dim,
            },
            Error::UnsortedIndices { row, col, prev } => Error::UnsortedIndices {
                row: row + offset,
                col,
                prev,
            },
            Error::PaddingBits { row, bits } => Error::PaddingBits {
                row: row + offset,
                bits,
            },
            other => other,
        }
    }
}
