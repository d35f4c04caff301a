//! `simlsh serve`: the HTTP/1.1 + JSON service over a store (the `simlsh-server` crate).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use simlsh::store::Durability;

use crate::common::Ctx;

/// Serve a store (see `simlsh store create`) over HTTP/1.1 + JSON: batch query by code,
/// vector or text, batch insert and remove, check-and-insert, get, stats, /health, /ready,
/// /metrics (the API is described in server/openapi.yaml). Listens on a loopback address
/// unless --listen says otherwise; an address that is not loopback needs an access token, read from
/// the environment (SIMLSH_TOKEN: read-write; SIMLSH_READ_TOKEN: read-only) or from files.
/// SIGTERM or Ctrl-C drains the requests in progress, checkpoints the store and exits 0.
#[derive(ClapArgs)]
pub struct Args {
    /// The store's directory.
    store: PathBuf,
    /// Address and port to listen on (port 0: any free port, printed on stderr).
    #[arg(long, default_value_t = server().listen)]
    listen: SocketAddr,
    /// File holding the read-write access token (else $SIMLSH_TOKEN).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// File holding the read-only access token (else $SIMLSH_READ_TOKEN).
    #[arg(long)]
    read_token_file: Option<PathBuf>,
    /// When a write is acknowledged: sync (on disk: survives power loss) or os (handed to
    /// the operating system: survives the process being killed, not a power loss).
    #[arg(long, default_value = server().durability.name(), value_parser = parse_durability)]
    durability: Durability,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = server().max_body)]
    max_body: usize,
    /// Largest batch of queries, changes or items in one request.
    #[arg(long, default_value_t = server().max_batch)]
    max_batch: usize,
    /// Most open connections (more get a 503 and are closed).
    #[arg(long, default_value_t = server().max_connections)]
    max_connections: usize,
    /// Seconds a request may take, body included (slower ones are cut).
    #[arg(long, default_value_t = server().request_timeout.as_secs_f64())]
    request_timeout: f64,
    /// Seconds a connection may go without a complete request header (an idle keep-alive
    /// connection, or a client sending its headers that slowly, is closed).
    #[arg(long, default_value_t = server().idle_timeout.as_secs_f64())]
    idle_timeout: f64,
    /// Writes waiting for the writer beyond which writes get a 503 with Retry-After.
    #[arg(long, default_value_t = server().queue)]
    queue: usize,
}

/// The server's defaults (the address, durability and queue are the library's): every
/// default above is read from them, none restated.
fn server() -> &'static simlsh_server::Config {
    static DEFAULTS: LazyLock<simlsh_server::Config> =
        LazyLock::new(|| simlsh_server::Config::new(PathBuf::new()));
    &DEFAULTS
}

fn parse_durability(s: &str) -> std::result::Result<Durability, String> {
    s.parse().map_err(|e: simlsh::Error| e.to_string())
}

fn token(file: &Option<PathBuf>, var: &str) -> Result<Option<String>> {
    Ok(match file {
        Some(f) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("reading the token file {}", f.display()))?
                .trim()
                .to_string(),
        ),
        None => std::env::var(var).ok().filter(|t| !t.is_empty()),
    })
}

fn seconds(s: f64, what: &str) -> Result<Duration> {
    anyhow::ensure!(
        s.is_finite() && s > 0.0 && s < 1e9,
        "--{what} must be a positive number of seconds"
    );
    Ok(Duration::from_secs_f64(s))
}

pub fn run(a: Args, ctx: &Ctx) -> Result<()> {
    let mut c = simlsh_server::Config::new(a.store);
    c.listen = a.listen;
    c.token = token(&a.token_file, "SIMLSH_TOKEN")?;
    c.read_token = token(&a.read_token_file, "SIMLSH_READ_TOKEN")?;
    c.durability = a.durability;
    c.max_body = a.max_body;
    c.max_batch = a.max_batch;
    c.max_connections = a.max_connections;
    c.request_timeout = seconds(a.request_timeout, "request-timeout")?;
    c.idle_timeout = seconds(a.idle_timeout, "idle-timeout")?;
    c.queue = a.queue;
    // The worker threads: --threads, or all cores.
    c.threads = rayon::current_num_threads().max(1);
    let _ = ctx;
    simlsh_server::run(c)
}
