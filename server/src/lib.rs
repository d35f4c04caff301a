//! `simlsh serve`: an HTTP/1.1 + JSON near-duplicate lookup service over a durable
//! [`simlsh::store::Store`] (`server/openapi.yaml` describes the API).
//!
//! - **Endpoints**: `POST /v1/query` (batch, by code, vector or text, radius, cosine or
//!   `k`), `POST /v1/update` (batch insert and remove, `u64` ids), `POST /v1/check_insert`
//!   (batch check-and-insert), `GET /v1/items/{id}`, `GET /v1/stats`, `GET /metrics`
//!   (Prometheus), `GET /health` (liveness), `GET /ready` (readiness: 503 while starting or
//!   draining).
//! - **Freshness**: a write is acknowledged once durable and published: every query that
//!   starts after the acknowledgement sees it.
//! - **Readers never wait for the writer**: queries search the published state
//!   ([`simlsh::store`]).
//! - **Limits**: body size (413), batch size (413), `k`, open connections (beyond, a 503
//!   and the connection closed), time to finish a request once its headers are in (a 408),
//!   time without a complete request header (an idle keep-alive connection or a client
//!   sending its headers slowly is closed); backpressure: a full write queue is a 503 with
//!   `Retry-After`, never an unbounded queue.
//! - **Shutdown**: SIGTERM or SIGINT stops accepting, marks the server not ready, lets the
//!   requests in progress finish, checkpoints the store and returns.
//! - **Access**: listens on a loopback address by default
//!   ([`simlsh::store::DEFAULT_LISTEN`]); an address that is not loopback is
//!   refused unless a token is configured. A read-write token allows every call, a read-only
//!   token the queries, `get`, `stats` and `metrics` (`Authorization: Bearer TOKEN`).
//!   Tokens and documents' text are never logged.

pub mod api;
pub mod metrics;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use simlsh::store::{Durability, OpenOptions, Store};
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use api::{ApiError, Limits};
use metrics::Metrics;

/// The server's settings.
#[derive(Clone)]
pub struct Config {
    /// The store's directory.
    pub store: PathBuf,
    /// Address to listen on (default [`simlsh::store::DEFAULT_LISTEN`]).
    pub listen: SocketAddr,
    /// The read-write token.
    pub token: Option<String>,
    /// The read-only token.
    pub read_token: Option<String>,
    /// Largest request body, bytes (default 16 MiB).
    pub max_body: usize,
    /// Largest batch of queries, changes or items (default 10,000).
    pub max_batch: usize,
    /// Largest `k` (default 1,000).
    pub max_k: usize,
    /// Most open connections (default 1,024).
    pub max_connections: usize,
    /// Time to read a request's body and answer it (default 30 s).
    pub request_timeout: Duration,
    /// Time a connection may go without a complete request header: a keep-alive
    /// connection idle that long, or a client sending its headers that slowly, is closed
    /// (default 30 s).
    pub idle_timeout: Duration,
    /// Time the requests in progress get to finish at shutdown (default 30 s).
    pub drain_timeout: Duration,
    /// Worker threads (default: the cores).
    pub threads: usize,
    /// The store's durability (default the library's, [`Durability::default`]).
    pub durability: Durability,
    /// Writes waiting for the writer beyond which writes get a 503 (default 1,024).
    pub queue: usize,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the tokens.
        f.debug_struct("Config")
            .field("store", &self.store)
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("read_token", &self.read_token.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

impl Config {
    /// The defaults for the store at `store`.
    pub fn new(store: PathBuf) -> Self {
        Config {
            store,
            listen: simlsh::store::DEFAULT_LISTEN,
            token: None,
            read_token: None,
            max_body: 16 << 20,
            max_batch: 10_000,
            max_k: 1_000,
            max_connections: 1_024,
            request_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(30),
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            durability: Durability::default(),
            queue: simlsh::store::DEFAULT_QUEUE,
        }
    }

    /// Checks the settings: a non-loopback address needs a token; tokens are not empty.
    ///
    /// # Errors
    /// A message saying what to change.
    pub fn check(&self) -> anyhow::Result<()> {
        for t in [&self.token, &self.read_token].into_iter().flatten() {
            anyhow::ensure!(
                t.len() >= 16 && !t.chars().any(char::is_whitespace),
                "an access token needs at least 16 characters and no whitespace"
            );
        }
        anyhow::ensure!(
            self.listen.ip().is_loopback() || self.token.is_some() || self.read_token.is_some(),
            "refusing to listen on {} (not a loopback address) without an access token: set \
             SIMLSH_TOKEN (read-write) or SIMLSH_READ_TOKEN (read-only), or listen on 127.0.0.1",
            self.listen.ip()
        );
        anyhow::ensure!(
            self.max_batch >= 1 && self.max_connections >= 1 && self.threads >= 1,
            "batch, connection and thread limits must be at least 1"
        );
        Ok(())
    }
}

/// What the handlers share.
struct State {
    store: Store,
    config: Config,
    limits: Limits,
    metrics: Metrics,
    ready: AtomicBool,
}

/// Access a request needs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Open,
    Read,
    Write,
}

/// Compares in time independent of where the strings differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn authorized(st: &State, req: &Request<Incoming>, need: Access) -> Result<(), ApiError> {
    if need == Access::Open || (st.config.token.is_none() && st.config.read_token.is_none()) {
        return Ok(());
    }
    let given = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::as_bytes);
    let Some(given) = given else {
        return Err(ApiError::new(
            401,
            "an access token is required (Authorization: Bearer TOKEN)",
        ));
    };
    let rw = st
        .config
        .token
        .as_ref()
        .is_some_and(|t| same(t.as_bytes(), given));
    let ro = st
        .config
        .read_token
        .as_ref()
        .is_some_and(|t| same(t.as_bytes(), given));
    match (need, rw, ro) {
        (_, true, _) | (Access::Read, _, true) => Ok(()),
        (Access::Write, false, true) => Err(ApiError::new(403, "the read-only token cannot write")),
        _ => Err(ApiError::new(401, "the access token is not valid")),
    }
}

fn json(status: u16, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn error(e: &ApiError) -> Response<Full<Bytes>> {
    let mut r = json(e.status, e.body());
    if let Some(s) = e.retry_after {
        r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(s));
    }
    r
}

/// Reads a body within the size limit.
async fn body(st: &State, req: Request<Incoming>) -> Result<Bytes, ApiError> {
    let max = st.config.max_body;
    let too_big = || ApiError::new(413, format!("the request body exceeds {max} bytes"));
    if let Some(n) = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && n > max as u64
    {
        return Err(too_big());
    }
    match Limited::new(req.into_body(), max).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_big()),
        Err(e) => Err(ApiError::bad(format!("cannot read the request body: {e}"))),
    }
}

/// Applies changes through the store's writer without blocking a worker thread.
async fn apply(st: &State, ops: Vec<simlsh::store::Op>) -> Result<Vec<u8>, ApiError> {
    let (tx, rx) = oneshot::channel();
    st.store.submit(
        ops,
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    )?;
    let outcomes = rx
        .await
        .map_err(|_| ApiError::new(503, "the store's writer stopped"))??;
    Ok(api::encode_outcomes(&outcomes))
}

async fn route(
    st: &State,
    req: Request<Incoming>,
) -> (usize, Result<Response<Full<Bytes>>, ApiError>) {
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let (endpoint, need) = match (&method, path.as_str()) {
        (&Method::POST, "/v1/query") => (0, Access::Read),
        (&Method::POST, "/v1/update") => (1, Access::Write),
        (&Method::POST, "/v1/check_insert") => (2, Access::Write),
        (&Method::GET, p) if p.starts_with("/v1/items/") => (3, Access::Read),
        (&Method::GET, "/v1/stats") => (4, Access::Read),
        (&Method::GET, "/health") | (&Method::GET, "/ready") => (5, Access::Open),
        (&Method::GET, "/metrics") => (6, Access::Read),
        (
            _,
            "/v1/query" | "/v1/update" | "/v1/check_insert" | "/v1/stats" | "/health" | "/ready"
            | "/metrics",
        ) => {
            return (
                7,
                Err(ApiError::new(
                    405,
                    format!("{method} is not allowed on {path}"),
                )),
            );
        }
        _ => return (7, Err(ApiError::new(404, format!("no endpoint {path}")))),
    };
    if let Err(e) = authorized(st, &req, need) {
        return (endpoint, Err(e));
    }
    let r = async {
        Ok(match endpoint {
            0 => {
                let b = body(st, req).await?;
                let (qs, within) = api::decode_query(&st.store, &b, &st.limits)?;
                let results = st.store.query_batch(&qs, within)?;
                json(200, api::encode_query(&results))
            }
            1 => {
                let b = body(st, req).await?;
                let ops = api::decode_update(&st.store, &b, &st.limits)?;
                json(200, apply(st, ops).await?)
            }
            2 => {
                let b = body(st, req).await?;
                let ops = api::decode_check(&st.store, &b, &st.limits)?;
                json(200, apply(st, ops).await?)
            }
            3 => {
                let id: u64 = path["/v1/items/".len()..]
                    .parse()
                    .map_err(|_| ApiError::bad("an item id is a u64"))?;
                match st.store.get(id) {
                    Some(r) => json(200, api::encode_record(&r)),
                    None => return Err(ApiError::new(404, format!("no item {id}"))),
                }
            }
            4 => {
                let s = st.store.stats();
                let v = serde_json::json!({
                    "items": s.items, "bits": s.bits, "content": s.content,
                    "segments": s.segments, "delta": s.delta, "dead": s.dead,
                    "lsn": s.lsn, "checkpoint_lsn": s.checkpoint_lsn, "log_bytes": s.log_bytes,
                    "heap_bytes": s.heap_bytes, "mapped_bytes": s.mapped_bytes,
                    "resident_bytes": metrics::resident_bytes(),
                    "writes": s.writes, "groups": s.groups, "merges": s.merges,
                    "checkpoints": s.checkpoints, "background_error": s.background_error,
                    "index": st.store.index_spec().to_string(),
                    "signer": st.store.signer_spec().map(|s| s.to_string()),
                    "recall": st.store.recall(),
                });
                json(200, serde_json::to_vec(&v).unwrap_or_default())
            }
            5 if path == "/health" => json(200, br#"{"status":"ok"}"#.to_vec()),
            5 => {
                if st.ready.load(Ordering::Relaxed) {
                    json(200, br#"{"ready":true}"#.to_vec())
                } else {
                    let mut e = ApiError::new(503, "not ready (draining)");
                    e.retry_after = Some(5);
                    return Err(e);
                }
            }
            _ => {
                let mut r =
                    Response::new(Full::new(Bytes::from(st.metrics.render(&st.store.stats()))));
                r.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; version=0.0.4"),
                );
                r
            }
        })
    }
    .await;
    (endpoint, r)
}

/// Activity of a connection, for its idle timeout.
struct Activity {
    in_flight: AtomicU64,
    last: AtomicU64,
}

async fn handle(
    st: Arc<State>,
    act: Arc<Activity>,
    epoch: Instant,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    act.in_flight.fetch_add(1, Ordering::Relaxed);
    let start = Instant::now();
    let (endpoint, r) = match tokio::time::timeout(st.config.request_timeout, route(&st, req)).await
    {
        Ok(x) => x,
        Err(_) => (7, Err(ApiError::new(408, "the request took too long"))),
    };
    let resp = match r {
        Ok(resp) => resp,
        Err(e) => error(&e),
    };
    st.metrics.record(
        endpoint,
        resp.status().as_u16(),
        start.elapsed().as_secs_f64(),
    );
    act.last
        .store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    act.in_flight.fetch_sub(1, Ordering::Relaxed);
    Ok(resp)
}

/// Answers a connection beyond the limit with a 503 and closes it.
async fn refuse(stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let body = ApiError::new(503, "too many connections").body();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let mut s = stream;
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        s.write_all(head.as_bytes()).await?;
        s.write_all(&body).await?;
        s.shutdown().await
    })
    .await;
}

async fn connection(
    st: Arc<State>,
    stream: tokio::net::TcpStream,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let epoch = Instant::now();
    let act = Arc::new(Activity {
        in_flight: AtomicU64::new(0),
        last: AtomicU64::new(0),
    });
    let svc = {
        let (st, act) = (Arc::clone(&st), Arc::clone(&act));
        service_fn(move |req| handle(Arc::clone(&st), Arc::clone(&act), epoch, req))
    };
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(st.config.idle_timeout)
        .keep_alive(true)
        .max_buf_size(64 * 1024);
    let conn = builder.serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(conn);
    let idle = st.config.idle_timeout;
    let mut tick = tokio::time::interval(Duration::from_millis(
        (idle.as_millis() as u64 / 4).clamp(10, 1000),
    ));
    loop {
        tokio::select! {
            _ = conn.as_mut() => break,
            _ = stop.changed() => {
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(st.config.drain_timeout, conn.as_mut()).await;
                break;
            }
            _ = tick.tick() => {
                let quiet = epoch.elapsed().as_millis() as u64 - act.last.load(Ordering::Relaxed);
                if act.in_flight.load(Ordering::Relaxed) == 0 && quiet >= idle.as_millis() as u64 {
                    st.metrics.timeouts.fetch_add(1, Ordering::Relaxed);
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(1), conn.as_mut()).await;
                    break;
                }
            }
        }
    }
}

/// Opens the store and serves it until SIGTERM or SIGINT, then drains, checkpoints and
/// returns. Writes the address it listens on to stderr.
///
/// # Errors
/// A configuration refused by [`Config::check`], a store that does not open, an address
/// that cannot be bound, a final checkpoint that fails.
pub fn run(config: Config) -> anyhow::Result<()> {
    run_with(config, None, None)
}

/// [`run`], also sending the address to `ready_addr` once it accepts connections, and
/// stopping as on SIGTERM when `stop` receives (or is dropped).
///
/// # Errors
/// As [`run`].
pub fn run_with(
    config: Config,
    ready_addr: Option<std::sync::mpsc::Sender<SocketAddr>>,
    stop: Option<oneshot::Receiver<()>>,
) -> anyhow::Result<()> {
    config.check()?;
    let store = OpenOptions::new()
        .durability(config.durability)
        .queue(config.queue)
        .open(&config.store)?;
    if let Some(t) = &store.recovery().torn {
        eprintln!(
            "simlsh serve: warning: {}: cut a torn log tail of {} bytes at byte {} (an \
             interrupted write that was never acknowledged)",
            t.file.display(),
            t.dropped,
            t.offset
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads)
        .enable_all()
        .build()?;
    let limits = Limits {
        max_batch: config.max_batch,
        max_k: config.max_k,
    };
    let st = Arc::new(State {
        store,
        config,
        limits,
        metrics: Metrics::default(),
        ready: AtomicBool::new(false),
    });
    rt.block_on(serve(Arc::clone(&st), ready_addr, stop))?;
    drop(rt);
    let st = Arc::try_unwrap(st).map_err(|_| anyhow::anyhow!("requests still hold the store"))?;
    st.store.close()?;
    eprintln!("simlsh serve: stopped; the store is checkpointed");
    Ok(())
}

async fn serve(
    st: Arc<State>,
    ready_addr: Option<std::sync::mpsc::Sender<SocketAddr>>,
    stop: Option<oneshot::Receiver<()>>,
) -> anyhow::Result<()> {
    let stop = async move {
        match stop {
            Some(rx) => {
                let _ = rx.await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(stop);
    let listener = TcpListener::bind(st.config.listen).await?;
    let addr = listener.local_addr()?;
    eprintln!(
        "simlsh serve: {} ({} items, {}-bit {}) on http://{addr}",
        st.config.store.display(),
        st.store.len(),
        st.store.bits(),
        st.store.content().name()
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut tasks = tokio::task::JoinSet::new();
    st.ready.store(true, Ordering::Relaxed);
    if let Some(tx) = ready_addr {
        let _ = tx.send(addr);
    }
    loop {
        tokio::select! {
            r = listener.accept() => {
                let Ok((stream, _)) = r else { continue };
                while tasks.try_join_next().is_some() {}
                let open = st.metrics.connections.load(Ordering::Relaxed) as usize;
                if open >= st.config.max_connections {
                    st.metrics.refused_connections.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(refuse(stream));
                    continue;
                }
                st.metrics.connections.fetch_add(1, Ordering::Relaxed);
                let (st2, stop) = (Arc::clone(&st), stop_rx.clone());
                tasks.spawn(async move {
                    connection(Arc::clone(&st2), stream, stop).await;
                    st2.metrics.connections.fetch_sub(1, Ordering::Relaxed);
                });
            }
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            _ = &mut stop => break,
        }
    }
    eprintln!("simlsh serve: draining");
    st.ready.store(false, Ordering::Relaxed);
    drop(listener);
    let _ = stop_tx.send(true);
    let drain = st.config.drain_timeout + Duration::from_secs(1);
    let _ = tokio::time::timeout(drain, async { while tasks.join_next().await.is_some() {} }).await;
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    Ok(())
}
