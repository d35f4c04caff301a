//! Files: the versioned binary format of signature matrices and indexes, atomic writes, and
//! input formats.
//!
//! Inputs ([`InputFormat`] picks one by extension or name):
//!
//! - vectors: dense [`.npy`](read_npy_dense), SciPy sparse [`.npz`](read_npz_csr),
//!   [SVMlight / libsvm](read_svmlight), [MatrixMarket](read_mtx),
//!   [`.fvecs` / `.ivecs` / `.bvecs`](vecs::read_vecs), all through [`read_vectors`];
//! - text: plain lines, JSON Lines and CSV / TSV, through [`documents()`] and
//!   [`read_documents`];
//! - signatures: `.npy` arrays of `uint64` ([`write_signatures_npy`],
//!   [`read_signatures_npy`]) besides the crate's own format ([`save_signatures`]).
//!
//! Every reader reports bad input as a typed error naming the file and the line, row or byte
//! ([`Error::Parse`](crate::Error::Parse) for text, [`Error::Format`](crate::Error::Format)
//! for binary files), never a panic; line-oriented readers can skip bad lines instead
//! ([`OnBadLine`]).

pub mod atomic;
pub mod documents;
pub mod format;
pub mod input;
pub mod lines;
pub mod mtx;
pub mod npy;
pub mod persist;
pub mod svmlight;
pub mod vecs;

pub use atomic::write_atomic;
pub use documents::{
    Document, Documents, TextOptions, documents, read_documents, read_documents_with_ids,
};
pub use format::{FileKind, IndexFile, Writer};
pub use input::{InputFormat, VectorInput, VectorOptions, Vectors, read_vectors};
pub use lines::{BadLines, OnBadLine};
pub use mtx::{MatrixMarket, read_mtx};
pub use npy::{Csr, read_npy_dense, read_npz_csr, read_signatures_npy, write_signatures_npy};
pub use persist::{SignatureFile, load_index, load_signatures, save_signatures, verify_index};
pub use svmlight::{IndexBase, Svmlight, SvmlightOptions, read_svmlight};
