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
//! `simlsh.cosine` of the file's metadata says `exact` or `estimated`); clusters as `id`,
//! `cluster`; k-NN graphs as `id`, `neighbor`, `distance`, `cosine`. Snappy-compressed, as
//! Spark writes.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail, ensure};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
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

use crate::input::Names;

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
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .with_context(|| format!("{}: not a readable Parquet file", path.display()))?;
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
    let reader = builder
        .with_projection(mask)
        .with_batch_size(8192)
        .build()
        .with_context(|| format!("reading {}", path.display()))?;
    let mut acc = Accumulator::new(path, bits);
    let mut ids: Option<Vec<String>> = id_col.map(|_| Vec::new());
    for batch in reader {
        let batch = batch.with_context(|| format!("reading {}", path.display()))?;
        let column = |name: &str| -> ArrayRef {
            batch
                .column_by_name(name)
                .expect("projected column")
                .clone()
        };
        if names.len() == 2 {
            acc.sparse_lists(&column(names[0]), &column(names[1]))?;
            acc.rows += batch.num_rows();
        } else {
            acc.push(&column(names[0]))?;
        }
        if let (Some(ids), Some(name)) = (&mut ids, id_field) {
            push_ids(path, &column(name), ids)?;
        }
    }
    let table = acc.finish()?;
    Ok(ParquetInput { table, ids })
}

fn push_ids(path: &Path, col: &ArrayRef, out: &mut Vec<String>) -> Result<()> {
    for i in 0..col.len() {
        ensure!(
            !col.is_null(i),
            "{}: row {}: the id is null",
            path.display(),
            out.len()
        );
        out.push(scalar_string(col, i).with_context(|| {
            format!(
                "{}: id column of type {}: expected strings or integers",
                path.display(),
                col.data_type()
            )
        })?);
    }
    Ok(())
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
            "{}: row {}: the value is null",
            self.path.display(),
            self.rows + i
        )
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
                let (offsets, child) = list_parts(col);
                for i in 0..col.len() {
                    if col.is_null(i) {
                        return Err(self.null(i));
                    }
                }
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
                            self.dense.extend((w[0]..w[1]).map(|k| float(&child, k)));
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
                self.sparse_lists(&idx.clone(), &val.clone())?;
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
    /// values are a dense row).
    fn sparse_lists(&mut self, idx: &ArrayRef, val: &ArrayRef) -> Result<()> {
        self.set_kind("sparse")?;
        ensure!(
            idx.len() == val.len(),
            "{}: indices and values of different lengths",
            self.path.display()
        );
        let (io, ic) = list_parts(idx);
        let (vo, vc) = list_parts(val);
        let mut row: Vec<(u32, f32)> = Vec::new();
        for i in 0..idx.len() {
            if val.is_null(i) {
                return Err(self.null(i));
            }
            row.clear();
            let values = vo[i]..vo[i + 1];
            if idx.is_null(i) {
                row.extend(values.enumerate().map(|(k, p)| (k as u32, float(&vc, p))));
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
                        format!("{}: row {}: index", self.path.display(), self.rows + i)
                    })?;
                    row.push((c, float(&vc, p)));
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

/// The value offsets and the child array of a list column of any kind.
fn list_parts(col: &ArrayRef) -> (Vec<usize>, ArrayRef) {
    match col.data_type() {
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
        _ => (vec![0; col.len() + 1], col.clone()),
    }
}

fn word(col: &ArrayRef, i: usize) -> u64 {
    match col.data_type() {
        DataType::Int64 => col.as_primitive::<Int64Type>().value(i) as u64,
        _ => col.as_primitive::<UInt64Type>().value(i),
    }
}

fn float(col: &ArrayRef, i: usize) -> f32 {
    match col.data_type() {
        DataType::Float32 => col.as_primitive::<Float32Type>().value(i),
        DataType::Float64 => col.as_primitive::<Float64Type>().value(i) as f32,
        _ => f32::NAN,
    }
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
            Shape::Pairs => ("a", "b"),
            Shape::Clusters => ("id", "cluster"),
            Shape::Neighbors => ("id", "neighbor"),
        };
        let mut fields = vec![
            Field::new(first, name_type.clone(), false),
            Field::new(second, name_type, false),
        ];
        if shape != Shape::Clusters {
            fields.push(Field::new("distance", DataType::Int32, false));
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

    /// Adds one row: rows `a` and `b` (by index), with a distance and a cosine (ignored for
    /// clusters).
    pub fn push(&mut self, a: u32, b: u32, distance: u32, cosine: f64) -> Result<()> {
        self.a.push(a);
        self.b.push(b);
        if self.shape != Shape::Clusters {
            self.distance.push(distance as i32);
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
        if self.shape != Shape::Clusters {
            cols.push(Arc::new(Int32Array::from(std::mem::take(
                &mut self.distance,
            ))));
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
