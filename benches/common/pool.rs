//! The one-thread rayon pool the benchmarks run in, on the benchmark's own thread (so that
//! the thread's CPU time, `cpu_time.rs`, is the work's): built once, so that no measurement
//! includes starting a thread. Benchmarks include it with
//! `#[path = "common/pool.rs"] mod pool;`.

use std::sync::OnceLock;

use rayon::ThreadPool;

/// The 1-thread pool, on the calling thread (the first caller's: the benchmark's).
pub fn pool() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .use_current_thread()
            .build()
            .expect("a 1-thread pool")
    })
}
