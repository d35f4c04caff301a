//! The background thread: merges segments and checkpoints.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use super::Inner;
use super::manifest;
use super::rows::Rows;
use super::segment::Segment;
use super::view::{SegRef, View};
use super::wal;
use super::writer::{Job, Reply};
use crate::error::{Error, Result};

/// Segments of one size class merged together.
pub(crate) const FAN_IN: usize = 8;

/// A checkpoint is also written this long after a change, when the log has fewer bytes
/// than the limit.
const CHECKPOINT_AFTER: Duration = Duration::from_secs(60);

/// Messages to the background thread.
pub(crate) enum Bg {
    /// Segments changed: look for merges.
    Wake,
    /// Checkpoint now.
    Checkpoint(Reply<()>),
    /// Checkpoint and stop.
    Stop(Reply<()>),
}

pub(crate) struct Background {
    inner: Arc<Inner>,
    jobs: SyncSender<Job>,
    /// Segments with files on disk.
    persisted: HashSet<u64>,
}

/// The size class of a segment of `n` live rows: its order of magnitude in powers of the
/// fan-in, from the delta limit.
fn class(n: usize, base: usize) -> u32 {
    let mut c = 0;
    let mut size = base.max(1) * FAN_IN;
    while n >= size {
        c += 1;
        size = size.saturating_mul(FAN_IN);
    }
    c
}

/// The segments to merge next: a segment mostly dead, or `FAN_IN` segments of the
/// smallest crowded size class.
pub(crate) fn plan(view: &View, base: usize) -> Option<Vec<usize>> {
    if let Some(i) = view
        .segs
        .iter()
        .position(|s| !s.dead.is_empty() && s.dead.len() as usize * 4 >= s.seg.len())
    {
        return Some(vec![i]);
    }
    let mut by_class: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (i, s) in view.segs.iter().enumerate() {
        by_class.entry(class(s.live(), base)).or_default().push(i);
    }
    by_class
        .into_values()
        .find(|v| v.len() >= FAN_IN)
        .map(|v| v.into_iter().take(FAN_IN).collect())
}

/// The live rows of `segs`, sorted by id.
fn merged_rows(segs: &[SegRef], words: usize, content: super::Content) -> Rows {
    let mut live: Vec<(u64, u32, u32)> = Vec::new();
    for (s, sr) in segs.iter().enumerate() {
        for r in 0..sr.seg.len() {
            if !sr.dead.contains(r as u32) {
                live.push((sr.seg.rows.ids[r], s as u32, r as u32));
            }
        }
    }
    live.sort_unstable();
    let mut rows = Rows::with_capacity(words, content, live.len());
    for (id, s, r) in live {
        let src = &segs[s as usize].seg.rows;
        rows.push(id, src.code(r as usize), src.payload(r as usize));
    }
    rows
}

impl Background {
    pub(crate) fn new(inner: Arc<Inner>, jobs: SyncSender<Job>, persisted: HashSet<u64>) -> Self {
        Background {
            inner,
            jobs,
            persisted,
        }
    }

    pub(crate) fn run(mut self, rx: Receiver<Bg>) {
        let mut last = Instant::now();
        let mut last_lsn = self.inner.view.load().lsn;
        let mut merged = false;
        loop {
            // After a merge, the next one (a cascade to the next size class) starts at once.
            let wait = if merged {
                Duration::ZERO
            } else {
                Duration::from_secs(1)
            };
            match rx.recv_timeout(wait) {
                Ok(Bg::Stop(reply)) => {
                    reply(self.checkpoint());
                    return;
                }
                Ok(Bg::Checkpoint(reply)) => {
                    let r = self.checkpoint();
                    if r.is_ok() {
                        last = Instant::now();
                    }
                    reply(r);
                }
                Ok(Bg::Wake) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            let inner = Arc::clone(&self.inner);
            let merging = &inner.counters.merging;
            merging.store(true, Ordering::SeqCst);
            merged = match self.merge_once() {
                Ok(m) => m,
                Err(e) => {
                    self.note(e);
                    false
                }
            };
            merging.store(false, Ordering::SeqCst);
            let lsn = self.inner.view.load().lsn;
            let bytes = self.inner.counters.log_bytes.load(Ordering::Relaxed);
            if bytes >= self.inner.checkpoint_bytes
                || (lsn != last_lsn && last.elapsed() >= CHECKPOINT_AFTER)
            {
                match self.checkpoint() {
                    Ok(()) => {
                        last = Instant::now();
                        last_lsn = lsn;
                    }
                    Err(e) => self.note(e),
                }
            }
        }
    }

    fn note(&self, e: Error) {
        *self.inner.background_error.lock().expect("not poisoned") = Some(e.to_string());
    }

    /// Sends a job to the writer and waits for its reply.
    fn ask<T: Send + 'static>(&self, make: impl FnOnce(Reply<T>) -> Job) -> Result<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.jobs
            .send(make(Box::new(move |r| {
                let _ = tx.send(r);
            })))
            .map_err(|_| Error::Unavailable("the writer stopped".into()))?;
        rx.recv()
            .map_err(|_| Error::Unavailable("the writer stopped".into()))?
    }

    /// One merge, if any is due; true when one was done.
    fn merge_once(&mut self) -> Result<bool> {
        let view = self.inner.view.load_full();
        let c = &self.inner.config;
        let Some(pick) = plan(&view, c.delta_limit) else {
            return Ok(false);
        };
        let segs: Vec<SegRef> = pick.iter().map(|&i| view.segs[i].clone()).collect();
        let rows = merged_rows(&segs, view.words, c.content);
        let output = if rows.len() == 0 {
            None
        } else {
            let no = self
                .inner
                .counters
                .next_segment
                .fetch_add(1, Ordering::Relaxed);
            Some(Arc::new(Segment::build(no, c.bits, &c.index, rows)?))
        };
        let inputs: Vec<u64> = segs.iter().map(|s| s.seg.no).collect();
        let dead_at_start = segs.iter().map(|s| Arc::clone(&s.dead)).collect();
        drop(segs);
        drop(view);
        self.ask(|reply| Job::Replace {
            inputs,
            dead_at_start,
            output,
            reply,
        })?;
        self.inner.counters.merges.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Writes a checkpoint: the cut's segments not yet on disk, the manifest, then removes
    /// the log files and segment files it no longer needs.
    fn checkpoint(&mut self) -> Result<()> {
        let view = self.ask(|reply| Job::Cut { reply })?;
        let dir = self.inner.dir.clone();
        let c = &self.inner.config;
        for sr in &view.segs {
            if !self.persisted.contains(&sr.seg.no) {
                sr.seg.write(&dir, c.content)?;
                self.persisted.insert(sr.seg.no);
            }
        }
        crate::fs::sync_dir(&dir)?;
        let state = manifest::State {
            lsn: view.lsn,
            next_segment: self.inner.counters.next_segment.load(Ordering::Relaxed),
            segments: view
                .segs
                .iter()
                .map(|s| (s.seg.no, Arc::clone(&s.dead)))
                .collect(),
        };
        manifest::write(&dir, c, &state)?;
        self.inner
            .counters
            .checkpoint_lsn
            .store(view.lsn, Ordering::Relaxed);
        self.inner
            .counters
            .checkpoints
            .fetch_add(1, Ordering::Relaxed);
        // The log before the cut and the segments the manifest does not name are no longer
        // needed.
        for (first, path) in wal::list(&dir)? {
            if first <= view.lsn {
                let _ = std::fs::remove_file(path);
            }
        }
        let keep: HashSet<u64> = view.segs.iter().map(|s| s.seg.no).collect();
        self.persisted.retain(|n| keep.contains(n));
        remove_unreferenced(&dir, &keep);
        crate::fs::sync_dir(&dir)
    }
}

/// Removes the segment files of `dir` whose numbers are not in `keep` (left by merges,
/// or by a checkpoint interrupted before its manifest).
pub(crate) fn remove_unreferenced(dir: &Path, keep: &HashSet<u64>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let no = name
            .strip_prefix("seg-")
            .and_then(|s| s.split('.').next())
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        if let Some(no) = no
            && !keep.contains(&no)
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
