//! Output tables of pairs, clusters and neighbours: TSV with a header, or Parquet when the
//! output path ends in `.parquet` (see [`crate::parquet`] for the columns).

use std::io::Write;
use std::path::Path;

use crate::names::Names;
use crate::parquet::{Shape, Writer, is_parquet};

/// Rows of one output table as they are produced.
pub enum Rows<'a, 'w> {
    /// Tab-separated lines.
    Tsv {
        w: &'w mut dyn Write,
        names: &'a Names,
        shape: Shape,
    },
    /// A Parquet file, written at [`finish`](Rows::finish).
    Parquet {
        w: &'w mut dyn Write,
        table: Box<Writer<'a>>,
    },
}

fn other(e: anyhow::Error) -> std::io::Error {
    std::io::Error::other(format!("{e:#}"))
}

impl<'a, 'w> Rows<'a, 'w> {
    /// A table written to `w`, Parquet if `path` ends in `.parquet`; `exact` says whether the
    /// cosine column holds exact cosines (the TSV column is then `cosine`, else
    /// `estimated_cosine`).
    pub fn new(
        path: &Path,
        w: &'w mut dyn Write,
        names: &'a Names,
        shape: Shape,
        exact: bool,
    ) -> std::io::Result<Self> {
        if is_parquet(path) {
            let table = Box::new(Writer::new(names, shape, exact).map_err(other)?);
            return Ok(Rows::Parquet { w, table });
        }
        let h = names.header();
        let cos = if exact { "cosine" } else { "estimated_cosine" };
        match shape {
            Shape::Pairs => writeln!(w, "{h}_a\t{h}_b\tdistance\t{cos}")?,
            Shape::Clusters => writeln!(w, "{h}\tcluster")?,
            Shape::Neighbors => writeln!(w, "{h}\tneighbor\tdistance\t{cos}")?,
            Shape::CosinePairs => writeln!(w, "{h}_a\t{h}_b\t{cos}")?,
        }
        Ok(Rows::Tsv { w, names, shape })
    }

    /// One row: rows `a` and `b` by index, a Hamming distance and a cosine (each ignored when
    /// the shape has no such column).
    pub fn push(&mut self, a: u32, b: u32, distance: u32, cosine: f64) -> std::io::Result<()> {
        match self {
            Rows::Tsv { w, names, shape } => {
                let (x, y) = (names.name(a as usize), names.name(b as usize));
                match shape {
                    Shape::Clusters => writeln!(w, "{x}\t{y}"),
                    Shape::CosinePairs => writeln!(w, "{x}\t{y}\t{cosine:.6}"),
                    _ => writeln!(w, "{x}\t{y}\t{distance}\t{cosine:.6}"),
                }
            }
            Rows::Parquet { table, .. } => table.push(a, b, distance, cosine).map_err(other),
        }
    }

    /// Ends the table (writes the Parquet file).
    pub fn finish(self) -> std::io::Result<()> {
        match self {
            Rows::Tsv { .. } => Ok(()),
            Rows::Parquet { w, table } => w.write_all(&table.finish().map_err(other)?),
        }
    }
}
