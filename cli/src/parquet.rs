//! Parquet in and out, so that tables written by Spark, pandas (pyarrow) and polars flow
//! through the command line unchanged.
//!
//! **Input** (`.parquet`, or `--format parquet`): the column named by `--field` decides what a
//! row is, by its type:
//!
//! | column type | rows are |
//! |---|---|
//! | string (any Arrow string type) | documents, tokenised with the text options |
//! | list / fixed-size list of float or double | dense vectors (all of one length) |
//! | struct with `indices` and `values` lists (a Spark ML vector: sparse rows; dense rows as `values` alone) | sparse vectors of dimension the struct's `size`, or the largest index + 1 |
//! | `--field indices,values`: two list columns | sparse vectors |
//! | int64 / uint64 | signature codes, one word per row: 64 bits, or `--bits` |
//! | list of int64 / uint64 | signature codes, words in order (Spark writes `array<bigint>`) |
//!
//! Spark has no unsigned 64-bit type: a code word written as `bigint` is the word's bit
//! pattern, read back as the same bits. `--id-field` names rows by another column's values.
//!
//! **Output** (an output path ending in `.parquet`): pairs as columns `a`, `b` (int64 record
//! numbers, or strings with `--id-field`), `distance` (int32) and `cosine` (double; the key
//! `simlsh.cosine` of the file's metadata says `exact` or `estimated`; `dedup --exact` has no
//! `distance`); clusters as `id`,
//! `cluster`; k-NN graphs as `id`, `neighbor`, `distance`, `cosine`. Snappy-compressed, as
//! Spark writes.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail, ensure};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use ndarray::Array2;
use parquet::arrow::ArrowWriter;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use simlsh::SignatureMatrix;
use simlsh::io::Csr;

use crate::names::Names;

/// True when `path` names a Parquet file by its extension.
pub fn is_parquet(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet") || e.eq_ignore_ascii_case("parq"))
}

/// What a Parquet input holds.
pub enum Table {
    /// Documents' texts.
    Texts(Vec<String>),
    /// Dense vectors.
    Dense(Array2<f32>),
    /// Sparse vectors.
    Sparse(Csr),
    /// Signature codes.
    Codes(SignatureMatrix),
}

/// A Parquet input: its rows and, with an id column, their ids.
pub struct ParquetInput {
    pub table: Table,
    pub ids: Option<Vec<String>>,
}

/// Reads the `field` column (or `indices,values`) of `path`, and the `id_field` column.
/// `bits` is the width of code columns (default 64 per word).
pub fn read(
    path: &Path,
    field: &str,
    id_field: Option<&str>,
    bits: Option<usize>,
) -> Result<ParquetInput> {
    let file = File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let unreadable =
        |why: String| anyhow::anyhow!("{}: not a readable Parquet file: {why}", path.display());
    let builder = guarded(|| ParquetRecordBatchReaderBuilder::try_new(file))
        .map_err(unreadable)?
        .map_err(|e| unreadable(e.to_string()))?;
    let schema = builder.schema().clone();
    let names: Vec<&str> = field.split(',').map(str::trim).collect();
    let find = |name: &str| -> Result<usize> {
        schema.index_of(name).map_err(|_| {
            anyhow::anyhow!(
                "{}: no column `{name}` (columns: {}); name the column with --field",
                path.display(),
                schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    };
    let cols: Vec<usize> = names.iter().map(|n| find(n)).collect::<Result<_>>()?;
    ensure!(
        cols.len() <= 2,
        "--field: one column, or two (indices,values) for sparse vectors"
    );
    let id_col = id_field.map(find).transpose()?;
    let mut roots: Vec<usize> = cols.clone();
    roots.extend(id_col);
    roots.sort_unstable();
    roots.dedup();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots.iter().copied());
    let mut reader = guarded(|| builder.with_projection(mask).with_batch_size(8192).build())
        .map_err(unreadable)?
        .with_context(|| format!("reading {}", path.display()))?;
    let mut acc = Accumulator::new(path, bits);
    let mut ids: Option<Ids> = id_col.map(|_| Ids::default());
    // Decoding pages happens in `next`: guarded too.
    while let Some(batch) = guarded(|| reader.next()).map_err(unreadable)? {
        let batch = batch.with_context(|| format!("reading {}", path.display()))?;
        let column = |name: &str| -> Result<ArrayRef> {
            decoded(
                path,
                name,
                batch
                    .column_by_name(name)
                    .expect("projected column")
                    .clone(),
            )
        };
        if names.len() == 2 {
            acc.sparse_lists(&column(names[0])?, &column(names[1])?, (names[0], names[1]))?;
            acc.rows += batch.num_rows();
        } else {
            acc.column = names[0].to_string();
            acc.push(&column(names[0])?)?;
        }
        if let (Some(ids), Some(name)) = (&mut ids, id_field) {
            ids.push(path, name, &column(name)?)?;
        }
    }
    let table = acc.finish()?;
    Ok(ParquetInput {
        table,
        ids: ids.map(|i| i.ids),
    })
}

/// Runs `f`, a call into the parquet crate, turning a panic into an error. The crate panics
/// on some damaged files (one flipped bit of the footer's Thrift metadata, a page whose
/// declared sizes disagree) instead of returning an error, and there is no way to validate a
/// file beforehand other than decoding it with the crate itself: so its calls, and only
/// those, run under `catch_unwind`, with the panic's message kept for the error and not
/// printed (a damaged file is bad input, reported as such, not a bug of this program).
fn guarded<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    use std::cell::Cell;
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::Once;
    thread_local! {
        static QUIET: Cell<bool> = const { Cell::new(false) };
    }
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    // AssertUnwindSafe: on a panic the reader and its buffers are dropped with the error,
    // never used again.
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    r.map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the decoder failed".into())
    })
}

/// A column as the readers below take it: a dictionary-encoded column (pandas writes
/// categoricals so) decoded to its plain values.
fn decoded(path: &Path, name: &str, col: ArrayRef) -> Result<ArrayRef> {
    match col.data_type() {
        DataType::Dictionary(_, _) => {
            let d = col.as_any_dictionary();
            arrow_select::take::take(d.values().as_ref(), d.keys(), None).with_context(|| {
                format!(
                    "{}: column `{name}`: decoding its dictionary",
                    path.display()
                )
            })
        }
        _ => Ok(col),
    }
}

/// The ids of `--id-field`, refused when null or repeated (as CSV and JSON Lines ids are).
#[derive(Default)]
struct Ids {
    ids: Vec<String>,
    seen: std::collections::HashMap<String, usize>,
}

impl Ids {
    fn push(&mut self, path: &Path, name: &str, col: &ArrayRef) -> Result<()> {
        for i in 0..col.len() {
            let row = self.ids.len();
            ensure!(
                !col.is_null(i),
                "{}: row {row}: the id (column `{name}`) is null",
                path.display(),
            );
            let id = scalar_string(col, i).with_context(|| {
                format!(
                    "{}: id column `{name}` of type {}: expected strings or integers",
                    path.display(),
                    col.data_type()
                )
            })?;
            if let Some(first) = self.seen.insert(id.clone(), row) {
                bail!(
                    "{}: row {row}: duplicate id `{id}` in column `{name}` (first at row {first})",
                    path.display()
                );
            }
            self.ids.push(id);
        }
        Ok(())
    }
}

/// Row `i` of a string or integer column as text.
fn scalar_string(col: &ArrayRef, i: usize) -> Option<String> {
    Some(match col.data_type() {
        DataType::Utf8 => col.as_string::<i32>().value(i).to_string(),
        DataType::LargeUtf8 => col.as_string::<i64>().value(i).to_string(),
        DataType::Utf8View => col.as_string_view().value(i).to_string(),
        DataType::Int64 => col.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::Int32 => col.as_primitive::<Int32Type>().value(i).to_string(),
        DataType::UInt64 => col.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::UInt32 => col.as_primitive::<UInt32Type>().value(i).to_string(),
        _ => return None,
    })
}

/// Rows gathered batch by batch, of the kind the first batch shows.
struct Accumulator<'a> {
    path: &'a Path,
    bits: Option<usize>,
    rows: usize,
    /// The column read (`--field`), for errors.
    column: String,
    texts: Vec<String>,
    dense: Vec<f32>,
    dim: Option<usize>,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
    declared_dim: Option<usize>,
    words: Vec<u64>,
    words_per_row: Option<usize>,
    kind: Option<&'static str>,
}

impl<'a> Accumulator<'a> {
    fn new(path: &'a Path, bits: Option<usize>) -> Self {
        Accumulator {
            path,
            bits,
            rows: 0,
            column: String::new(),
            texts: Vec::new(),
            dense: Vec::new(),
            dim: None,
            indptr: vec![0],
            indices: Vec::new(),
            values: Vec::new(),
            declared_dim: None,
            words: Vec::new(),
            words_per_row: None,
            kind: None,
        }
    }

    fn set_kind(&mut self, kind: &'static str) -> Result<()> {
        match self.kind {
            Some(k) if k != kind => bail!("{}: rows of two kinds", self.path.display()),
            _ => {
                self.kind = Some(kind);
                Ok(())
            }
        }
    }

    fn null(&self, i: usize) -> anyhow::Error {
        anyhow::anyhow!(
            "{}: row {}: the value (column `{}`) is null",
            self.path.display(),
            self.rows + i,
            self.column
        )
    }

    /// An error unless the list elements `offsets[i]..offsets[i + 1]` of every row are
    /// non-null: a null inside a list (a vector element, a code word, an index) has no value.
    fn no_null_elements(&self, column: &str, offsets: &[usize], child: &ArrayRef) -> Result<()> {
        if child.null_count() == 0 {
            return Ok(());
        }
        for (i, w) in offsets.windows(2).enumerate() {
            if let Some(k) = (w[0]..w[1]).find(|&k| child.is_null(k)) {
                bail!(
                    "{}: row {}: element {} of the list in column `{column}` is null",
                    self.path.display(),
                    self.rows + i,
                    k - w[0]
                );
            }
        }
        Ok(())
    }

    /// The value offsets and child of list column `column`, or an error naming it.
    fn list(&self, column: &str, col: &ArrayRef) -> Result<(Vec<usize>, ArrayRef)> {
        list_parts(col).with_context(|| {
            format!(
                "{}: column `{column}` of type {}: expected a list",
                self.path.display(),
                col.data_type()
            )
        })
    }

    fn push(&mut self, col: &ArrayRef) -> Result<()> {
        match col.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                self.set_kind("texts")?;
                for i in 0..col.len() {
                    if col.is_null(i) {
                        return Err(self.null(i));
                    }
                    self.texts
                        .push(scalar_string(col, i).expect("a string column"));
                }
            }
            DataType::Int64 | DataType::UInt64 => {
                self.set_kind("codes")?;
                self.code_words(col, 1)?;
                for i in 0..col.len() {
                    if col.is_null(i) {
                        return Err(self.null(i));
                    }
                    self.words.push(word(col, i));
                }
            }
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) => {
                let column = self.column.clone();
                let (offsets, child) = self.list(&column, col)?;
                for i in 0..col.len() {
                    if col.is_null(i) {
                        return Err(self.null(i));
                    }
                }
                self.no_null_elements(&column, &offsets, &child)?;
                match child.data_type() {
                    DataType::Int64 | DataType::UInt64 => {
                        self.set_kind("codes")?;
                        for (i, w) in offsets.windows(2).enumerate() {
                            self.code_words(col, w[1] - w[0]).with_context(|| {
                                format!("{}: row {}", self.path.display(), self.rows + i)
                            })?;
                            self.words.extend((w[0]..w[1]).map(|k| word(&child, k)));
                        }
                    }
                    DataType::Float32 | DataType::Float64 => {
                        self.set_kind("dense")?;
                        for (i, w) in offsets.windows(2).enumerate() {
                            let d = w[1] - w[0];
                            match self.dim {
                                None => self.dim = Some(d),
                                Some(dim) if dim != d => bail!(
                                    "{}: row {} has {d} values, the rows before {dim}",
                                    self.path.display(),
                                    self.rows + i
                                ),
                                _ => {}
                            }
                            for k in w[0]..w[1] {
                                let v = float(&child, k).map_err(|why| {
                                    anyhow::anyhow!(
                                        "{}: row {}, element {}: {why}",
                                        self.path.display(),
                                        self.rows + i,
                                        k - w[0]
                                    )
                                })?;
                                self.dense.push(v);
                            }
                        }
                    }
                    t => bail!(
                        "{}: a list of {t}: expected float or double (vectors) or int64 (codes)",
                        self.path.display()
                    ),
                }
            }
            DataType::Struct(_) => {
                let s = col.as_struct();
                let (Some(idx), Some(val)) =
                    (s.column_by_name("indices"), s.column_by_name("values"))
                else {
                    bail!(
                        "{}: a struct column without `indices` and `values` (a Spark ML vector has both)",
                        self.path.display()
                    );
                };
                if let Some(size) = s.column_by_name("size") {
                    for i in 0..size.len() {
                        if !size.is_null(i) {
                            let d = scalar_string(size, i)
                                .and_then(|v| v.parse::<usize>().ok())
                                .unwrap_or(0);
                            self.declared_dim = Some(self.declared_dim.unwrap_or(0).max(d));
                        }
                    }
                }
                // Spark ML: a dense vector has null indices and all its values.
                let names = (
                    format!("{}.indices", self.column),
                    format!("{}.values", self.column),
                );
                self.sparse_lists(&idx.clone(), &val.clone(), (&names.0, &names.1))?;
            }
            t => bail!(
                "{}: a column of type {t}: expected strings (documents), lists of floats (vectors), a Spark ML vector struct, or int64 (codes)",
                self.path.display()
            ),
        }
        self.rows += col.len();
        Ok(())
    }

    fn code_words(&mut self, col: &ArrayRef, n: usize) -> Result<()> {
        match self.words_per_row {
            None => {
                ensure!(n > 0, "{}: a code of 0 words", self.path.display());
                self.words_per_row = Some(n);
            }
            Some(w) => ensure!(
                w == n,
                "{}: codes of {n} and {w} words ({})",
                self.path.display(),
                col.data_type()
            ),
        }
        Ok(())
    }

    /// Sparse rows from a list of indices and a list of values (a null index list: the
    /// values are a dense row); `names` are the two columns', for errors.
    fn sparse_lists(&mut self, idx: &ArrayRef, val: &ArrayRef, names: (&str, &str)) -> Result<()> {
        self.set_kind("sparse")?;
        ensure!(
            idx.len() == val.len(),
            "{}: indices and values of different lengths",
            self.path.display()
        );
        let (io, ic) = self.list(names.0, idx)?;
        let (vo, vc) = self.list(names.1, val)?;
        self.no_null_elements(names.0, &io, &ic)?;
        self.no_null_elements(names.1, &vo, &vc)?;
        let mut row: Vec<(u32, f32)> = Vec::new();
        for i in 0..idx.len() {
            if val.is_null(i) {
                self.column = names.1.to_string();
                return Err(self.null(i));
            }
            row.clear();
            let values = vo[i]..vo[i + 1];
            let value = |p: usize| {
                float(&vc, p).map_err(|why| {
                    anyhow::anyhow!(
                        "{}: row {}, column `{}`, element {}: {why}",
                        self.path.display(),
                        self.rows + i,
                        names.1,
                        p - vo[i]
                    )
                })
            };
            if idx.is_null(i) {
                for (k, p) in values.enumerate() {
                    row.push((k as u32, value(p)?));
                }
            } else {
                ensure!(
                    io[i + 1] - io[i] == values.len(),
                    "{}: row {}: {} indices and {} values",
                    self.path.display(),
                    self.rows + i,
                    io[i + 1] - io[i],
                    values.len()
                );
                for (k, p) in (io[i]..io[i + 1]).zip(values) {
                    let c = index(&ic, k).with_context(|| {
                        format!(
                            "{}: row {}: index (column `{}`)",
                            self.path.display(),
                            self.rows + i,
                            names.0
                        )
                    })?;
                    row.push((c, value(p)?));
                }
            }
            row.sort_unstable_by_key(|e| e.0);
            for w in row.windows(2) {
                ensure!(
                    w[0].0 != w[1].0,
                    "{}: row {}: index {} appears twice",
                    self.path.display(),
                    self.rows + i,
                    w[0].0
                );
            }
            self.indices.extend(row.iter().map(|e| e.0));
            self.values.extend(row.iter().map(|e| e.1));
            self.indptr.push(self.indices.len());
        }
        Ok(())
    }

    fn finish(self) -> Result<Table> {
        let path = self.path;
        Ok(match self.kind {
            None => bail!("{}: no rows", path.display()),
            Some("texts") => Table::Texts(self.texts),
            Some("dense") => {
                let d = self.dim.unwrap_or(0);
                let n = self.dense.len().checked_div(d).unwrap_or(self.rows);
                Table::Dense(Array2::from_shape_vec((n, d), self.dense)?)
            }
            Some("sparse") => {
                let max = self
                    .indices
                    .iter()
                    .copied()
                    .max()
                    .map_or(0, |m| m as usize + 1);
                let dim = self.declared_dim.unwrap_or(0).max(max);
                let rows = self.indptr.len() - 1;
                Table::Sparse(
                    Csr::try_new((rows, dim), self.indptr, self.indices, self.values)
                        .map_err(|e| anyhow::anyhow!("{}: sparse rows: {}", path.display(), e.3))?,
                )
            }
            Some(_) => {
                let w = self.words_per_row.unwrap_or(1);
                let bits = self.bits.unwrap_or(64 * w);
                ensure!(
                    bits.div_ceil(64) == w,
                    "{}: codes of {w} words, but a {bits}-bit code has {}",
                    path.display(),
                    bits.div_ceil(64)
                );
                Table::Codes(
                    SignatureMatrix::from_parts(bits, self.words)
                        .with_context(|| format!("{}: codes", path.display()))?,
                )
            }
        })
    }
}

/// The value offsets and the child array of a list column of any kind; `None` for a column
/// that is not a list.
fn list_parts(col: &ArrayRef) -> Option<(Vec<usize>, ArrayRef)> {
    Some(match col.data_type() {
        DataType::List(_) => {
            let l = col.as_list::<i32>();
            (
                l.value_offsets().iter().map(|&o| o as usize).collect(),
                l.values().clone(),
            )
        }
        DataType::LargeList(_) => {
            let l = col.as_list::<i64>();
            (
                l.value_offsets().iter().map(|&o| o as usize).collect(),
                l.values().clone(),
            )
        }
        DataType::FixedSizeList(_, n) => {
            let l = col.as_fixed_size_list();
            let n = *n as usize;
            (
                (0..=l.len()).map(|i| (l.offset() + i) * n).collect(),
                l.values().clone(),
            )
        }
        _ => return None,
    })
}

fn word(col: &ArrayRef, i: usize) -> u64 {
    match col.data_type() {
        DataType::Int64 => col.as_primitive::<Int64Type>().value(i) as u64,
        _ => col.as_primitive::<UInt64Type>().value(i),
    }
}

/// Element `i` of a numeric column as `f32`: floats, and integers as NumPy reads them into
/// `float32` (rounded to nearest); a `float64` that `float32` does not hold, or another type,
/// is an error saying why.
fn float(col: &ArrayRef, i: usize) -> std::result::Result<f32, String> {
    let wide = |x: f64| simlsh::io::float::to_f32(x).map_err(|why| format!("value {x:e} {why}"));
    Ok(match col.data_type() {
        DataType::Float32 => col.as_primitive::<Float32Type>().value(i),
        DataType::Float64 => wide(col.as_primitive::<Float64Type>().value(i))?,
        DataType::Int8 => col.as_primitive::<Int8Type>().value(i).into(),
        DataType::Int16 => col.as_primitive::<Int16Type>().value(i).into(),
        DataType::Int32 => col.as_primitive::<Int32Type>().value(i) as f32,
        DataType::Int64 => col.as_primitive::<Int64Type>().value(i) as f32,
        DataType::UInt8 => col.as_primitive::<UInt8Type>().value(i).into(),
        DataType::UInt16 => col.as_primitive::<UInt16Type>().value(i).into(),
        DataType::UInt32 => col.as_primitive::<UInt32Type>().value(i) as f32,
        DataType::UInt64 => col.as_primitive::<UInt64Type>().value(i) as f32,
        t => return Err(format!("a value of type {t}: expected numbers")),
    })
}

fn index(col: &ArrayRef, i: usize) -> Result<u32> {
    let v: i128 = match col.data_type() {
        DataType::Int32 => col.as_primitive::<Int32Type>().value(i).into(),
        DataType::Int64 => col.as_primitive::<Int64Type>().value(i).into(),
        DataType::UInt32 => col.as_primitive::<UInt32Type>().value(i).into(),
        DataType::UInt64 => col.as_primitive::<UInt64Type>().value(i).into(),
        t => bail!("indices of type {t}: expected integers"),
    };
    u32::try_from(v).map_err(|_| anyhow::anyhow!("{v} is not an index below 2^32"))
}

/// Rows of a Parquet output, gathered as columns and written in row groups.
pub struct Writer<'a> {
    names: &'a Names,
    schema: Arc<Schema>,
    writer: ArrowWriter<Vec<u8>>,
    /// Columns of rows not yet written: name indices, then the other columns.
    a: Vec<u32>,
    b: Vec<u32>,
    distance: Vec<i32>,
    cosine: Vec<f64>,
    shape: Shape,
}

/// The columns of an output.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `a, b, distance, cosine`.
    Pairs,
    /// `id, cluster`.
    Clusters,
    /// `id, neighbor, distance, cosine`.
    Neighbors,
    /// `a, b, cosine`: pairs found without signatures (`dedup --exact`), so without a Hamming
    /// distance.
    CosinePairs,
}

impl Shape {
    /// Whether the rows have a Hamming distance.
    pub fn has_distance(self) -> bool {
        matches!(self, Shape::Pairs | Shape::Neighbors)
    }

    /// Whether the rows have a cosine.
    pub fn has_cosine(self) -> bool {
        self != Shape::Clusters
    }
}

const ROW_GROUP: usize = 1 << 20;

impl<'a> Writer<'a> {
    /// A writer of rows named by `names`; `exact` says whether cosines are exact (recorded in
    /// the file's metadata).
    pub fn new(names: &'a Names, shape: Shape, exact: bool) -> Result<Self> {
        let name_type = match names {
            Names::Records(_) => DataType::Int64,
            Names::Ids { .. } => DataType::Utf8,
        };
        let (first, second) = match shape {
            Shape::Pairs | Shape::CosinePairs => ("a", "b"),
            Shape::Clusters => ("id", "cluster"),
            Shape::Neighbors => ("id", "neighbor"),
        };
        let mut fields = vec![
            Field::new(first, name_type.clone(), false),
            Field::new(second, name_type, false),
        ];
        if shape.has_distance() {
            fields.push(Field::new("distance", DataType::Int32, false));
        }
        if shape.has_cosine() {
            fields.push(Field::new("cosine", DataType::Float64, false));
        }
        let mut meta = std::collections::HashMap::new();
        meta.insert(
            "simlsh.cosine".to_string(),
            if exact { "exact" } else { "estimated" }.to_string(),
        );
        meta.insert("simlsh.rows".to_string(), names.header().to_string());
        let schema = Arc::new(Schema::new_with_metadata(fields, meta));
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        Ok(Writer {
            names,
            writer: ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props))?,
            schema,
            a: Vec::new(),
            b: Vec::new(),
            distance: Vec::new(),
            cosine: Vec::new(),
            shape,
        })
    }

    /// Adds one row: rows `a` and `b` (by index), with a distance and a cosine (each ignored
    /// when the shape has no such column).
    pub fn push(&mut self, a: u32, b: u32, distance: u32, cosine: f64) -> Result<()> {
        self.a.push(a);
        self.b.push(b);
        if self.shape.has_distance() {
            self.distance.push(distance as i32);
        }
        if self.shape.has_cosine() {
            self.cosine.push(cosine);
        }
        if self.a.len() >= ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    fn names_column(&self, rows: &[u32]) -> ArrayRef {
        match self.names {
            Names::Records(r) => Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|&i| r[i as usize] as i64),
            )),
            Names::Ids { ids, .. } => Arc::new(StringArray::from_iter_values(
                rows.iter().map(|&i| ids[i as usize].as_str()),
            )),
        }
    }

    fn flush(&mut self) -> Result<()> {
        if self.a.is_empty() {
            return Ok(());
        }
        let mut cols = vec![self.names_column(&self.a), self.names_column(&self.b)];
        if self.shape.has_distance() {
            cols.push(Arc::new(Int32Array::from(std::mem::take(
                &mut self.distance,
            ))));
        }
        if self.shape.has_cosine() {
            cols.push(Arc::new(Float64Array::from(std::mem::take(
                &mut self.cosine,
            ))));
        }
        self.a.clear();
        self.b.clear();
        let batch = RecordBatch::try_new(self.schema.clone(), cols)?;
        self.writer.write(&batch)?;
        Ok(())
    }

    /// The Parquet file's bytes.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        self.flush()?;
        Ok(self.writer.into_inner()?)
    }
}
