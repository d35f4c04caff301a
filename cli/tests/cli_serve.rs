//! `simlsh serve` as a process: `kill -9` at random moments under load loses no
//! acknowledged write and invents none (the small version of `benches/serve/faults.py`),
//! `simlsh store verify` passes after each kill, and SIGTERM drains, checkpoints and exits 0.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_simlsh");

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simlsh-cli-serve-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Starts `simlsh serve STORE` on a free loopback port; returns the child and its address.
fn serve(store: &Path) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(["serve", store.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let addr = loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "the server stopped");
        if let Some(a) = line.trim().rsplit_once("http://") {
            break a.1.to_string();
        }
        assert!(Instant::now() < deadline, "no address printed");
    };
    // Keep draining stderr so that the server never blocks on it.
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
    });
    (child, addr)
}

/// One HTTP request on a fresh connection: status and body.
fn request(addr: &str, method: &str, path: &str, body: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map_or("", |p| p.1).to_string();
    Ok((status, body))
}

fn items(addr: &str) -> u64 {
    let (s, b) = request(addr, "GET", "/v1/stats", "").unwrap();
    assert_eq!(s, 200);
    let v: serde_json::Value = serde_json::from_str(&b).unwrap();
    v["items"].as_u64().unwrap()
}

#[test]
fn kill_9_under_load_loses_no_acknowledged_write_and_invents_none() {
    let store = tmp_dir("kill");
    let ok = Command::new(BIN)
        .args(["store", "create", store.to_str().unwrap(), "--quiet"])
        .status()
        .unwrap();
    assert!(ok.success());
    let sent = Arc::new(Mutex::new(BTreeSet::new()));
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let mut next_id = 0u64;
    for round in 0..4u64 {
        let (mut child, addr) = serve(&store);
        let stop = Instant::now() + Duration::from_millis(150 + 97 * round);
        let writers: Vec<_> = (0..4u64)
            .map(|w| {
                let (addr, sent, acked) = (addr.clone(), Arc::clone(&sent), Arc::clone(&acked));
                let base = next_id + w * 1_000_000;
                std::thread::spawn(move || {
                    for i in 0.. {
                        let id = base + i;
                        // Batches of 3: codes spread apart, so that every check inserts.
                        let ids = [id * 3, id * 3 + 1, id * 3 + 2];
                        let items: Vec<String> = ids
                            .iter()
                            .map(|&x| {
                                format!(
                                    "{{\"insert\":{{\"id\":{x},\"code\":[{}]}}}}",
                                    x.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                                )
                            })
                            .collect();
                        sent.lock().unwrap().extend(ids);
                        let body = format!("{{\"changes\":[{}]}}", items.join(","));
                        match request(&addr, "POST", "/v1/update", &body) {
                            Ok((200, _)) => acked.lock().unwrap().extend(ids),
                            _ => return,
                        }
                    }
                })
            })
            .collect();
        while Instant::now() < stop {
            std::thread::sleep(Duration::from_millis(10));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        for w in writers {
            w.join().unwrap();
        }
        next_id += 10_000_000;
        // The store verifies after the crash (a torn tail is only reported).
        let v = Command::new(BIN)
            .args(["store", "verify", store.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            v.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&v.stderr)
        );
        // Reopened: every acknowledged write is there, and only sent ones.
        let (mut child, addr) = serve(&store);
        let sent_now = sent.lock().unwrap().clone();
        let acked_now = acked.lock().unwrap().clone();
        assert!(!acked_now.is_empty(), "round {round}: nothing acknowledged");
        let mut present = 0u64;
        for &id in &sent_now {
            let (s, _) = request(&addr, "GET", &format!("/v1/items/{id}"), "").unwrap();
            match s {
                200 => present += 1,
                404 => assert!(
                    !acked_now.contains(&id),
                    "round {round}: acknowledged {id} lost"
                ),
                other => panic!("status {other}"),
            }
        }
        assert_eq!(
            items(&addr),
            present,
            "round {round}: items that were never sent"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }
    // SIGTERM: drains, checkpoints, exits 0; the log is then empty.
    let (child, addr) = serve(&store);
    let n = items(&addr);
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let v = Command::new(BIN)
        .args(["store", "verify", store.to_str().unwrap()])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(report["log_records"], 0, "{report}");
    assert_eq!(report["items"].as_u64().unwrap(), n);
    std::fs::remove_dir_all(&store).unwrap();
}

/// The default `simlsh serve --help` shows for `--NAME`.
fn shown_default(help: &str, name: &str) -> String {
    let opt = format!("--{name} <");
    let rest = &help[help
        .find(&opt)
        .unwrap_or_else(|| panic!("no {opt} in {help}"))..];
    let rest = &rest[..rest[2..].find("\n  -").map_or(rest.len(), |e| e + 2)];
    let start = rest.find("[default: ").expect("a default") + "[default: ".len();
    rest[start..start + rest[start..].find(']').unwrap()].to_string()
}

/// `serve`'s defaults are the server's, and the address, durability and queue the library's:
/// what `--help` shows is what a server configured by default uses.
#[test]
fn serve_defaults_are_the_servers_and_the_librarys() {
    let out = Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let server = simlsh_server::Config::new(PathBuf::new());
    assert_eq!(server.listen, simlsh::store::DEFAULT_LISTEN);
    assert_eq!(server.durability, simlsh::store::Durability::default());
    assert_eq!(server.queue, simlsh::store::DEFAULT_QUEUE);
    for (name, want) in [
        ("listen", simlsh::store::DEFAULT_LISTEN.to_string()),
        ("durability", server.durability.name().to_string()),
        ("queue", server.queue.to_string()),
        ("max-body", server.max_body.to_string()),
        ("max-batch", server.max_batch.to_string()),
        ("max-connections", server.max_connections.to_string()),
        (
            "request-timeout",
            server.request_timeout.as_secs_f64().to_string(),
        ),
        (
            "idle-timeout",
            server.idle_timeout.as_secs_f64().to_string(),
        ),
    ] {
        assert_eq!(shown_default(&help, name), want, "--{name}");
    }
}
