//! A criterion measurement of the calling thread's CPU time (Linux
//! `/proc/thread-self/schedstat`), less disturbed than wall-clock time on a machine shared
//! with other jobs. Benchmarks include it with `#[path = "common/cpu_time.rs"] mod cpu_time;`.

use criterion::measurement::{Measurement, ValueFormatter, WallTime};

/// CPU time of the calling thread (`/proc/thread-self/schedstat`), in nanoseconds.
pub struct CpuTime;

static WALL: WallTime = WallTime;

pub fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .expect("per-thread CPU time needs Linux /proc/thread-self/schedstat")
}

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }

    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns() - start
    }

    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        WALL.formatter()
    }
}
