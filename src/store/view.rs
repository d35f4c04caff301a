//! A view of a store: immutable segments with their dead rows, and the recent rows (the
//! delta, in small chunks), shared by readers through an `Arc` and changed by the writer
//! copy-on-write (`Arc::make_mut`: a chunk of the delta or a segment's dead set is copied only
//! while readers hold it).

use std::sync::Arc;

use roaring::RoaringBitmap;

use super::rows::{Content, PayRef, Rows, cosine};
use super::segment::Segment;
use super::{Match, Record};
use crate::error::Result;
use crate::hamming;
use crate::index::Hit;

/// Rows per chunk of the delta.
pub(crate) const CHUNK: usize = 256;

/// A chunk of recent rows, in insertion order.
#[derive(Clone, Debug)]
pub(crate) struct Chunk {
    pub(crate) rows: Rows,
    pub(crate) dead: Vec<bool>,
}

/// A segment and its dead rows.
#[derive(Clone, Debug)]
pub(crate) struct SegRef {
    pub(crate) seg: Arc<Segment>,
    pub(crate) dead: Arc<RoaringBitmap>,
}

impl SegRef {
    /// Live rows.
    pub(crate) fn live(&self) -> usize {
        self.seg.len() - self.dead.len() as usize
    }
}

/// Where a live id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loc {
    /// Segment `.0` (position in the view), row `.1`.
    Seg(usize, usize),
    /// Delta chunk `.0`, position `.1`.
    Delta(usize, usize),
}

/// The resolved reach of a query: candidates within `radius` (or the `k` nearest), kept when
/// their exact cosine reaches `cosine`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Reach {
    Radius { radius: u32, cosine: Option<f64> },
    Nearest(usize),
}

/// A query: its code and payload.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe<'a> {
    pub(crate) code: &'a [u64],
    pub(crate) pay: PayRef<'a>,
}

/// Sorts matches of a radius search: by `(distance, id)`, or by decreasing cosine then id.
pub(crate) fn sort_matches(out: &mut [Match], by_cosine: bool) {
    if by_cosine {
        out.sort_unstable_by(|a, b| {
            b.cosine
                .partial_cmp(&a.cosine)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.id.cmp(&b.id))
        });
    } else {
        out.sort_unstable_by_key(|m| (m.distance, m.id));
    }
}

/// A consistent state of the store.
#[derive(Clone, Debug)]
pub(crate) struct View {
    pub(crate) words: usize,
    pub(crate) content: Content,
    pub(crate) segs: Vec<SegRef>,
    pub(crate) chunks: Vec<Arc<Chunk>>,
    /// The last log record applied.
    pub(crate) lsn: u64,
    /// Live items.
    pub(crate) live: u64,
}

impl View {
    /// An empty view.
    pub(crate) fn new(words: usize, content: Content) -> View {
        View {
            words,
            content,
            segs: Vec::new(),
            chunks: Vec::new(),
            lsn: 0,
            live: 0,
        }
    }

    /// Rows in the delta, dead ones included.
    pub(crate) fn delta_rows(&self) -> usize {
        self.chunks.iter().map(|c| c.rows.len()).sum()
    }

    /// Where live `id` is: the delta (newest first), then the segments (newest first).
    pub(crate) fn locate(&self, id: u64) -> Option<Loc> {
        for (c, ch) in self.chunks.iter().enumerate().rev() {
            if let Some(p) = (0..ch.rows.len())
                .rev()
                .find(|&p| ch.rows.ids[p] == id && !ch.dead[p])
            {
                return Some(Loc::Delta(c, p));
            }
        }
        self.locate_in_segments(id)
    }

    /// Where live `id` is among the segments.
    pub(crate) fn locate_in_segments(&self, id: u64) -> Option<Loc> {
        self.locate_in_segments_by(id, Segment::find)
    }

    /// [`locate_in_segments`](Self::locate_in_segments) by the segments' id filters (the
    /// writer's lookups, see [`Segment::find_filtered`]).
    pub(crate) fn locate_in_segments_filtered(&self, id: u64) -> Option<Loc> {
        self.locate_in_segments_by(id, Segment::find_filtered)
    }

    fn locate_in_segments_by(
        &self,
        id: u64,
        find: impl Fn(&Segment, u64) -> Option<usize>,
    ) -> Option<Loc> {
        for (s, sr) in self.segs.iter().enumerate().rev() {
            if let Some(row) = find(&sr.seg, id)
                && !sr.dead.contains(row as u32)
            {
                return Some(Loc::Seg(s, row));
            }
        }
        None
    }

    /// The rows and row of a location.
    pub(crate) fn rows_at(&self, loc: Loc) -> (&Rows, usize) {
        match loc {
            Loc::Seg(s, r) => (&self.segs[s].seg.rows, r),
            Loc::Delta(c, p) => (&self.chunks[c].rows, p),
        }
    }

    /// The record of live `id`.
    pub(crate) fn get(&self, id: u64) -> Option<Record> {
        let (rows, r) = self.rows_at(self.locate(id)?);
        Some(Record {
            id,
            code: rows.code(r).to_vec(),
            payload: rows.payload(r).to_owned(),
        })
    }

    /// Marks a live row dead.
    pub(crate) fn kill(&mut self, loc: Loc) {
        match loc {
            Loc::Seg(s, r) => {
                Arc::make_mut(&mut self.segs[s].dead).insert(r as u32);
            }
            Loc::Delta(c, p) => Arc::make_mut(&mut self.chunks[c]).dead[p] = true,
        }
        self.live -= 1;
    }

    /// Appends a live row to the delta; returns its location.
    pub(crate) fn push(&mut self, id: u64, code: &[u64], pay: PayRef<'_>) -> Loc {
        if self.chunks.last().is_none_or(|c| c.rows.len() >= CHUNK) {
            self.chunks.push(Arc::new(Chunk {
                rows: Rows::with_capacity(self.words, self.content, CHUNK),
                dead: Vec::with_capacity(CHUNK),
            }));
        }
        let c = self.chunks.len() - 1;
        let ch = Arc::make_mut(&mut self.chunks[c]);
        ch.rows.push(id, code, pay);
        ch.dead.push(false);
        self.live += 1;
        Loc::Delta(c, ch.rows.len() - 1)
    }

    /// The live rows of the delta, sorted by id.
    pub(crate) fn delta_live(&self) -> Rows {
        let mut live: Vec<(u64, usize, usize)> = Vec::new();
        for (c, ch) in self.chunks.iter().enumerate() {
            for p in 0..ch.rows.len() {
                if !ch.dead[p] {
                    live.push((ch.rows.ids[p], c, p));
                }
            }
        }
        live.sort_unstable();
        let mut rows = Rows::with_capacity(self.words, self.content, live.len());
        for (id, c, p) in live {
            let r = &self.chunks[c].rows;
            rows.push(id, r.code(p), r.payload(p));
        }
        rows
    }

    /// Every live match of `q` within `reach`, sorted by `(distance, id)` (by decreasing
    /// cosine, then id, for a cosine threshold).
    pub(crate) fn search(&self, q: Probe<'_>, reach: Reach, out: &mut Vec<Match>) -> Result<()> {
        out.clear();
        match reach {
            Reach::Radius { radius, cosine: t } => {
                let mut hits = Vec::new();
                let keep = |rows: &Rows, r: usize, d: u32, out: &mut Vec<Match>| {
                    keep_match(rows, r, d, q.pay, t, out)
                };
                for sr in &self.segs {
                    sr.seg.index.radius_into(q.code, radius, &mut hits)?;
                    for h in &hits {
                        if !sr.dead.contains(h.id) {
                            keep(&sr.seg.rows, h.id as usize, h.distance, out);
                        }
                    }
                }
                for ch in &self.chunks {
                    let mut found: Vec<(usize, u32)> = Vec::new();
                    hamming::scan_radius(q.code, &ch.rows.codes, self.words, radius, |_, i, d| {
                        found.push((i, d))
                    })?;
                    for (i, d) in found {
                        if !ch.dead[i] {
                            keep(&ch.rows, i, d, out);
                        }
                    }
                }
                sort_matches(out, t.is_some());
            }
            Reach::Nearest(k) => {
                if k == 0 {
                    return Ok(());
                }
                let mut hits: Vec<Hit> = Vec::new();
                for sr in &self.segs {
                    let n = sr.seg.len();
                    let mut want = k.min(n);
                    loop {
                        sr.seg.index.knn_into(q.code, want, &mut hits)?;
                        let live = hits.iter().filter(|h| !sr.dead.contains(h.id)).count();
                        if live >= k || want >= n {
                            break;
                        }
                        want = (want * 4).min(n);
                    }
                    for h in hits.iter().filter(|h| !sr.dead.contains(h.id)).take(k) {
                        let r = h.id as usize;
                        out.push(Match {
                            id: sr.seg.rows.ids[r],
                            distance: h.distance,
                            cosine: cosine(sr.seg.rows.payload(r), q.pay),
                        });
                    }
                }
                let mut d = Vec::new();
                for ch in &self.chunks {
                    d.resize(ch.rows.len(), 0u32);
                    hamming::distances(q.code, &ch.rows.codes, self.words, &mut d)?;
                    for (i, &dist) in d.iter().enumerate() {
                        if !ch.dead[i] {
                            out.push(Match {
                                id: ch.rows.ids[i],
                                distance: dist,
                                cosine: cosine(ch.rows.payload(i), q.pay),
                            });
                        }
                    }
                }
                out.sort_unstable_by_key(|m| (m.distance, m.id));
                out.truncate(k);
            }
        }
        Ok(())
    }

    /// [`search`](Self::search) for many queries of one reach: a radius reach searches
    /// each segment with its index's batch search (queries probed together, in parallel)
    /// and scans each delta chunk once for all queries; the same answers.
    pub(crate) fn search_batch(&self, qs: &[Probe<'_>], reach: Reach) -> Result<Vec<Vec<Match>>> {
        self.search_batch_in(qs, reach, |_| true, true)
    }

    /// [`search_batch`](Self::search_batch) of the segments whose number `seg` accepts, and
    /// of the delta when `delta` (a radius reach; the other reaches search everything).
    pub(crate) fn search_batch_in(
        &self,
        qs: &[Probe<'_>],
        reach: Reach,
        seg: impl Fn(u64) -> bool,
        delta: bool,
    ) -> Result<Vec<Vec<Match>>> {
        let Reach::Radius { radius, cosine: t } = reach else {
            return qs
                .iter()
                .map(|q| {
                    let mut o = Vec::new();
                    self.search(*q, reach, &mut o)?;
                    Ok(o)
                })
                .collect();
        };
        let w = self.words;
        let mut flat = Vec::with_capacity(qs.len() * w);
        for q in qs {
            flat.extend_from_slice(q.code);
        }
        let mut out: Vec<Vec<Match>> = vec![Vec::new(); qs.len()];
        let keep = |out: &mut Vec<Match>, rows: &Rows, r: usize, d: u32, q: &Probe<'_>| {
            keep_match(rows, r, d, q.pay, t, out)
        };
        for sr in self.segs.iter().filter(|sr| seg(sr.seg.no)) {
            let hits = sr.seg.index.radius_batch(&flat, radius)?;
            for (qi, hs) in hits.iter().enumerate() {
                for h in hs {
                    if !sr.dead.contains(h.id) {
                        keep(
                            &mut out[qi],
                            &sr.seg.rows,
                            h.id as usize,
                            h.distance,
                            &qs[qi],
                        );
                    }
                }
            }
        }
        let mut found: Vec<(usize, usize, u32)> = Vec::new();
        for ch in self.chunks.iter().filter(|_| delta) {
            found.clear();
            hamming::scan_radius(&flat, &ch.rows.codes, w, radius, |qi, i, d| {
                found.push((qi, i, d))
            })?;
            for &(qi, i, d) in &found {
                if !ch.dead[i] {
                    keep(&mut out[qi], &ch.rows, i, d, &qs[qi]);
                }
            }
        }
        for o in &mut out {
            sort_matches(o, t.is_some());
        }
        Ok(out)
    }

    /// Bytes of heap memory and of mapped files held.
    pub(crate) fn bytes(&self) -> (usize, usize) {
        let (mut heap, mut mapped) = (0, 0);
        for sr in &self.segs {
            let (h, m) = sr.seg.bytes();
            heap += h + sr.dead.serialized_size();
            mapped += m;
        }
        for ch in &self.chunks {
            heap += ch.rows.bytes().0 + ch.dead.len();
        }
        (heap, mapped)
    }
}

/// Pushes row `r` of `rows`, at Hamming distance `d` from a query with payload `pay`, with
/// its exact cosine, unless a cosine threshold `t` is given and the cosine is unknown or
/// below it.
fn keep_match(
    rows: &Rows,
    r: usize,
    d: u32,
    pay: PayRef<'_>,
    t: Option<f64>,
    out: &mut Vec<Match>,
) {
    let c = cosine(rows.payload(r), pay);
    if let Some(t) = t
        && c.is_none_or(|c| c < t)
    {
        return;
    }
    out.push(Match {
        id: rows.ids[r],
        distance: d,
        cosine: c,
    });
}
