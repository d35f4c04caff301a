//! Running library calls off the GIL, on a thread pool of the caller's size, in chunks
//! between which Ctrl-C is noticed.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::errors::value_error;

/// Pools built so far, by thread count (a pool is built once per count and kept).
static POOLS: Mutex<Vec<(usize, Arc<ThreadPool>)>> = Mutex::new(Vec::new());

/// The pool for a `threads=` argument (`None`: rayon's global pool, all cores). The count
/// follows the library's rule ([`simlsh::cpu::threads`]): `-1` for every core, counts above
/// the cores clamped to them.
fn pool(threads: Option<i64>) -> PyResult<Option<Arc<ThreadPool>>> {
    let Some(requested) = threads else {
        return Ok(None);
    };
    let n = simlsh::cpu::threads(Some(requested)).map_err(|e| value_error(e.to_string()))?;
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
    pub fn new(threads: Option<i64>) -> PyResult<Self> {
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
