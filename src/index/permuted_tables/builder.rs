//! [`PermutedTablesBuilder`]: the design of the tables, by the planner or given.

use super::design::{self, plan};
use super::{DEFAULT_RADIUS, PermutedTables, Plan};
use crate::error::{Error, Result};
use crate::signature::SignatureMatrix;

/// How the builder picks the design.
#[derive(Clone, Debug, Default, PartialEq)]
enum Design {
    /// The planner, no memory limit.
    #[default]
    Auto,
    /// Explicit levels (blocks per level).
    Levels(Vec<usize>),
    /// The planner with at most this many tables.
    MaxTables(usize),
    /// The planner within this many bytes.
    Budget(u64),
}

/// Builder of [`PermutedTables`]: `PermutedTables::builder().bits(64).radius(3).blocks(4)`.
///
/// The design is, by priority of the last setter called: explicit [`blocks`](Self::blocks)
/// or [`levels`](Self::levels), a [`plan`](Self::plan), at most [`tables`](Self::tables)
/// tables, a [`memory_budget`](Self::memory_budget), or by default the [`plan`](self::plan())
/// of least query cost for the data size (`2^20` codes for an empty index).
#[derive(Clone, Debug, Default)]
pub struct PermutedTablesBuilder {
    bits: Option<usize>,
    radius: Option<u32>,
    design: Design,
}

impl PermutedTablesBuilder {
    /// Signature width `f` (required for [`empty`](Self::empty); checked against the
    /// signatures in [`build`](Self::build)).
    pub fn bits(mut self, bits: usize) -> Self {
        self.bits = Some(bits);
        self
    }

    /// Radius `k` the tables answer exactly (default [`DEFAULT_RADIUS`], 3). Larger radii are
    /// answered by a scan.
    pub fn radius(mut self, radius: u32) -> Self {
        self.radius = Some(radius);
        self
    }

    /// One level of `r` blocks: `C(r, k)` tables, each keyed on `r - k` blocks (`r > k`).
    pub fn blocks(mut self, r: usize) -> Self {
        self.design = Design::Levels(vec![r]);
        self
    }

    /// Several levels (see [`Plan::levels`]), e.g. `[4, 4]` for Manku's 16-table design.
    pub fn levels(mut self, levels: &[usize]) -> Self {
        self.design = Design::Levels(levels.to_vec());
        self
    }

    /// The planner's best design with at most `max_tables` tables for the data size.
    pub fn tables(mut self, max_tables: usize) -> Self {
        self.design = Design::MaxTables(max_tables);
        self
    }

    /// The planner's best design whose tables fit in `bytes` for the data size.
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.design = Design::Budget(bytes);
        self
    }

    /// The design of `plan` (also sets the width and radius).
    pub fn plan(mut self, plan: &Plan) -> Self {
        self.bits = Some(plan.bits);
        self.radius = Some(plan.radius);
        self.design = Design::Levels(plan.levels.clone());
        self
    }

    fn levels_for(&self, bits: usize, radius: u32, n: u64) -> Result<Vec<usize>> {
        let levels = match &self.design {
            Design::Levels(l) => l.clone(),
            Design::Auto => plan(bits, radius, n, u64::MAX)?.levels,
            Design::MaxTables(t) => {
                design::plan_max_tables(bits, radius, n, *t)
                    .ok_or_else(|| Error::param("tables", "must be at least 1"))?
                    .levels
            }
            Design::Budget(b) => plan(bits, radius, n, *b)?.levels,
        };
        design::check_design(bits, radius, &levels)?;
        Ok(levels)
    }

    /// An index of the rows of `sigs`, with ids `0..N`; tables are built in parallel.
    ///
    /// # Errors
    /// [`Error::BitsMismatch`] if [`bits`](Self::bits) was set to another width;
    /// [`Error::InvalidParameter`] for a design that does not hold the radius (`r <= k`), has
    /// more than [`MAX_TABLES`](super::MAX_TABLES) tables, or does not fit the budget, or for more than `2^32`
    /// rows.
    pub fn build<S: AsRef<[u64]>>(&self, sigs: &SignatureMatrix<S>) -> Result<PermutedTables> {
        let bits = sigs.bits();
        if let Some(b) = self.bits.filter(|&b| b != bits) {
            return Err(Error::BitsMismatch {
                expected: b,
                got: bits,
            });
        }
        let n = u32::try_from(sigs.len())
            .map_err(|_| Error::param("signatures", "more than 2^32 rows"))?;
        let radius = self.radius.unwrap_or(DEFAULT_RADIUS);
        let levels = self.levels_for(bits, radius, u64::from(n).max(1))?;
        let bytes = Plan::for_levels(bits, radius, u64::from(n), &levels)?.bytes;
        crate::memory::check(
            &format!("permuted tables of {n} {bits}-bit codes ({levels:?} blocks)"),
            bytes,
        )?;
        let ids: Vec<u32> = (0..n).collect();
        Ok(PermutedTables::from_rows(
            bits,
            radius,
            levels,
            sigs.as_slice(),
            &ids,
        ))
    }

    /// An empty index (the automatic design is planned for `2^20` codes).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if [`bits`](Self::bits) is unset or 0, or as
    /// [`build`](Self::build) for the design.
    pub fn empty(&self) -> Result<PermutedTables> {
        let bits = self
            .bits
            .filter(|&b| b > 0)
            .ok_or_else(|| Error::param("bits", "an empty index needs a width of at least 1"))?;
        let radius = self.radius.unwrap_or(DEFAULT_RADIUS);
        let levels = self.levels_for(bits, radius, 1 << 20)?;
        Ok(PermutedTables::from_rows(bits, radius, levels, &[], &[]))
    }
}
