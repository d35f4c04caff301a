//! Persistence: the crate's versioned, checksummed [file format](mod@format) and the codecs of
//! signature matrices and every index kind, over files, writers and bytes.
//!
//! - Indexes: [`save_index`] (atomic), [`stage_index`] (with other outputs, in an
//!   [`OutputSet`](crate::fs::OutputSet)) and [`write_index`] (to any [`std::io::Write`])
//!   write any [`HammingIndex`](crate::HammingIndex); [`load_index`] opens a file
//!   (memory-mapped), [`read_index`] the bytes of one ([`Bytes`](crate::storage::Bytes): a
//!   buffer shared without copying), both checked the same way; [`verify_index`] verifies a
//!   file whole.
//! - Signature matrices: [`save_signatures`], [`stage_signatures`], [`load_signatures`].
//! - The container: [`Writer`] builds a file, [`IndexFile`] opens one (a path or bytes) and
//!   gives its parameters, its arrays and the [`IndexSpec`](crate::index::IndexSpec) it
//!   records ([`IndexFile::spec`]).
//!
//! Whatever writes an index first verifies the file or bytes it was loaded from
//! ([`HammingIndex::verify_source`](crate::HammingIndex::verify_source)): a corrupt file is
//! never rewritten as sound.

mod codecs;
pub mod format;
mod spec;

pub use codecs::{
    LoadOptions, SignatureFile, load_index, load_index_with, load_signatures, read_index,
    read_index_with, save_index, save_signatures, stage_index, stage_signatures, verify_index,
    write_index,
};
pub use format::{FileKind, IndexFile, Writer};
