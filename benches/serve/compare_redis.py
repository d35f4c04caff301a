#!/usr/bin/env python3
"""`simlsh serve` against datasketch `MinHashLSH` with Redis storage, on the same documents.

The documents are the bundled tweets (`datasets/healthtweets-10k`), cycled `--copies` times
under new ids (so that the later copies are exact duplicates of the first). Both systems
stream them in batches of `--batch`, as a crawler would:

- **datasketch**: MinHash of the word set (128 permutations), `MinHashLSH(threshold=0.8)`
  with Redis storage (a real `redis-server` from the distribution's packages, installed with
  apt-get when missing and started here on a free loopback port, persistence off), query
  then insert inside an `insertion_session`;
- **simlsh**: `POST /v1/check_insert` of 256-bit codes of TF-weighted words (English stop
  words dropped), exact cosine ≥ 0.8, signed and verified on the server.

Reported: documents/s of the insert phase and of a query phase over all documents, the
memory of Redis (`used_memory`) and of the simlsh server (RSS), and how many documents each
keeps out. The two answer different questions (estimated Jaccard ≥ 0.8 of word sets against
exact cosine ≥ 0.8 of TF vectors), so the kept counts differ; the rates and memory compare.

datasketch and redis-py are installed into a virtual environment of their own outside the
repository (`~/.cache/simlsh/compare-redis-venv`), which runs this script.

    cargo build --release -p simlsh-cli
    python3 benches/serve/compare_redis.py --copies 3
"""

from __future__ import annotations

import csv
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
BIN = TARGET / "release"
WORK = TARGET / "bench-serve" / "compare-redis"
VENV = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "simlsh" / "compare-redis-venv"
TWEETS = ROOT / "datasets" / "healthtweets-10k" / "healthtweets-10k.csv"


def ensure_env() -> None:
    """Re-runs this script inside a venv with datasketch and redis-py; installs redis-server."""
    if shutil.which("redis-server") is None:
        print("installing redis-server (apt-get)", flush=True)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "redis-server"], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if pathlib.Path(sys.prefix).resolve() != VENV.resolve():
        if not (VENV / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
            subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "datasketch", "redis", "numpy"], check=True)
        os.execv(str(VENV / "bin" / "python"), [str(VENV / "bin" / "python"), *sys.argv])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen) -> None:
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("the server exited")
            time.sleep(0.02)


def rss(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu(pid: int) -> float:
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


WORD = re.compile(r"\w+")


def documents(copies: int) -> list[str]:
    with open(TWEETS, newline="") as f:
        docs = [row["text"] for row in csv.DictReader(f)]
    return docs * copies


def run_datasketch(docs: list[str], batch: int) -> dict:
    import redis
    from datasketch import MinHash, MinHashLSH

    port = free_port()
    srv = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--dir", str(WORK)], stdout=subprocess.DEVNULL)
    wait_port(port, srv)
    try:
        lsh = MinHashLSH(threshold=0.8, num_perm=128, storage_config={
            "type": "redis", "basename": b"tweets", "redis": {"host": "127.0.0.1", "port": port}})
        t0, c0 = time.perf_counter(), time.process_time()
        r0 = cpu(srv.pid)
        kept = 0
        sign_s = 0.0
        for start in range(0, len(docs), batch):
            part = docs[start:start + batch]
            ts = time.perf_counter()
            mins = []
            for d in part:
                m = MinHash(num_perm=128)
                m.update_batch([w.lower().encode() for w in set(WORD.findall(d))])
                mins.append(m)
            sign_s += time.perf_counter() - ts
            new = []
            for i, m in enumerate(mins):
                if not lsh.query(m):
                    new.append((start + i, m))
            with lsh.insertion_session() as s:
                for key, m in new:
                    s.insert(key, m)
            kept += len(new)
        insert_s = time.perf_counter() - t0
        client_cpu = time.process_time() - c0
        redis_cpu = cpu(srv.pid) - r0
        info = redis.Redis(host="127.0.0.1", port=port).info("memory")
        # Query phase: every document once.
        t1 = time.perf_counter()
        for start in range(0, len(docs), batch):
            for d in docs[start:start + batch]:
                m = MinHash(num_perm=128)
                m.update_batch([w.lower().encode() for w in set(WORD.findall(d))])
                lsh.query(m)
        query_s = time.perf_counter() - t1
        return {"system": "datasketch MinHashLSH + Redis", "docs": len(docs), "kept": kept,
                "check_insert_docs_per_s": round(len(docs) / insert_s), "minhash_seconds": round(sign_s, 2),
                "query_docs_per_s": round(len(docs) / query_s), "client_cpu_s": round(client_cpu, 2),
                "server_cpu_s": round(redis_cpu, 2), "server_memory_bytes": info["used_memory"],
                "server_rss_bytes": rss(srv.pid), "memory_bytes_per_kept_doc": round(info["used_memory"] / max(kept, 1))}
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait()


def run_simlsh(docs: list[str], batch: int) -> dict:
    sys.path.insert(0, str(ROOT / "python"))
    import http.client

    store = WORK / "simlsh-store"
    shutil.rmtree(store, ignore_errors=True)
    subprocess.run([str(BIN / "simlsh"), "store", "create", str(store), "--content", "text", "--bits", "256",
                    "--weighting", "tf", "--stop-words", "english", "--quiet"], check=True)
    port = free_port()
    srv = subprocess.Popen([str(BIN / "simlsh"), "serve", str(store), "--listen", f"127.0.0.1:{port}"],
                           stderr=subprocess.DEVNULL)
    wait_port(port, srv)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def post(path, body):
        c.request("POST", path, body=json.dumps(body), headers={"content-type": "application/json"})
        r = c.getresponse()
        data = json.loads(r.read())
        assert r.status == 200, data
        return data

    try:
        t0, c0, s0 = time.perf_counter(), time.process_time(), cpu(srv.pid)
        kept = 0
        for start in range(0, len(docs), batch):
            items = [{"id": start + i, "text": d} for i, d in enumerate(docs[start:start + batch])]
            r = post("/v1/check_insert", {"items": items, "cosine": 0.8})
            kept += sum(x["inserted"] for x in r["results"])
        insert_s = time.perf_counter() - t0
        client_cpu, server_cpu = time.process_time() - c0, cpu(srv.pid) - s0
        c.request("GET", "/v1/stats")
        st = json.loads(c.getresponse().read())
        mem = rss(srv.pid)
        t1 = time.perf_counter()
        for start in range(0, len(docs), batch):
            post("/v1/query", {"queries": [{"text": d} for d in docs[start:start + batch]], "cosine": 0.8})
        query_s = time.perf_counter() - t1
        return {"system": "simlsh serve (256-bit text, exact cosine)", "docs": len(docs), "kept": kept,
                "check_insert_docs_per_s": round(len(docs) / insert_s), "query_docs_per_s": round(len(docs) / query_s),
                "client_cpu_s": round(client_cpu, 2), "server_cpu_s": round(server_cpu, 2),
                "server_memory_bytes": st["heap_bytes"] + st["mapped_bytes"], "server_rss_bytes": mem,
                "memory_bytes_per_kept_doc": round((st["heap_bytes"] + st["mapped_bytes"]) / max(kept, 1))}
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait()


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=3)
    ap.add_argument("--batch", type=int, default=100)
    a = ap.parse_args()
    ensure_env()
    WORK.mkdir(parents=True, exist_ok=True)
    docs = documents(a.copies)
    res = [run_simlsh(docs, a.batch), run_datasketch(docs, a.batch)]
    print(json.dumps(res, indent=1))
    out = ROOT / "benches" / "serve" / "results" / "compare-redis.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"load_average": open("/proc/loadavg").read().split()[0], "results": res}, indent=1) + "\n")


if __name__ == "__main__":
    main()
