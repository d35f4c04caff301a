//! Running library calls off the GIL, on a thread pool of the caller's size, in chunks
//! between which Ctrl-C is noticed.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::errors::value_error;

/// Pools built so far, by thread count (a pool is built once per count and kept).
static POOLS: Mutex<Vec<(usize, Arc<ThreadPool>)>> = Mutex::new(Vec::new());

/// The pool for a `threads=` argument, read as scikit-learn reads `n_jobs`: `None` or `-1`
/// is rayon's global pool (all cores), `n ≥ 1` a pool of `n` threads, `n ≤ -2` all cores but
/// `-1 - n` (at least one thread); `0` is an error.
fn pool(threads: Option<isize>) -> PyResult<Option<Arc<ThreadPool>>> {
    let n = match threads {
        None | Some(-1) => return Ok(None),
        Some(0) => {
            return Err(value_error(
                "threads must be at least 1, or -1 (or None) for all cores, got 0",
            ));
        }
        Some(n) if n > 0 => n.unsigned_abs(),
        Some(n) => (rayon::current_num_threads() + 1)
            .saturating_sub(n.unsigned_abs())
            .max(1),
    };
    let mut pools = POOLS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, p)) = pools.iter().find(|(k, _)| *k == n) {
        return Ok(Some(p.clone()));
    }
    let p = Arc::new(
        ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("simlsh-{i}"))
            .build()
            .map_err(|e| value_error(format!("cannot start {n} threads: {e}")))?,
    );
    pools.push((n, p.clone()));
    Ok(Some(p))
}

/// A thread-count setting resolved once per call.
pub struct Threads(Option<Arc<ThreadPool>>);

impl Threads {
    /// The pool for a `threads=` argument.
    pub fn new(threads: Option<isize>) -> PyResult<Self> {
        Ok(Threads(pool(threads)?))
    }

    /// Runs `f` without the GIL, inside the pool.
    pub fn run<T: Send>(&self, py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
        py.detach(|| match &self.0 {
            Some(p) => p.install(f),
            None => f(),
        })
    }

    /// Runs `f` over `0..n` in chunks of `chunk` items, each without the GIL, checking for
    /// Ctrl-C (and other signals) before each chunk: a `KeyboardInterrupt` stops the loop.
    pub fn chunked(
        &self,
        py: Python<'_>,
        n: usize,
        chunk: usize,
        mut f: impl FnMut(Range<usize>) -> PyResult<()> + Send,
    ) -> PyResult<()> {
        let mut lo = 0;
        while lo < n {
            py.check_signals()?;
            let hi = n.min(lo + chunk.max(1));
            self.run(py, || f(lo..hi))?;
            lo = hi;
        }
        Ok(())
    }
}
