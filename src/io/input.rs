//! Choosing an input format and reading vectors of any format.
//!
//! [`InputFormat`] names every input the library reads. [`InputFormat::from_path`] picks it
//! from the file extension; [`FromStr`] parses a name given explicitly
//! (e.g. a `--format` option), which overrides the extension:
//!
//! | format | extensions | names | read by |
//! |---|---|---|---|
//! | [`Npy`](InputFormat::Npy) | `.npy` | `npy` | [`read_npy_dense`] |
//! | [`Npz`](InputFormat::Npz) | `.npz` | `npz` | [`read_npz`] |
//! | [`Svmlight`](InputFormat::Svmlight) | `.svm`, `.svmlight`, `.libsvm` | `svmlight`, `libsvm`, `svm` | [`read_svmlight`] |
//! | [`MatrixMarket`](InputFormat::MatrixMarket) | `.mtx` | `mtx`, `matrix-market` | [`read_mtx`] |
//! | [`Fvecs`](InputFormat::Fvecs), [`Ivecs`](InputFormat::Ivecs), [`Bvecs`](InputFormat::Bvecs) | `.fvecs`, `.ivecs`, `.bvecs` | same | [`read_vecs`] |
//! | [`Text`](InputFormat::Text) | `.txt` | `text`, `txt`, `lines` | [`documents`](super::documents()) |
//! | [`JsonLines`](InputFormat::JsonLines) | `.jsonl`, `.ndjson` | `jsonl`, `json-lines`, `ndjson` | [`documents`](super::documents()) |
//! | [`Csv`](InputFormat::Csv) | `.csv` | `csv` | [`documents`](super::documents()) |
//! | [`Tsv`](InputFormat::Tsv) | `.tsv` | `tsv` | [`documents`](super::documents()) |
//!
//! Extensions and names are case-insensitive. The first seven are vector formats
//! ([`read_vectors`]); the last four are text formats, one document per line or record.
//!
//! **Standard input.** Every vector format but `.npz` streams: [`read_vectors`] reads standard
//! input for the path `-` (name the format explicitly), and [`read_vectors_from`] reads any
//! [`Read`]. An `.npz` is a zip archive whose directory is at its end: from a stream it is a
//! clear error (save it to a file). Streams are read as they come, with buffers that grow as
//! data arrives; from a regular file, every size a header claims is checked against the file
//! first.

use std::io::Read;
use std::path::Path;
use std::str::FromStr;

use ndarray::Array2;

use super::limits::Limits;
use super::lines::{BadLines, OnBadLine, format_error};
use super::mtx::{read_mtx, read_mtx_from};
#[cfg(feature = "npz")]
use super::npy::read_npz;
use super::npy::{Csr, read_npy_dense, read_npy_dense_from};
use super::svmlight::{IndexBase, Svmlight, SvmlightOptions, read_svmlight, read_svmlight_from};
use super::vecs::{VecsKind, read_vecs, read_vecs_from};
use crate::error::{Error, Result};
use crate::signature::SignatureMatrix;
use crate::signers::{Signer, SignerExt};

/// Every input format the library reads. See the [module docs](self) for extensions and names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InputFormat {
    /// NumPy `.npy`, a dense `N × D` array of numbers.
    Npy,
    /// NumPy `.npz`: a SciPy sparse matrix (`scipy.sparse.save_npz`) or one dense array
    /// (`np.savez`).
    Npz,
    /// SVMlight / libsvm text.
    Svmlight,
    /// MatrixMarket `.mtx` (coordinate: sparse; array: dense).
    MatrixMarket,
    /// Texmex `.fvecs` (`f32`).
    Fvecs,
    /// Texmex `.ivecs` (`i32`).
    Ivecs,
    /// Texmex `.bvecs` (`u8`).
    Bvecs,
    /// Plain text, one document per line.
    Text,
    /// JSON Lines, the document in a named field of each object.
    JsonLines,
    /// CSV (RFC 4180) with a header row, the document in a named column.
    Csv,
    /// Like [`Csv`](InputFormat::Csv), separated by tabs.
    Tsv,
}

impl InputFormat {
    /// Every format, in the order of the module table.
    pub const ALL: [InputFormat; 11] = [
        InputFormat::Npy,
        InputFormat::Npz,
        InputFormat::Svmlight,
        InputFormat::MatrixMarket,
        InputFormat::Fvecs,
        InputFormat::Ivecs,
        InputFormat::Bvecs,
        InputFormat::Text,
        InputFormat::JsonLines,
        InputFormat::Csv,
        InputFormat::Tsv,
    ];

    /// The canonical name (what [`Display`](std::fmt::Display) prints and
    /// [`FromStr`] accepts).
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Npy => "npy",
            InputFormat::Npz => "npz",
            InputFormat::Svmlight => "svmlight",
            InputFormat::MatrixMarket => "mtx",
            InputFormat::Fvecs => "fvecs",
            InputFormat::Ivecs => "ivecs",
            InputFormat::Bvecs => "bvecs",
            InputFormat::Text => "text",
            InputFormat::JsonLines => "jsonl",
            InputFormat::Csv => "csv",
            InputFormat::Tsv => "tsv",
        }
    }

    /// The format for a file extension (without the dot, any case), if known.
    pub fn from_extension(ext: &str) -> Option<Self> {
        Some(match ext.to_ascii_lowercase().as_str() {
            "npy" => InputFormat::Npy,
            "npz" => InputFormat::Npz,
            "svm" | "svmlight" | "libsvm" => InputFormat::Svmlight,
            "mtx" => InputFormat::MatrixMarket,
            "fvecs" => InputFormat::Fvecs,
            "ivecs" => InputFormat::Ivecs,
            "bvecs" => InputFormat::Bvecs,
            "txt" => InputFormat::Text,
            "jsonl" | "ndjson" => InputFormat::JsonLines,
            "csv" => InputFormat::Csv,
            "tsv" => InputFormat::Tsv,
            _ => return None,
        })
    }

    /// The format of `path` from its extension; an error naming the file and the known
    /// formats if the extension is missing or unknown.
    pub fn from_path(path: &Path) -> Result<Self> {
        path.extension()
            .and_then(|e| e.to_str())
            .and_then(Self::from_extension)
            .ok_or_else(|| {
                Error::Format {
                    path: path.to_path_buf(),
                    reason: format!(
                        "cannot tell the input format from the file extension; name it explicitly (one of: {})",
                        Self::names()
                    ),
                }
            })
    }

    /// True for the text formats ([`Text`](InputFormat::Text), [`JsonLines`](InputFormat::JsonLines),
    /// [`Csv`](InputFormat::Csv), [`Tsv`](InputFormat::Tsv)), false for vector formats.
    pub fn is_text(self) -> bool {
        matches!(
            self,
            InputFormat::Text | InputFormat::JsonLines | InputFormat::Csv | InputFormat::Tsv
        )
    }

    /// The canonical names, comma-separated, for messages and help texts.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

impl std::fmt::Display for InputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for InputFormat {
    type Err = Error;

    /// A canonical name, an alias (`libsvm`, `svm`, `matrix-market`, `txt`, `lines`,
    /// `json-lines`, `ndjson`) or an extension; any case, a leading dot allowed.
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().trim_start_matches('.').to_ascii_lowercase();
        match t.as_str() {
            "matrix-market" | "matrixmarket" => Ok(InputFormat::MatrixMarket),
            "text" | "lines" => Ok(InputFormat::Text),
            "json-lines" | "jsonlines" => Ok(InputFormat::JsonLines),
            _ => Self::from_extension(&t).ok_or_else(|| {
                Error::param(
                    "format",
                    format!("unknown input format `{s}` (one of: {})", Self::names()),
                )
            }),
        }
    }
}

/// A matrix of input vectors, dense or sparse.
#[derive(Clone, Debug)]
pub enum Vectors {
    /// A dense `N × D` matrix.
    Dense(Array2<f32>),
    /// A sparse CSR matrix, rows sorted.
    Sparse(Csr),
}

impl Vectors {
    /// Number of vectors.
    pub fn rows(&self) -> usize {
        match self {
            Vectors::Dense(a) => a.nrows(),
            Vectors::Sparse(m) => m.rows(),
        }
    }

    /// Dimension (number of columns).
    pub fn cols(&self) -> usize {
        match self {
            Vectors::Dense(a) => a.ncols(),
            Vectors::Sparse(m) => m.cols(),
        }
    }

    /// Signs every vector with `signer` ([`Signer::sign_dense`] or [`SignerExt::sign_csr`]).
    pub fn sign<S: Signer + ?Sized>(&self, signer: &S) -> Result<SignatureMatrix> {
        match self {
            Vectors::Dense(a) => signer.sign_dense(a),
            Vectors::Sparse(m) => signer.sign_csr(m.view()),
        }
    }
}

/// Options of [`read_vectors`].
#[derive(Clone, Debug, Default)]
pub struct VectorOptions {
    /// Index base of SVMlight files (ignored by other formats).
    pub base: IndexBase,
    /// Number of columns of SVMlight files; `None` takes the largest index + 1.
    pub dim: Option<usize>,
    /// What line-oriented readers (SVMlight, MatrixMarket entries) do with a bad line.
    pub on_bad: OnBadLine,
    /// Limits of the readers (the decompression limit of `.npz` archives).
    pub limits: Limits,
}

/// Vectors read by [`read_vectors`], with what the format carries besides.
#[derive(Debug)]
pub struct VectorInput {
    /// The vectors.
    pub vectors: Vectors,
    /// SVMlight labels, one per row.
    pub labels: Option<Vec<f64>>,
    /// SVMlight: the line number (1-based) of each row.
    pub lines: Option<Vec<usize>>,
    /// Lines skipped under [`OnBadLine::Skip`].
    pub bad: BadLines,
}

impl VectorInput {
    fn plain(vectors: Vectors) -> Self {
        VectorInput {
            vectors,
            labels: None,
            lines: None,
            bad: BadLines::default(),
        }
    }

    fn svmlight(s: Svmlight) -> Self {
        VectorInput {
            vectors: Vectors::Sparse(s.matrix),
            labels: Some(s.labels),
            lines: Some(s.lines),
            bad: s.bad,
        }
    }
}

fn svmlight_options(opts: &VectorOptions) -> SvmlightOptions {
    SvmlightOptions {
        base: opts.base,
        dim: opts.dim,
        on_bad: opts.on_bad,
    }
}

fn text_format(format: InputFormat) -> Error {
    Error::param(
        "format",
        format!("`{format}` is a text format: read it as documents, not vectors"),
    )
}

/// Reads vectors of any vector format from `path` (`-`: standard input, see the
/// [module docs](self)). A text format is an [`Error::InvalidParameter`]: documents are read
/// by [`documents`](super::documents()) and featurised by [`text`](crate::text).
pub fn read_vectors(path: &Path, format: InputFormat, opts: &VectorOptions) -> Result<VectorInput> {
    Ok(match format {
        InputFormat::Npy => VectorInput::plain(Vectors::Dense(read_npy_dense(path)?)),
        #[cfg(feature = "npz")]
        InputFormat::Npz => VectorInput::plain(read_npz(path, &opts.limits)?),
        #[cfg(not(feature = "npz"))]
        InputFormat::Npz => {
            return Err(Error::Unsupported(
                "reading .npz archives needs the zip crate: build simlsh with its `npz` feature"
                    .into(),
            ));
        }
        InputFormat::Fvecs => VectorInput::plain(Vectors::Dense(read_vecs(path, VecsKind::F32)?)),
        InputFormat::Ivecs => VectorInput::plain(Vectors::Dense(read_vecs(path, VecsKind::I32)?)),
        InputFormat::Bvecs => VectorInput::plain(Vectors::Dense(read_vecs(path, VecsKind::U8)?)),
        InputFormat::MatrixMarket => {
            let m = read_mtx(path, opts.on_bad)?;
            VectorInput {
                bad: m.bad,
                ..VectorInput::plain(m.matrix)
            }
        }
        InputFormat::Svmlight => {
            VectorInput::svmlight(read_svmlight(path, &svmlight_options(opts))?)
        }
        InputFormat::Text | InputFormat::JsonLines | InputFormat::Csv | InputFormat::Tsv => {
            return Err(text_format(format));
        }
    })
}

/// Reads vectors of a streamable format from any reader, as it comes (`name` is the name
/// errors give, e.g. `<stdin>`). `.npz` cannot be streamed: an [`Error::Format`] says so.
pub fn read_vectors_from(
    reader: impl Read,
    name: &Path,
    format: InputFormat,
    opts: &VectorOptions,
) -> Result<VectorInput> {
    Ok(match format {
        InputFormat::Npy => VectorInput::plain(Vectors::Dense(read_npy_dense_from(reader, name)?)),
        InputFormat::Npz => {
            return Err(format_error(
                name,
                "an .npz (zip) archive cannot be read from standard input or a pipe: its \
                 directory is at its end; save it to a file first",
            ));
        }
        InputFormat::Fvecs => {
            VectorInput::plain(Vectors::Dense(read_vecs_from(reader, name, VecsKind::F32)?))
        }
        InputFormat::Ivecs => {
            VectorInput::plain(Vectors::Dense(read_vecs_from(reader, name, VecsKind::I32)?))
        }
        InputFormat::Bvecs => {
            VectorInput::plain(Vectors::Dense(read_vecs_from(reader, name, VecsKind::U8)?))
        }
        InputFormat::MatrixMarket => {
            let m = read_mtx_from(reader, name, opts.on_bad)?;
            VectorInput {
                bad: m.bad,
                ..VectorInput::plain(m.matrix)
            }
        }
        InputFormat::Svmlight => {
            VectorInput::svmlight(read_svmlight_from(reader, name, &svmlight_options(opts))?)
        }
        InputFormat::Text | InputFormat::JsonLines | InputFormat::Csv | InputFormat::Tsv => {
            return Err(text_format(format));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_extensions_map() {
        for f in InputFormat::ALL {
            assert_eq!(f.name().parse::<InputFormat>().unwrap(), f);
            assert_eq!(f.to_string().parse::<InputFormat>().unwrap(), f);
        }
        assert_eq!(
            InputFormat::from_path(Path::new("a/b.LIBSVM")).unwrap(),
            InputFormat::Svmlight
        );
        assert_eq!("TSV".parse::<InputFormat>().unwrap(), InputFormat::Tsv);
        assert_eq!(
            ".ndjson".parse::<InputFormat>().unwrap(),
            InputFormat::JsonLines
        );
        assert!(InputFormat::from_path(Path::new("data.bin")).is_err());
        assert!(InputFormat::from_path(Path::new("noext")).is_err());
        assert!("parquet".parse::<InputFormat>().is_err());
        assert_eq!(InputFormat::ALL.iter().filter(|f| f.is_text()).count(), 4);
    }
}
