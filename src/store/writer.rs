//! The writer thread: applies changes in order, group commit, publication, rollback.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender};

use roaring::RoaringBitmap;

use super::background::Bg;
use super::rows::Payload;
use super::segment::Segment;
use super::view::{Loc, Probe, Reach, SegRef, View};
use super::wal::{self, LogOp, Wal};
use super::young::{COVERED_DELTA_LIMITS, Young, block_key, cuts};
use super::{CheckOutcome, Durability, Inner, Outcome, Prepared, Recovery, copy_error};
use crate::error::{Error, Result};
use crate::util::hash::{FastMap, FastSet};

/// Changes in one group at most (a group is one log write and one sync).
const MAX_GROUP: usize = 65_536;

/// Check-and-inserts in a group from which their searches run in parallel, against the
/// state at the start of the group, before the writer applies them in order (each then
/// checked against the group's own inserts only).
const PARALLEL_CHECKS: usize = 64;

/// Shortest block of the pigeonhole index of a group's own inserts: below it, they are
/// scanned.
const MIN_BLOCK_BITS: usize = 10;

/// A pigeonhole index of a group's own inserts for one radius `r`: the code cut into `r + 1`
/// blocks; a code within `r` of a query agrees with it exactly on at least one block. Each
/// block's codes with one key form a chain (the newest first) through `next`.
struct Blocks {
    radius: u32,
    /// Start and length (at most 64 bits) of each block's key.
    cuts: Vec<(usize, usize)>,
    /// Per block: the newest insert of each key.
    heads: Vec<FastMap<u64, u32>>,
    /// Per block and insert: the previous insert of its key ([`NONE`] ends the chain).
    next: Vec<Vec<u32>>,
}

/// The end of a chain of [`Blocks`].
const NONE: u32 = u32::MAX;

impl Blocks {
    /// The index for radius `r` of `bits`-bit codes, when its blocks are long enough.
    fn new(bits: usize, r: u32) -> Option<Blocks> {
        let cuts = cuts(bits, r, MIN_BLOCK_BITS)?;
        Some(Blocks {
            radius: r,
            heads: (0..cuts.len()).map(|_| FastMap::default()).collect(),
            next: (0..cuts.len()).map(|_| Vec::new()).collect(),
            cuts,
        })
    }

    /// Adds insert `j` (inserts are added in order `0, 1, ...`).
    fn add(&mut self, code: &[u64], j: u32) {
        for ((&(s, l), m), next) in self.cuts.iter().zip(&mut self.heads).zip(&mut self.next) {
            debug_assert_eq!(next.len(), j as usize);
            let prev = m.insert(block_key(code, s, l), j).unwrap_or(NONE);
            next.push(prev);
        }
    }

    /// The candidates of `code`, each once, in increasing order.
    fn candidates(&self, code: &[u64], out: &mut Vec<u32>) {
        out.clear();
        for ((&(s, l), m), next) in self.cuts.iter().zip(&self.heads).zip(&self.next) {
            let mut j = m.get(&block_key(code, s, l)).copied().unwrap_or(NONE);
            while j != NONE {
                out.push(j);
                j = next[j as usize];
            }
        }
        out.sort_unstable();
        out.dedup();
    }
}

/// A group's own changes, for checks searched at its start.
#[derive(Default)]
struct Fresh {
    /// Ids removed or replaced during the group.
    touched: FastSet<u64>,
    ids: Vec<u64>,
    codes: Vec<u64>,
    pay: Vec<Payload>,
    live: Vec<bool>,
    index: FastMap<u64, usize>,
    /// Words per code.
    words: usize,
    /// The pigeonhole index of the inserts, for the radius of the group's checks.
    blocks: Option<Blocks>,
}

impl Fresh {
    fn clear(&mut self) {
        self.touched.clear();
        self.ids.clear();
        self.codes.clear();
        self.pay.clear();
        self.live.clear();
        self.index.clear();
        self.blocks = None;
    }

    /// Indexes the inserts for radius `r` of `bits`-bit codes (once per group; none when
    /// the blocks would be too short, or for a second radius).
    fn index_for(&mut self, bits: usize, r: u32) {
        if self.blocks.is_some() || self.ids.is_empty() {
            return;
        }
        if let Some(mut b) = Blocks::new(bits, r) {
            for (j, c) in self.codes.chunks_exact(self.words).enumerate() {
                b.add(c, j as u32);
            }
            self.blocks = Some(b);
        }
    }

    fn killed(&mut self, id: u64) {
        self.touched.insert(id);
        if let Some(j) = self.index.remove(&id) {
            self.live[j] = false;
        }
    }

    fn inserted(&mut self, id: u64, code: &[u64], payload: &Payload) {
        if let Some(b) = &mut self.blocks {
            b.add(code, self.ids.len() as u32);
        }
        self.index.insert(id, self.ids.len());
        self.ids.push(id);
        self.codes.extend_from_slice(code);
        self.pay.push(payload.clone());
        self.live.push(true);
    }
}

/// A reply, called on the writer's thread.
pub(crate) type Reply<T> = Box<dyn FnOnce(Result<T>) + Send>;

/// A change, its reach resolved.
#[derive(Debug)]
pub(crate) enum WOp {
    Insert {
        id: u64,
        item: Prepared,
    },
    Check {
        id: u64,
        item: Prepared,
        reach: Reach,
    },
    Remove {
        id: u64,
    },
}

/// Work for the writer.
pub(crate) enum Job {
    /// Changes from a caller.
    Ops {
        ops: Vec<WOp>,
        reply: Reply<Vec<Outcome>>,
    },
    /// A merge's result from the background thread: segments `inputs` (with their dead rows
    /// when the merge started) become `output` (none when nothing was live).
    Replace {
        inputs: Vec<u64>,
        dead_at_start: Vec<Arc<RoaringBitmap>>,
        output: Option<Arc<Segment>>,
        reply: Reply<()>,
    },
    /// A checkpoint's cut: the delta becomes a segment, the log moves to a new file, and the
    /// view is returned.
    Cut { reply: Reply<Arc<View>> },
    /// Stop after the jobs before it.
    Stop,
}

impl Job {
    fn ops(&self) -> usize {
        match self {
            Job::Ops { ops, .. } => ops.len(),
            _ => 1,
        }
    }
}

/// The writer's state.
pub(crate) struct Writer {
    inner: Arc<Inner>,
    cur: View,
    /// Live ids of the delta.
    delta_ids: FastMap<u64, Loc>,
    /// The log (set once replay is done).
    wal: Option<Wal>,
    sync: bool,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    search: Vec<super::Match>,
    bg: Option<Sender<Bg>>,
    /// The group's own changes, tracked while its checks were searched at its start.
    fresh: Option<Fresh>,
    /// The index of the young rows for batched checks (built when first needed).
    young: Option<Young>,
}

impl Writer {
    /// Replays the log over the checkpoint's `view` and opens the log for appending.
    pub(crate) fn recover(
        inner: Arc<Inner>,
        view: View,
        durability: Durability,
    ) -> Result<(Writer, Recovery)> {
        let dir = inner.dir.clone();
        let (words, content, after) = (view.words, view.content, view.lsn);
        let mut w = Writer {
            inner,
            cur: view,
            delta_ids: FastMap::default(),
            wal: None,
            sync: durability == Durability::Sync,
            buf: Vec::new(),
            scratch: Vec::new(),
            search: Vec::new(),
            bg: None,
            fresh: None,
            young: None,
        };
        let replay = wal::replay(&dir, after, words, content, true, |lsn, op| {
            match op {
                LogOp::Insert { id, code, payload } => {
                    w.insert(id, &code, &payload);
                }
                LogOp::Remove { id } => {
                    w.remove(id);
                }
            }
            w.cur.lsn = lsn;
            w.maybe_freeze()
        })?;
        w.wal = Some(match replay.tail {
            Some((_, path, len)) => Wal::open(&dir, path, len)?,
            None => Wal::create(&dir, w.cur.lsn + 1)?,
        });
        w.inner.view.store(Arc::new(w.cur.clone()));
        Ok((
            w,
            Recovery {
                replayed: replay.applied,
                torn: replay.torn,
            },
        ))
    }

    /// Runs until [`Job::Stop`] or until every sender is gone.
    pub(crate) fn run(mut self, rx: Receiver<Job>, bg: Sender<Bg>) {
        self.bg = Some(bg);
        let mut group: Vec<Job> = Vec::new();
        loop {
            let Ok(first) = rx.recv() else { return };
            let mut n = first.ops();
            group.push(first);
            while n < MAX_GROUP {
                match rx.try_recv() {
                    Ok(j) => {
                        n += j.ops();
                        group.push(j);
                    }
                    Err(_) => break,
                }
            }
            if self.process(&mut group) {
                return;
            }
        }
    }

    /// Applies a group; true on [`Job::Stop`].
    fn process(&mut self, group: &mut Vec<Job>) -> bool {
        self.buf.clear();
        let mut done: Vec<(Reply<Vec<Outcome>>, Vec<Outcome>)> = Vec::new();
        let mut replaced: Vec<Reply<()>> = Vec::new();
        let mut cuts: Vec<Reply<Arc<View>>> = Vec::new();
        let mut stop = false;
        let mut failure: Option<Error> = None;
        let mut writes = 0u64;
        self.prepare_young(group);
        let mut pre = match self.presearch(group) {
            Ok(p) => p,
            Err(e) => {
                failure = Some(e);
                Vec::new()
            }
        };
        let mut fresh = self.fresh.take().unwrap_or_default();
        fresh.clear();
        fresh.words = self.cur.words;
        self.fresh = (!pre.is_empty()).then_some(fresh);
        for (j, job) in group.drain(..).enumerate() {
            match job {
                Job::Ops { ops, reply } => {
                    if failure.is_some() {
                        done.push((reply, Vec::new()));
                        continue;
                    }
                    let mut found = pre.get_mut(j).map(std::mem::take).unwrap_or_default();
                    let mut outs = Vec::with_capacity(ops.len());
                    for (k, op) in ops.into_iter().enumerate() {
                        let m = found.get_mut(k).and_then(Option::take);
                        match self.apply(op, m) {
                            Ok((o, logged)) => {
                                writes += u64::from(logged);
                                outs.push(o);
                            }
                            Err(e) => {
                                failure = Some(e);
                                break;
                            }
                        }
                    }
                    done.push((reply, outs));
                }
                Job::Replace {
                    inputs,
                    dead_at_start,
                    output,
                    reply,
                } => match self.replace(&inputs, &dead_at_start, output) {
                    Ok(()) => replaced.push(reply),
                    Err(e) => reply(Err(e)),
                },
                Job::Cut { reply } => cuts.push(reply),
                Job::Stop => stop = true,
            }
        }
        if failure.is_none() && !self.buf.is_empty() {
            let sync = self.sync;
            let buf = std::mem::take(&mut self.buf);
            let written = self.wal().and_then(|w| w.append(&buf, sync));
            self.buf = buf;
            match written {
                Ok(()) => {
                    let c = &self.inner.counters;
                    c.log_bytes
                        .fetch_add(self.buf.len() as u64, Ordering::Relaxed);
                    c.groups.fetch_add(1, Ordering::Relaxed);
                    c.writes.fetch_add(writes, Ordering::Relaxed);
                }
                Err(e) => failure = Some(e),
            }
        }
        if let Some(e) = &failure {
            // Nothing of the group is acknowledged: back to the last published state.
            self.rollback();
            for (reply, _) in done {
                reply(Err(copy_error(e)));
            }
            for reply in replaced {
                reply(Err(copy_error(e)));
            }
        } else {
            self.publish();
            for (reply, outs) in done {
                reply(Ok(outs));
            }
            for reply in replaced {
                reply(Ok(()));
            }
        }
        for reply in cuts {
            reply(self.cut());
        }
        stop
    }

    /// The log.
    fn wal(&mut self) -> Result<&mut Wal> {
        self.wal
            .as_mut()
            .ok_or_else(|| Error::Unavailable("the log is not open".into()))
    }

    /// The radius checks of a group, and the radius of the first.
    fn radius_checks(group: &[Job]) -> (usize, Option<u32>) {
        let mut n = 0;
        let mut first = None;
        for j in group {
            if let Job::Ops { ops, .. } = j {
                for o in ops {
                    if let WOp::Check {
                        reach: Reach::Radius { radius, .. },
                        ..
                    } = o
                    {
                        n += 1;
                        first.get_or_insert(*radius);
                    }
                }
            }
        }
        (n, first)
    }

    /// Builds the index of the young rows when a group's checks will be searched together
    /// and there is none (for the radius of its first check).
    fn prepare_young(&mut self, group: &[Job]) {
        if let Some(y) = &self.young {
            // Stale slots (rows removed or replaced since it was built) beyond twice the
            // live rows it covers: built again, so that it stays proportional to them.
            let live: usize = self.delta_ids.len()
                + self
                    .cur
                    .segs
                    .iter()
                    .filter(|s| y.covers(s.seg.no))
                    .map(SegRef::live)
                    .sum::<usize>();
            if y.slots() <= 2 * live + (1 << 16) {
                return;
            }
            self.young = None;
        }
        let (n, radius) = Self::radius_checks(group);
        if let Some(r) = radius
            && n >= PARALLEL_CHECKS
        {
            let c = &self.inner.config;
            let max_rows = c.delta_limit.saturating_mul(COVERED_DELTA_LIMITS);
            self.young = Young::build(&self.cur, c.bits, r, max_rows);
        }
    }

    /// The matches of radius checks `probes` (one reach) against the state at the start of
    /// the group: the segments the young index does not cover by their tables, the others
    /// and the delta by the young index (see [`super::young`]); the same answers as
    /// [`View::search_batch`].
    fn search_young(
        &self,
        y: &Young,
        probes: &[Probe<'_>],
        reach: Reach,
    ) -> Result<Vec<Vec<super::Match>>> {
        let Reach::Radius { cosine: t, .. } = reach else {
            return self.cur.search_batch(probes, reach);
        };
        let view = &self.cur;
        let mut out = view.search_batch_in(probes, reach, |no| !y.covers(no), false)?;
        let mut flat = Vec::with_capacity(probes.len() * view.words);
        for p in probes {
            flat.extend_from_slice(p.code);
        }
        let mut slots = vec![Vec::new(); probes.len()];
        y.search_batch(&flat, &mut slots);
        for ((p, o), slots) in probes.iter().zip(&mut out).zip(&slots) {
            if slots.is_empty() {
                continue;
            }
            for &(slot, d) in slots {
                let (id, code) = y.slot(slot);
                // Live now, where the index covers, with the code indexed.
                let Some(loc) = self.locate(id) else { continue };
                if let Loc::Seg(s, _) = loc
                    && !y.covers(view.segs[s].seg.no)
                {
                    continue;
                }
                let (rows, r) = view.rows_at(loc);
                if rows.code(r) != code {
                    continue;
                }
                let c = super::rows::cosine(rows.payload(r), p.pay);
                if let Some(t) = t
                    && c.is_none_or(|c| c < t)
                {
                    continue;
                }
                o.push(super::Match {
                    id,
                    distance: d,
                    cosine: c,
                });
            }
            super::view::sort_matches(o, t.is_some());
            // An id inserted twice with one code has two slots.
            o.dedup_by(|a, b| a.id == b.id);
        }
        Ok(out)
    }

    /// The searches of a group's check-and-inserts against the state at its start, in
    /// parallel, when there are enough of them: per job, per change (`None` for changes
    /// that are not radius or cosine checks); empty when searched one by one instead.
    #[allow(clippy::type_complexity)]
    fn presearch(&self, group: &[Job]) -> Result<Vec<Vec<Option<Vec<super::Match>>>>> {
        use rayon::prelude::*;
        let checks: usize = group
            .iter()
            .map(|j| match j {
                Job::Ops { ops, .. } => ops
                    .iter()
                    .filter(|o| {
                        matches!(
                            o,
                            WOp::Check {
                                reach: Reach::Radius { .. },
                                ..
                            }
                        )
                    })
                    .count(),
                _ => 0,
            })
            .sum();
        if checks < PARALLEL_CHECKS {
            return Ok(Vec::new());
        }
        let view = &self.cur;
        group
            .iter()
            .map(|j| {
                let Job::Ops { ops, .. } = j else {
                    return Ok(Vec::new());
                };
                // The radius checks of a job, searched together when they share one reach.
                let checks: Vec<(usize, &Prepared, Reach)> = ops
                    .iter()
                    .enumerate()
                    .filter_map(|(k, op)| match op {
                        WOp::Check {
                            item,
                            reach: reach @ Reach::Radius { .. },
                            ..
                        } => Some((k, item, *reach)),
                        _ => None,
                    })
                    .collect();
                let mut found: Vec<Option<Vec<super::Match>>> = vec![None; ops.len()];
                let one_reach = checks.windows(2).all(|p| p[0].2 == p[1].2);
                if one_reach && let Some(&(_, _, reach)) = checks.first() {
                    let probes: Vec<Probe<'_>> = checks
                        .iter()
                        .map(|(_, item, _)| Probe {
                            code: &item.code,
                            pay: item.payload.as_ref(),
                        })
                        .collect();
                    let found_all = match &self.young {
                        Some(y) if matches!(reach, Reach::Radius { radius, .. } if radius == y.radius()) => {
                            self.search_young(y, &probes, reach)?
                        }
                        _ => view.search_batch(&probes, reach)?,
                    };
                    for ((k, _, _), m) in checks.iter().zip(found_all) {
                        found[*k] = Some(m);
                    }
                } else {
                    let each: Vec<Option<Vec<super::Match>>> = checks
                        .par_iter()
                        .map(|(_, item, reach)| {
                            let mut out = Vec::new();
                            view.search(
                                Probe {
                                    code: &item.code,
                                    pay: item.payload.as_ref(),
                                },
                                *reach,
                                &mut out,
                            )?;
                            Ok(Some(out))
                        })
                        .collect::<Result<_>>()?;
                    for ((k, _, _), m) in checks.iter().zip(each) {
                        found[*k] = m;
                    }
                }
                Ok(found)
            })
            .collect()
    }

    /// The matches of a check searched at the start of the group (`at_start`), brought up
    /// to date: those removed or replaced since dropped, the group's own inserts added.
    fn update_matches(
        &mut self,
        item: &Prepared,
        reach: Reach,
        at_start: Vec<super::Match>,
        out: &mut Vec<super::Match>,
    ) -> Result<()> {
        let Reach::Radius { radius, cosine: t } = reach else {
            return Err(Error::Unavailable(
                "a k-NN check is searched in order".into(),
            ));
        };
        let bits = self.inner.config.bits;
        let w = self.cur.words;
        let fresh = self.fresh.as_mut().expect("tracked");
        fresh.index_for(bits, radius);
        out.clear();
        out.extend(
            at_start
                .into_iter()
                .filter(|m| !fresh.touched.contains(&m.id)),
        );
        let mut hits = Vec::new();
        match &fresh.blocks {
            Some(b) if b.radius == radius => {
                let mut cand = Vec::new();
                b.candidates(&item.code, &mut cand);
                for j in cand {
                    let j = j as usize;
                    let d = crate::hamming::distance(&item.code, &fresh.codes[j * w..(j + 1) * w])?;
                    if d <= radius {
                        hits.push((j, d));
                    }
                }
            }
            _ => crate::hamming::scan_radius(&item.code, &fresh.codes, w, radius, |_, j, d| {
                hits.push((j, d))
            })?,
        }
        for (j, d) in hits {
            if !fresh.live[j] {
                continue;
            }
            let c = super::rows::cosine(fresh.pay[j].as_ref(), item.payload.as_ref());
            if let Some(t) = t
                && c.is_none_or(|c| c < t)
            {
                continue;
            }
            out.push(super::Match {
                id: fresh.ids[j],
                distance: d,
                cosine: c,
            });
        }
        super::view::sort_matches(out, t.is_some());
        Ok(())
    }

    /// Makes the writer's state the readers'.
    fn publish(&mut self) {
        self.inner.view.store(Arc::new(self.cur.clone()));
    }

    /// Back to the published state.
    fn rollback(&mut self) {
        self.cur = (**self.inner.view.load()).clone();
        self.young = None;
        self.delta_ids.clear();
        for (c, ch) in self.cur.chunks.iter().enumerate() {
            for p in 0..ch.rows.len() {
                if !ch.dead[p] {
                    self.delta_ids.insert(ch.rows.ids[p], Loc::Delta(c, p));
                }
            }
        }
    }

    /// Where live `id` is.
    fn locate(&self, id: u64) -> Option<Loc> {
        match self.delta_ids.get(&id) {
            Some(&l) => Some(l),
            None => self.cur.locate_in_segments_filtered(id),
        }
    }

    fn kill(&mut self, id: u64) -> bool {
        match self.locate(id) {
            Some(loc) => {
                self.cur.kill(loc);
                self.delta_ids.remove(&id);
                if let Some(f) = &mut self.fresh {
                    f.killed(id);
                }
                true
            }
            None => false,
        }
    }

    /// Inserts (replacing); true if an item was replaced.
    fn insert(&mut self, id: u64, code: &[u64], payload: &Payload) -> bool {
        let replaced = self.kill(id);
        let loc = self.cur.push(id, code, payload.as_ref());
        self.delta_ids.insert(id, loc);
        if let Some(y) = &mut self.young {
            y.add(id, code);
        }
        if let Some(f) = &mut self.fresh {
            f.inserted(id, code, payload);
        }
        replaced
    }

    fn remove(&mut self, id: u64) -> bool {
        self.kill(id)
    }

    /// Logs a record of the current payload in `scratch`.
    fn log(&mut self) {
        self.cur.lsn += 1;
        wal::frame(self.cur.lsn, &self.scratch, &mut self.buf);
    }

    /// Applies one change (a check with its matches at the start of the group, when
    /// searched then); the outcome and whether it was logged.
    fn apply(&mut self, op: WOp, at_start: Option<Vec<super::Match>>) -> Result<(Outcome, bool)> {
        let r = match op {
            WOp::Insert { id, item } => {
                let replaced = self.insert(id, &item.code, &item.payload);
                wal::encode_insert(id, &item.code, &item.payload, &mut self.scratch);
                self.log();
                (Outcome::Inserted { replaced }, true)
            }
            WOp::Check { id, item, reach } => {
                let mut found = std::mem::take(&mut self.search);
                match at_start {
                    Some(m) if self.fresh.is_some() => {
                        self.update_matches(&item, reach, m, &mut found)?
                    }
                    _ => self.cur.search(
                        Probe {
                            code: &item.code,
                            pay: item.payload.as_ref(),
                        },
                        reach,
                        &mut found,
                    )?,
                }
                let r = if found.is_empty() {
                    self.insert(id, &item.code, &item.payload);
                    wal::encode_insert(id, &item.code, &item.payload, &mut self.scratch);
                    self.log();
                    (
                        Outcome::Checked(CheckOutcome {
                            inserted: true,
                            matches: Vec::new(),
                        }),
                        true,
                    )
                } else {
                    (
                        Outcome::Checked(CheckOutcome {
                            inserted: false,
                            matches: found.clone(),
                        }),
                        false,
                    )
                };
                self.search = found;
                r
            }
            WOp::Remove { id } => {
                let found = self.remove(id);
                if found {
                    wal::encode_remove(id, &mut self.scratch);
                    self.log();
                }
                (Outcome::Removed { found }, found)
            }
        };
        self.maybe_freeze()?;
        Ok(r)
    }

    fn maybe_freeze(&mut self) -> Result<()> {
        if self.cur.delta_rows() >= self.inner.config.delta_limit {
            self.freeze()?;
        }
        Ok(())
    }

    /// The delta becomes a segment.
    fn freeze(&mut self) -> Result<()> {
        let rows = self.cur.delta_live();
        if rows.len() > 0 {
            let no = self
                .inner
                .counters
                .next_segment
                .fetch_add(1, Ordering::Relaxed);
            let c = &self.inner.config;
            let seg = Segment::build(no, c.bits, &c.index, rows)?;
            if let Some(y) = &mut self.young {
                y.frozen(no);
            }
            self.cur.segs.push(SegRef {
                seg: Arc::new(seg),
                dead: Arc::default(),
            });
        }
        self.cur.chunks.clear();
        self.delta_ids.clear();
        if let Some(bg) = &self.bg {
            let _ = bg.send(Bg::Wake);
        }
        Ok(())
    }

    /// Puts a merge's output in place of its inputs, marking dead the rows removed since
    /// the merge started.
    fn replace(
        &mut self,
        inputs: &[u64],
        dead_at_start: &[Arc<RoaringBitmap>],
        output: Option<Arc<Segment>>,
    ) -> Result<()> {
        let pos = inputs
            .iter()
            .map(|no| self.cur.segs.iter().position(|s| s.seg.no == *no))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| Error::Unavailable("a merged segment is gone".into()))?;
        let mut dead = RoaringBitmap::new();
        if let Some(out) = &output {
            for (k, &p) in pos.iter().enumerate() {
                let sr = &self.cur.segs[p];
                for row in sr.dead.iter() {
                    if !dead_at_start[k].contains(row)
                        && let Some(r) = out.find(sr.seg.rows.ids[row as usize])
                    {
                        dead.insert(r as u32);
                    }
                }
            }
        }
        let at = *pos.iter().min().expect("inputs");
        let mut segs = Vec::with_capacity(self.cur.segs.len());
        for (i, s) in self.cur.segs.drain(..).enumerate() {
            if i == at
                && let Some(out) = &output
            {
                segs.push(SegRef {
                    seg: Arc::clone(out),
                    dead: Arc::new(dead.clone()),
                });
            }
            if !pos.contains(&i) {
                segs.push(s);
            }
        }
        self.cur.segs = segs;
        if let Some(y) = &mut self.young
            && !y.merged(inputs, output.as_ref().map(|o| (o.no, o.len())))
        {
            self.young = None;
        }
        Ok(())
    }

    /// A checkpoint's cut.
    fn cut(&mut self) -> Result<Arc<View>> {
        let frozen = self.freeze();
        let next = self.cur.lsn + 1;
        let rotated = self.wal().and_then(|w| w.rotate(next));
        self.publish();
        frozen?;
        rotated?;
        self.inner.counters.log_bytes.store(0, Ordering::Relaxed);
        Ok(self.inner.view.load_full())
    }
}
