//! Counters and latency histograms, written in the Prometheus text format.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use simlsh::store::Stats;

/// The endpoints counted apart.
pub const ENDPOINTS: [&str; 8] = [
    "query",
    "update",
    "check_insert",
    "get",
    "stats",
    "health",
    "metrics",
    "other",
];

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Statuses counted apart.
const STATUSES: [u16; 11] = [200, 400, 401, 403, 404, 405, 408, 413, 500, 503, 507];

#[derive(Default)]
struct Endpoint {
    by_status: [AtomicU64; STATUSES.len() + 1],
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

/// The server's metrics.
#[derive(Default)]
pub struct Metrics {
    endpoints: [Endpoint; ENDPOINTS.len()],
    /// Open connections.
    pub connections: AtomicU64,
    /// Connections refused at the limit.
    pub refused_connections: AtomicU64,
    /// Connections closed idle or too slow.
    pub timeouts: AtomicU64,
}

impl Metrics {
    /// Records a request of endpoint `e` (an index of [`ENDPOINTS`]).
    pub fn record(&self, e: usize, status: u16, seconds: f64) {
        let ep = &self.endpoints[e.min(ENDPOINTS.len() - 1)];
        let s = STATUSES
            .iter()
            .position(|&x| x == status)
            .unwrap_or(STATUSES.len());
        ep.by_status[s].fetch_add(1, Ordering::Relaxed);
        ep.count.fetch_add(1, Ordering::Relaxed);
        ep.sum_micros
            .fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
        if let Some(b) = BUCKETS.iter().position(|&b| seconds <= b) {
            ep.buckets[b].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The Prometheus text of the metrics and the store's figures.
    pub fn render(&self, s: &Stats) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "# TYPE simlsh_requests_total counter");
        for (e, name) in ENDPOINTS.iter().enumerate() {
            let ep = &self.endpoints[e];
            for (i, st) in STATUSES
                .iter()
                .map(|s| s.to_string())
                .chain(["other".to_string()])
                .enumerate()
            {
                let n = ep.by_status[i].load(Ordering::Relaxed);
                if n > 0 {
                    let _ = writeln!(
                        o,
                        "simlsh_requests_total{{endpoint=\"{name}\",status=\"{st}\"}} {n}"
                    );
                }
            }
        }
        let _ = writeln!(o, "# TYPE simlsh_request_seconds histogram");
        for (e, name) in ENDPOINTS.iter().enumerate() {
            let ep = &self.endpoints[e];
            let count = ep.count.load(Ordering::Relaxed);
            if count == 0 {
                continue;
            }
            let mut cum = 0;
            for (b, le) in BUCKETS.iter().enumerate() {
                cum += ep.buckets[b].load(Ordering::Relaxed);
                let _ = writeln!(
                    o,
                    "simlsh_request_seconds_bucket{{endpoint=\"{name}\",le=\"{le}\"}} {cum}"
                );
            }
            let _ = writeln!(
                o,
                "simlsh_request_seconds_bucket{{endpoint=\"{name}\",le=\"+Inf\"}} {count}"
            );
            let _ = writeln!(
                o,
                "simlsh_request_seconds_sum{{endpoint=\"{name}\"}} {}",
                ep.sum_micros.load(Ordering::Relaxed) as f64 / 1e6
            );
            let _ = writeln!(
                o,
                "simlsh_request_seconds_count{{endpoint=\"{name}\"}} {count}"
            );
        }
        let gauges: [(&str, &str, u64); 13] = [
            ("simlsh_items", "gauge", s.items),
            ("simlsh_segments", "gauge", s.segments as u64),
            ("simlsh_delta_items", "gauge", s.delta as u64),
            ("simlsh_dead_items", "gauge", s.dead),
            ("simlsh_lsn", "gauge", s.lsn),
            ("simlsh_log_bytes", "gauge", s.log_bytes),
            ("simlsh_heap_bytes", "gauge", s.heap_bytes as u64),
            ("simlsh_mapped_bytes", "gauge", s.mapped_bytes as u64),
            ("simlsh_writes_total", "counter", s.writes),
            ("simlsh_groups_total", "counter", s.groups),
            ("simlsh_merges_total", "counter", s.merges),
            ("simlsh_checkpoints_total", "counter", s.checkpoints),
            (
                "simlsh_connections",
                "gauge",
                self.connections.load(Ordering::Relaxed),
            ),
        ];
        for (name, kind, v) in gauges {
            let _ = writeln!(o, "# TYPE {name} {kind}\n{name} {v}");
        }
        let _ = writeln!(
            o,
            "# TYPE simlsh_refused_connections_total counter\nsimlsh_refused_connections_total {}",
            self.refused_connections.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            o,
            "# TYPE simlsh_timeouts_total counter\nsimlsh_timeouts_total {}",
            self.timeouts.load(Ordering::Relaxed)
        );
        if let Some(rss) = resident_bytes() {
            let _ = writeln!(
                o,
                "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}"
            );
        }
        o
    }
}

/// Resident bytes of this process (Linux: `/proc/self/statm`).
pub fn resident_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
