//! How rows are named in the outputs (TSV and Parquet tables): record numbers or the values
//! of an id field.

/// How rows are named in the outputs: 0-based record numbers, or the values of an id field.
pub enum Names {
    /// Row `i` is record `records[i]` (0-based, counting every record of the input).
    Records(Vec<usize>),
    /// Row `i` is `ids[i]`, the value of the field named `field`.
    Ids { field: String, ids: Vec<String> },
}

impl Names {
    /// Number of rows named.
    pub fn len(&self) -> usize {
        match self {
            Names::Records(r) => r.len(),
            Names::Ids { ids, .. } => ids.len(),
        }
    }

    /// Bytes held (the list, and each id's text).
    pub fn bytes(&self) -> u64 {
        match self {
            Names::Records(r) => simlsh::memory::bytes_of::<usize>(r.capacity()),
            Names::Ids { ids, .. } => {
                simlsh::memory::bytes_of::<String>(ids.capacity())
                    + ids.iter().map(|s| s.capacity() as u64).sum::<u64>()
            }
        }
    }

    /// Rows `0..n`.
    pub fn rows(n: usize) -> Names {
        Names::Records((0..n).collect())
    }

    /// The column header naming a row: `record`, or the id field's name.
    pub fn header(&self) -> &str {
        match self {
            Names::Records(_) => "record",
            Names::Ids { field, .. } => field,
        }
    }

    /// The name of row `i`.
    pub fn name(&self, i: usize) -> Name<'_> {
        match self {
            Names::Records(r) => Name::Record(r[i]),
            Names::Ids { ids, .. } => Name::Id(&ids[i]),
        }
    }
}

/// One row's name, as written in the outputs.
pub enum Name<'a> {
    Record(usize),
    Id(&'a str),
}

impl std::fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Name::Record(r) => write!(f, "{r}"),
            Name::Id(s) => f.write_str(s),
        }
    }
}
