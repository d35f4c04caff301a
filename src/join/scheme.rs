//! [`Scheme`]: where the candidate pairs of a join come from, as one value with a text form
//! shared by the command line, the Python package and Spark. The join planner
//! ([`JoinPlan::scheme`](crate::estimate::JoinPlan::scheme)) chooses one, the verified join
//! runs it in one process ([`VerifiedJoin::from_plan`](crate::verify::VerifiedJoin)), and a
//! distributed join runs the same scheme over partitions of `(group, key)` rows
//! ([`Scheme::keys`], [`partition`](super::partition)). A multi-probe banding keys each band
//! twice there ([`Banding::probe_key`]: the band's key with one half of its bits cleared), so
//! that keys one bit apart meet in one group ([`probe_partition`]).
//!
//! # The text form
//!
//! `KIND[:KEY=VALUE[,KEY=VALUE]...]`, the grammar of every spec:
//!
//! | kind | keys |
//! |---|---|
//! | `radius` | `r` the Hamming radius (inclusive) |
//! | `bands` | `f` signature bits, `b` bands, `w` bits per band, `d` Hamming filter (default `f`: none), `prefix` filter as `WORDS/RADIUS` (default none), `cap` largest run compared ([`DEFAULT_MAX_GROUP`]; `none`), `probes` multi-probe distance (default 0; [`BandingBuilder::probes`](super::BandingBuilder::probes)) |
//! | `tables` | `f` signature bits, `r` radius, `levels` blocks per level, `+`-separated (`6`, `4+4`; `scan` for one table with an empty key), `cap` largest run compared (default `none`) |
//!
//! [`Display`](fmt::Display) writes every key that differs from its default, so
//! `parse(scheme.to_string()) == scheme`.
//!
//! ```
//! use simlsh::join::Scheme;
//!
//! let s: Scheme = "bands:f=256,b=20,w=12,d=90".parse()?;
//! assert_eq!(s.groups()?, 20);
//! assert_eq!(s.to_string(), "bands:f=256,b=20,w=12,d=90");
//! let r: Scheme = "radius:r=3".parse()?;
//! // A radius has no keys of its own: for a distributed join it becomes permuted tables.
//! let t = r.keyed(64, 1_000_000)?;
//! assert_eq!(t.to_string(), "tables:f=64,r=3,levels=4");
//! # Ok::<(), simlsh::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use super::banded::{CappedSet, DEFAULT_MAX_GROUP};
use super::{
    Banding, CappedGroup, IdPair, TableKeys, band_partition, probe_partition, table_partition,
};
use crate::error::{Error, Result};
use crate::signature::words_for;
use crate::util::spec::{SpecText, write};

/// Where candidate pairs come from. See the [module documentation](crate::join).
#[derive(Clone, Debug)]
pub enum Scheme {
    /// Every pair within this Hamming radius, inclusive (the exact join; in one process,
    /// with permuted tables planned for the rows: [`self_join`](super::self_join)).
    Radius {
        /// The radius.
        radius: u32,
    },
    /// The pairs agreeing on some band ([`banded_join`](super::banded_join)).
    Bands(Banding),
    /// The pairs within the tables' radius, by permuted tables of an explicit design
    /// ([`TableKeys`]): the radius join of a distributed job.
    Tables(TableKeys),
}

impl PartialEq for Scheme {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Scheme::Radius { radius: a }, Scheme::Radius { radius: b }) => a == b,
            (Scheme::Bands(a), Scheme::Bands(b)) => a == b,
            (Scheme::Tables(a), Scheme::Tables(b)) => {
                (a.bits(), a.radius(), a.levels(), a.max_group())
                    == (b.bits(), b.radius(), b.levels(), b.max_group())
            }
            _ => false,
        }
    }
}

/// Which pairs a pass of [`partition`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Every pair, by the first group its signatures agree on among the groups whose run was
    /// not capped (capped runs listed in `capped` are skipped as if absent).
    First,
    /// The second pass of a distributed join whose first pass capped some runs: only the pairs
    /// whose first agreeing group is capped, by their first agreeing group that is not (so
    /// the two passes together report every pair once).
    Missed,
}

/// What [`partition`] found in one partition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionPairs {
    /// The candidate pairs, by id (`a < b`), group by group in increasing group order.
    pub pairs: Vec<IdPair>,
    /// The runs of this partition skipped for their size (first pass only).
    pub capped: Vec<CappedGroup>,
}

impl Scheme {
    /// The kind's name: `radius`, `bands` or `tables`.
    pub fn kind(&self) -> &'static str {
        match self {
            Scheme::Radius { .. } => "radius",
            Scheme::Bands(_) => "bands",
            Scheme::Tables(_) => "tables",
        }
    }

    /// The signature width the scheme is for (`None` for a radius, which fits any width).
    pub fn bits(&self) -> Option<usize> {
        match self {
            Scheme::Radius { .. } => None,
            Scheme::Bands(b) => Some(b.bits()),
            Scheme::Tables(t) => Some(t.bits()),
        }
    }

    /// The scheme of a distributed join over `rows` rows of `bits`-bit signatures: a radius
    /// becomes the permuted tables that the single-machine join plans for as many rows; bands
    /// and tables are kept (their width checked).
    ///
    /// # Errors
    /// [`Error::BitsMismatch`] when the scheme is for another width; the table design's.
    pub fn keyed(&self, bits: usize, rows: u64) -> Result<Scheme> {
        match self {
            Scheme::Radius { radius } => Ok(Scheme::Tables(
                TableKeys::builder()
                    .bits(bits)
                    .radius(*radius)
                    .rows(rows.max(2))
                    .build()?,
            )),
            other => {
                other.check_bits(bits)?;
                Ok(other.clone())
            }
        }
    }

    /// Checks that signatures of `bits` bits fit the scheme.
    ///
    /// # Errors
    /// [`Error::BitsMismatch`].
    pub fn check_bits(&self, bits: usize) -> Result<()> {
        match self.bits() {
            Some(f) if f != bits => Err(Error::BitsMismatch {
                expected: f,
                got: bits,
            }),
            _ => Ok(()),
        }
    }

    /// The number of groups (bands or tables) each row is keyed in: for a multi-probe banding,
    /// two per band (group `2·band + half`, keyed by [`Banding::probe_key`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a radius, which has no keys ([`keyed`](Self::keyed)).
    pub fn groups(&self) -> Result<usize> {
        match self {
            Scheme::Radius { .. } => Err(no_keys()),
            Scheme::Bands(b) if b.probes() > 0 => Ok(2 * b.bands()),
            Scheme::Bands(b) => Ok(b.bands()),
            Scheme::Tables(t) => Ok(t.tables()),
        }
    }

    /// The key of `sig` in group `g`.
    ///
    /// # Errors
    /// As [`groups`](Self::groups); [`Error::InvalidParameter`] when `g` is out of range.
    pub fn key(&self, g: usize, sig: &[u64]) -> Result<u64> {
        let groups = self.groups()?;
        if g >= groups {
            return Err(Error::param(
                "group",
                format!("group {g} of a scheme with {groups} groups"),
            ));
        }
        Ok(self.key_unchecked(g, sig))
    }

    fn key_unchecked(&self, g: usize, sig: &[u64]) -> u64 {
        match self {
            Scheme::Bands(b) if b.probes() > 0 => b.probe_key(g / 2, g % 2, sig),
            Scheme::Bands(b) => b.key(g, sig),
            Scheme::Tables(t) => t.key(g, sig),
            Scheme::Radius { .. } => unreachable!("checked by groups()"),
        }
    }

    /// The keys of every row of `codes` (row-major, `words_for(f)` words each), row by row:
    /// `out[r · groups + g]` is row `r`'s key in group `g`; the rows a distributed job emits.
    ///
    /// # Errors
    /// As [`groups`](Self::groups); [`Error::LengthMismatch`] when `codes` is not whole rows.
    pub fn keys(&self, codes: &[u64]) -> Result<Vec<u64>> {
        let groups = self.groups()?;
        let w = words_for(self.bits().expect("a keyed scheme has a width"));
        if !codes.len().is_multiple_of(w) {
            return Err(Error::LengthMismatch {
                what: "code words vs whole rows",
                left: codes.len(),
                right: codes.len() / w * w,
            });
        }
        let mut out = vec![0u64; codes.len() / w * groups];
        use rayon::prelude::*;
        out.par_chunks_mut(groups.max(1))
            .zip(codes.par_chunks(w))
            .for_each(|(ks, row)| {
                for (g, k) in ks.iter_mut().enumerate() {
                    *k = self.key_unchecked(g, row);
                }
            });
        Ok(out)
    }

    /// The first group on which `a` and `b` agree, ignoring caps (`None` for a radius): for a
    /// multi-probe banding, the first band whose keys lie within the probe distance.
    pub fn first_agreeing(&self, a: &[u64], b: &[u64]) -> Option<usize> {
        match self {
            Scheme::Bands(s) => s.first_agreeing_band(a, b),
            Scheme::Tables(t) => t.first_agreeing_table(a, b),
            Scheme::Radius { .. } => None,
        }
    }

    /// The largest run of equal keys compared (`None`: no cap).
    pub fn max_group(&self) -> Option<usize> {
        let g = match self {
            Scheme::Radius { .. } => usize::MAX,
            Scheme::Bands(b) => b.max_group(),
            Scheme::Tables(t) => t.max_group(),
        };
        (g != usize::MAX).then_some(g)
    }

    /// The recall at cosine `threshold` of the scheme's candidates, from the binomial law of
    /// `bits`-bit signatures ([`crate::estimate::recall_at`],
    /// [`crate::estimate::banding_recall`]; the table design does not change a radius's).
    ///
    /// # Errors
    /// The estimators'.
    pub fn recall(&self, threshold: f64, bits: usize) -> Result<f64> {
        match self {
            Scheme::Radius { radius } => {
                crate::estimate::recall_at(bits as u64, u64::from(*radius), threshold)
            }
            Scheme::Tables(t) => {
                crate::estimate::recall_at(bits as u64, u64::from(t.radius()), threshold)
            }
            Scheme::Bands(b) => crate::estimate::banding_recall(b, threshold),
        }
    }

    /// One line for people: `radius 12`, `71 bands of 12 bits`, `20 permuted tables at
    /// radius 3`.
    pub fn describe(&self) -> String {
        match self {
            Scheme::Radius { radius } => format!("radius {radius}"),
            Scheme::Bands(b) if b.probes() > 0 => format!(
                "{} bands of {} bits, keys within {} bit probed",
                b.bands(),
                b.width(),
                b.probes()
            ),
            Scheme::Bands(b) => format!("{} bands of {} bits", b.bands(), b.width()),
            Scheme::Tables(t) => {
                format!("{} permuted tables at radius {}", t.tables(), t.radius())
            }
        }
    }

    /// Whether the run of `a` or `b` in their first agreeing group `first` (a band or table,
    /// as [`first_agreeing`](Self::first_agreeing) gives it) is capped: a pair of equal keys
    /// shares one run, a probed pair of keys one bit apart is skipped when either run is.
    fn first_capped(&self, set: &CappedSet, first: usize, a: &[u64], b: &[u64]) -> bool {
        match self {
            Scheme::Bands(s) => {
                set.contains(first, s.key(first, a)) || set.contains(first, s.key(first, b))
            }
            _ => set.contains(first, self.key_unchecked(first, a)),
        }
    }

    /// The pairs of group `g` among `ids`/`sigs`, with `capped` known; the runs capped here.
    fn group_pairs(
        &self,
        g: usize,
        ids: &[u64],
        sigs: &[u64],
        capped: &[CappedGroup],
        sink: impl FnMut(IdPair),
    ) -> Result<Vec<CappedGroup>> {
        match self {
            Scheme::Bands(b) if b.probes() > 0 => {
                probe_partition(b, g / 2, g % 2, ids, sigs, capped, sink)
            }
            Scheme::Bands(b) => band_partition(b, g, ids, sigs, capped, sink),
            Scheme::Tables(t) => table_partition(t, g, ids, sigs, capped, sink),
            Scheme::Radius { .. } => Err(no_keys()),
        }
    }
}

fn no_keys() -> Error {
    Error::param(
        "scheme",
        "a radius scheme has no keys: make its permuted tables with Scheme::keyed",
    )
}

impl CappedGroup {
    /// The runs capped over a whole data set as a distributed job collects them after its
    /// first pass, one `(group, key)` per row of two columns (row counts unknown: 0), for
    /// [`partition`]'s `capped`.
    ///
    /// ```
    /// use simlsh::join::CappedGroup;
    ///
    /// let c = CappedGroup::from_columns(&[1, 0], &[0x34, 7])?;
    /// assert_eq!(c[0], CappedGroup { band: 1, key: 0x34, rows: 0 });
    /// assert!(CappedGroup::from_columns(&[1], &[]).is_err());
    /// # Ok::<(), simlsh::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when the columns differ in length.
    pub fn from_columns(groups: &[u32], keys: &[u64]) -> Result<Vec<CappedGroup>> {
        if groups.len() != keys.len() {
            return Err(Error::LengthMismatch {
                what: "capped groups vs keys",
                left: groups.len(),
                right: keys.len(),
            });
        }
        Ok(groups
            .iter()
            .zip(keys)
            .map(|(&band, &key)| CappedGroup { band, key, rows: 0 })
            .collect())
    }
}

/// The candidate pairs of one partition of a distributed join's `(group, key)` rows: row `r`
/// has group `groups[r]`, id `ids[r]` and signature `codes[r]` (any groups, keys and order;
/// a partition holds whole `(group, key)` runs; a multi-probe banding's groups are two per
/// band, [`Scheme::groups`]). Each pair is reported once over all the
/// partitions, by the first group its signatures agree on ([`Pass::First`]), the runs longer
/// than the scheme's cap skipped and returned; `capped` (the runs capped over the whole data
/// set, known after a first pass) are skipped too, and [`Pass::Missed`] reports only the
/// pairs they hid. The union over the partitions equals the single-machine join's candidates
/// for the same scheme.
///
/// ```
/// use simlsh::join::{IdPair, Pass, Scheme, partition};
///
/// let s: Scheme = "bands:f=16,b=2,w=8".parse()?;
/// // Band 1 (the high byte) of three rows: ids 70 and 30 share key 0x34.
/// let found = partition(&s, &[1, 1, 1], &[70, 30, 99], &[0x34ab, 0x34cd, 0x5678], &[], Pass::First)?;
/// assert_eq!(found.pairs, vec![IdPair { i: 30, j: 70, distance: 4 }]);
/// # Ok::<(), simlsh::Error>(())
/// ```
///
/// # Errors
/// [`Error::LengthMismatch`] when `groups`, `ids` and `codes` disagree in rows;
/// [`Error::InvalidParameter`] for a group out of range or a radius scheme;
/// [`Error::PaddingBits`] for a code with bits beyond the width.
pub fn partition(
    scheme: &Scheme,
    groups: &[u32],
    ids: &[u64],
    codes: &[u64],
    capped: &[CappedGroup],
    pass: Pass,
) -> Result<PartitionPairs> {
    let n_groups = scheme.groups()?;
    let w = words_for(scheme.bits().expect("a keyed scheme has a width"));
    if groups.len() != ids.len() || codes.len() != ids.len() * w {
        return Err(Error::LengthMismatch {
            what: "groups, ids and code rows",
            left: groups.len().min(ids.len()),
            right: codes.len() / w,
        });
    }
    if let Some(r) = groups.iter().position(|&g| g as usize >= n_groups) {
        return Err(Error::param(
            "group",
            format!(
                "row {r}: group {} of a scheme with {n_groups} groups",
                groups[r]
            ),
        ));
    }
    let set = CappedSet::new(capped);
    // Rows by group (stable: runs come out in id order whatever the input order).
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&r| groups[r]);
    let mut out = PartitionPairs::default();
    let (mut gid, mut gsig) = (Vec::new(), Vec::new());
    for run in order.chunk_by(|&x, &y| groups[x] == groups[y]) {
        let g = groups[run[0]] as usize;
        gid.clear();
        gsig.clear();
        for &r in run {
            gid.push(ids[r]);
            gsig.extend_from_slice(&codes[r * w..(r + 1) * w]);
        }
        // The second pass keeps a pair only if its first agreeing group is capped: its rows
        // are found by id (sorted once per group).
        let by_id: Vec<(u64, usize)> = if pass == Pass::Missed {
            let mut v: Vec<(u64, usize)> = gid.iter().enumerate().map(|(i, &id)| (id, i)).collect();
            v.sort_unstable();
            v
        } else {
            Vec::new()
        };
        let row_of = |id: u64| {
            let k = by_id.partition_point(|&(x, _)| x < id);
            by_id[k].1
        };
        let mine = scheme.group_pairs(g, &gid, &gsig, capped, |p| {
            if pass == Pass::Missed {
                let (ra, rb) = (row_of(p.i), row_of(p.j));
                let (sa, sb) = (&gsig[ra * w..(ra + 1) * w], &gsig[rb * w..(rb + 1) * w]);
                let first = scheme
                    .first_agreeing(sa, sb)
                    .expect("the pair agrees on this group");
                if !scheme.first_capped(&set, first, sa, sb) {
                    return;
                }
            }
            out.pairs.push(p);
        })?;
        if pass == Pass::First {
            out.capped.extend(mine);
        }
    }
    Ok(out)
}

impl FromStr for Scheme {
    type Err = Error;

    /// Parses the text form (see the [module documentation](crate::join)).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] (`join scheme`) naming the unknown kind or key, the
    /// repeated key or the value that is not valid; the builders' errors for a layout that
    /// does not fit.
    fn from_str(s: &str) -> Result<Self> {
        let t = SpecText::parse("join scheme", s)?;
        let cap = |t: &SpecText<'_>| -> Result<Option<usize>> {
            match t.raw("cap") {
                None => Ok(None),
                Some("none") => Ok(Some(usize::MAX)),
                Some(_) => t.get("cap", "a number of rows or `none`"),
            }
        };
        match t.kind {
            "radius" => {
                t.only(&["r"])?;
                Ok(Scheme::Radius {
                    radius: t.require("r", "a Hamming radius")?,
                })
            }
            "bands" => {
                t.only(&["f", "b", "w", "d", "prefix", "cap", "probes"])?;
                let mut b = Banding::builder()
                    .bits(t.require("f", "the signature bits")?)
                    .bands(t.require("b", "a number of bands")?)
                    .width(t.require("w", "bits per band")?);
                if let Some(d) = t.get("d", "a Hamming radius")? {
                    b = b.max_distance(d);
                }
                if let Some(p) = t.raw("prefix") {
                    let bad = || t.bad(format!("`prefix={p}`: expected WORDS/RADIUS, as 4/97"));
                    let (words, radius) = p.split_once('/').ok_or_else(bad)?;
                    b = b.prefix_filter(
                        words.trim().parse().map_err(|_| bad())?,
                        radius.trim().parse().map_err(|_| bad())?,
                    );
                }
                if let Some(c) = cap(&t)? {
                    b = b.max_group(c);
                }
                if let Some(p) = t.get("probes", "a multi-probe distance, 0 or 1")? {
                    b = b.probes(p);
                }
                Ok(Scheme::Bands(b.build()?))
            }
            "tables" => {
                t.only(&["f", "r", "levels", "cap"])?;
                let levels = t.require::<String>("levels", "blocks per level, as 4 or 4+4")?;
                let levels = if levels == "scan" {
                    Vec::new()
                } else {
                    levels
                        .split('+')
                        .map(|v| v.trim().parse::<usize>())
                        .collect::<std::result::Result<_, _>>()
                        .map_err(|_| {
                            t.bad(format!(
                                "`levels={levels}`: expected blocks per level, as 4+4"
                            ))
                        })?
                };
                let mut b = TableKeys::builder()
                    .bits(t.require("f", "the signature bits")?)
                    .radius(t.require("r", "a Hamming radius")?)
                    .levels(levels);
                if let Some(c) = cap(&t)? {
                    b = b.max_group(c);
                }
                Ok(Scheme::Tables(b.build()?))
            }
            other => Err(t.bad(format!(
                "unknown scheme `{other}`: expected radius, bands or tables"
            ))),
        }
    }
}

impl fmt::Display for Scheme {
    /// The text form: the kind and every key that differs from its default.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cap = |g: usize| {
            if g == usize::MAX {
                "none".to_string()
            } else {
                g.to_string()
            }
        };
        match self {
            Scheme::Radius { radius } => write(f, "radius", &[("r", radius.to_string())]),
            Scheme::Bands(b) => {
                let mut p = vec![
                    ("f", b.bits().to_string()),
                    ("b", b.bands().to_string()),
                    ("w", b.width().to_string()),
                ];
                if b.max_distance() < b.bits() as u32 {
                    p.push(("d", b.max_distance().to_string()));
                }
                if let Some((words, r)) = b.prefix_filter() {
                    p.push(("prefix", format!("{words}/{r}")));
                }
                if b.max_group() != DEFAULT_MAX_GROUP {
                    p.push(("cap", cap(b.max_group())));
                }
                if b.probes() > 0 {
                    p.push(("probes", b.probes().to_string()));
                }
                write(f, "bands", &p)
            }
            Scheme::Tables(t) => {
                let levels = if t.levels().is_empty() {
                    "scan".to_string()
                } else {
                    let l: Vec<String> = t.levels().iter().map(usize::to_string).collect();
                    l.join("+")
                };
                let mut p = vec![
                    ("f", t.bits().to_string()),
                    ("r", t.radius().to_string()),
                    ("levels", levels),
                ];
                if t.max_group() != usize::MAX {
                    p.push(("cap", cap(t.max_group())));
                }
                write(f, "tables", &p)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip() {
        for s in [
            "radius:r=0",
            "radius:r=12",
            "bands:f=256,b=20,w=12",
            "bands:f=1024,b=71,w=12,d=300,prefix=4/97",
            "bands:f=64,b=4,w=16,cap=none",
            "bands:f=64,b=4,w=16,cap=50",
            "bands:f=256,b=12,w=20,d=90,probes=1",
            "tables:f=64,r=3,levels=6",
            "tables:f=128,r=3,levels=4+4,cap=1000",
            "tables:f=64,r=40,levels=scan",
        ] {
            let scheme: Scheme = s.parse().unwrap();
            assert_eq!(scheme.to_string(), s);
            assert_eq!(scheme.to_string().parse::<Scheme>().unwrap(), scheme);
        }
        // Defaults are left out; spaces are allowed.
        let s: Scheme = " bands : f=64, b=4, w=16, d=64, cap=10000 "
            .parse()
            .unwrap();
        assert_eq!(s.to_string(), "bands:f=64,b=4,w=16");
        for bad in [
            "radius",
            "radius:r=-1",
            "radius:k=3",
            "bands:f=64,b=5,w=16",
            "bands:f=64,b=4",
            "bands:f=256,b=4,w=16,prefix=4",
            "bands:f=256,b=4,w=16,prefix=9/3",
            "bands:f=64,b=4,w=16,cap=1",
            "bands:f=64,b=4,w=16,probes=2",
            "tables:f=64,r=3",
            "tables:f=64,r=3,levels=2",
            "lsh:f=64",
        ] {
            assert!(bad.parse::<Scheme>().is_err(), "{bad}");
        }
    }

    #[test]
    fn capped_runs_from_columns_drive_the_second_pass_as_the_first_pass_gave_them() {
        // 8 codes share band 0 (the low byte: one run, capped at 2 rows); of them, 2 pairs
        // also agree on band 1, which they reach first after band 0: the pairs the cap hid.
        let s: Scheme = "bands:f=16,b=2,w=8,cap=2".parse().unwrap();
        let high = [1u64, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9];
        let codes: Vec<u64> = (0..11)
            .map(|r| (high[r] << 8) | if r < 8 { 0x34 } else { r as u64 })
            .collect();
        // Every row once per band, as the keys of a distributed job give them.
        let groups: Vec<u32> = [0; 11].into_iter().chain([1; 11]).collect();
        let ids: Vec<u64> = (0..22).map(|r| 100 + r % 11).collect();
        let codes: Vec<u64> = codes.iter().chain(&codes).copied().collect();
        let first = partition(&s, &groups, &ids, &codes, &[], Pass::First).unwrap();
        assert!(first.pairs.is_empty());
        assert_eq!(first.capped.len(), 1);
        assert_eq!((first.capped[0].band, first.capped[0].rows), (0, 8));
        let (g, k): (Vec<u32>, Vec<u64>) = first.capped.iter().map(|c| (c.band, c.key)).unzip();
        let columns = CappedGroup::from_columns(&g, &k).unwrap();
        let missed = |capped: &[CappedGroup]| {
            let mut p: Vec<(u64, u64)> = partition(&s, &groups, &ids, &codes, capped, Pass::Missed)
                .unwrap()
                .pairs
                .iter()
                .map(|p| (p.i, p.j))
                .collect();
            p.sort_unstable();
            p
        };
        // The row counts do not matter to the second pass.
        assert_eq!(missed(&columns), missed(&first.capped));
        assert_eq!(missed(&columns), vec![(100, 101), (102, 103)]);
        let e = CappedGroup::from_columns(&g, &[]).unwrap_err().to_string();
        assert!(e.contains("capped groups vs keys"), "{e}");
    }

    #[test]
    fn a_radius_is_keyed_by_the_joins_own_tables() {
        let r = Scheme::Radius { radius: 3 };
        assert!(r.groups().is_err() && r.keys(&[0]).is_err());
        let t = r.keyed(64, 1_000_000).unwrap();
        let plan = crate::join::self_join_plan(64, 3, 1_000_000).unwrap();
        match &t {
            Scheme::Tables(k) => assert_eq!(k.levels(), plan.levels.as_slice()),
            other => panic!("{other:?}"),
        }
        let b: Scheme = "bands:f=64,b=4,w=16".parse().unwrap();
        assert!(b.keyed(128, 10).is_err());
        assert_eq!(b.keyed(64, 10).unwrap(), b);
    }
}
