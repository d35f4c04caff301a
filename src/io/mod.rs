//! Files: the versioned binary format of signature matrices and indexes, atomic writes, and
//! input formats.

pub mod atomic;
pub mod format;
pub mod persist;
pub mod vecs;

pub use atomic::write_atomic;
pub use format::{FileKind, IndexFile, Writer};
pub use persist::{SignatureFile, load_index, load_signatures, save_signatures};
