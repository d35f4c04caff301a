#!/usr/bin/env python3
"""Load benchmark of `simlsh serve` on loopback (standard library only).

For each store size (random 64-bit codes, Manku tables for radius 3, built once at once by
the `mkstore` example and copied for every run) and each durability (`sync`: fdatasync per
group, the default; `os`: handed to the system), it starts `simlsh serve` on a free port,
records the time until it accepts connections (restart time, warm and cold page cache) and
runs the `load` example:

- single check-and-insert requests at 1, 8 and 64 keep-alive clients (p50/p99);
- check-and-insert and inserts in batches of 1,000 (codes/s);
- single and batched lookups;
- 256-bit text codes of the bundled tweets with cosine verification (documents/s),

with the server's CPU time (user + sys) per phase, its resident memory and the store's mapped
bytes. Results go to `benches/serve/results/load-<date>.json` and a table to stdout.

    cargo build --release -p simlsh-cli -p simlsh-server --examples
    python3 benches/serve/load.py                   # 10^7 codes, ~10 min
    python3 benches/serve/load.py --sizes 1e7 1e8   # and 10^8 codes (~24 GB machine)
    python3 benches/serve/load.py --quick           # 10^6 codes, short phases (a smoke run)
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
BIN = TARGET / "release"
WORK = TARGET / "bench-serve"
TWEETS = ROOT / "datasets" / "healthtweets-10k" / "healthtweets-10k.csv"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (Linux)."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def load_average() -> str:
    return open("/proc/loadavg").read().split()[0]


def drop_caches() -> bool:
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


class Server:
    def __init__(self, store: pathlib.Path, *args: str):
        self.port = free_port()
        self.log = open(store.with_suffix(".log"), "w")
        t = time.perf_counter()
        self.p = subprocess.Popen(
            [str(BIN / "simlsh"), "serve", str(store), "--listen", f"127.0.0.1:{self.port}", *args],
            stderr=self.log,
        )
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                if self.p.poll() is not None:
                    raise RuntimeError(f"the server exited: {open(self.log.name).read()}")
                time.sleep(0.02)
        self.start_seconds = time.perf_counter() - t

    def get(self, path: str) -> dict:
        import http.client

        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request("GET", path)
        return json.loads(c.getresponse().read())

    def stop(self) -> tuple[int, float]:
        t = time.perf_counter()
        self.p.send_signal(signal.SIGTERM)
        code = self.p.wait(timeout=600)
        return code, time.perf_counter() - t


def load(server: Server, mode: str, clients: int, seconds: float, seed: int, **kw) -> dict:
    args = [str(BIN / "examples" / "load"), "--addr", f"127.0.0.1:{server.port}", "--mode", mode,
            "--clients", str(clients), "--seconds", str(seconds), "--seed", str(seed)]
    for k, v in kw.items():
        args += [f"--{k}"] + ([str(v)] if v != "" else [])
    c0 = cpu_seconds(server.p.pid)
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    r["server_cpu_s"] = round(cpu_seconds(server.p.pid) - c0, 2)
    r["server_cpu_us_per_item"] = round(1e6 * r["server_cpu_s"] / max(r["items"], 1), 2)
    r["load_average"] = load_average()
    return r


def template(n: int, design: str) -> pathlib.Path:
    d = WORK / f"codes-{n}-{design.replace(':', '_').replace('=', '').replace(',', '_')}"
    if not (d / "manifest.simlsh").exists():
        shutil.rmtree(d, ignore_errors=True)
        out = subprocess.run([str(BIN / "examples" / "mkstore"), str(d), str(n), "64", "1", design],
                             capture_output=True, text=True, check=True).stdout
        print(f"built {d.name}: {out.strip()}", flush=True)
    return d


PHASES = ("check", "check-batch", "insert-batch", "query", "query-batch", "restart", "text")


def codes_runs(n: int, design: str, durability: str, secs: float, results: list,
               phases: tuple[str, ...] = PHASES) -> None:
    tpl = template(n, design)
    run = WORK / f"run-{n}-{durability}"
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(tpl, run)
    drop_caches()
    srv = Server(run, "--durability", durability)
    base = {"store": n, "design": design, "durability": durability}
    results.append(dict(base, phase="start (cold cache)", seconds=round(srv.start_seconds, 2)))
    seed = 1
    for clients in (1, 8, 64):
        seed += 1
        if "check" in phases:
            results.append(dict(base, phase=f"check x1, {clients} clients", **load(srv, "check", clients, secs, seed)))
    for mode, clients in (("check-batch", 8), ("insert-batch", 8), ("query", 64), ("query-batch", 8)):
        seed += 1
        if mode in phases:
            results.append(dict(base, phase=f"{mode} ({clients} clients)", **load(srv, mode, clients, secs, seed, batch=1000)))
    st = srv.get("/v1/stats")
    results.append(dict(base, phase="memory", rss_bytes=rss_bytes(srv.p.pid), mapped_bytes=st["mapped_bytes"],
                        heap_bytes=st["heap_bytes"], items=st["items"],
                        rss_per_item=round(rss_bytes(srv.p.pid) / st["items"], 1),
                        mapped_per_item=round(st["mapped_bytes"] / st["items"], 1)))
    code, secs_stop = srv.stop()
    results.append(dict(base, phase="SIGTERM", exit_code=code, seconds=round(secs_stop, 2)))
    # Restart of the same store: warm, then cold page cache.
    for cold in (False, True) if "restart" in phases else ():
        if cold and not drop_caches():
            continue
        srv = Server(run, "--durability", durability)
        results.append(dict(base, phase=f"restart ({'cold' if cold else 'warm'} cache)", seconds=round(srv.start_seconds, 2),
                            items=srv.get("/v1/stats")["items"]))
        srv.stop()
    shutil.rmtree(run, ignore_errors=True)


def text_runs(secs: float, results: list) -> None:
    docs = WORK / "tweets.txt"
    with open(TWEETS, newline="") as f, open(docs, "w") as out:
        for row in csv.DictReader(f):
            out.write(" ".join(row["text"].split()) + "\n")
    store = WORK / "run-text"
    shutil.rmtree(store, ignore_errors=True)
    subprocess.run([str(BIN / "simlsh"), "store", "create", str(store), "--content", "text", "--bits", "256",
                    "--weighting", "tf", "--stop-words", "english", "--quiet"], check=True)
    srv = Server(store)
    for batch, clients, synth in ((1, 8, False), (100, 8, False), (1, 8, True), (100, 8, True)):
        extra = {"synth": ""} if synth else {}
        r = load(srv, "text", clients, secs, 7, batch=batch, docs=docs, cosine=0.8, **extra)
        what = "new documents (words drawn from the tweets)" if synth else "the 10k tweets cycled (mostly kept out)"
        results.append(dict(store=what, design="mih, 256 bits", durability="sync",
                            phase=f"text check x{batch}, {clients} clients, cosine 0.8", **r))
    srv.stop()
    shutil.rmtree(store, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e7])
    ap.add_argument("--design", default="manku:k=3", help="index of the code stores (manku:k=3 plans the tables)")
    ap.add_argument("--big-design", default="manku:k=3",
                    help="index at 10^8 and above (default planned; manku:k=3,levels=4: 4 tables, half the memory)")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--durability", nargs="+", default=["sync", "os"])
    ap.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES),
                    help="the phases to run (default all; the store starts from its template each run)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=pathlib.Path)
    a = ap.parse_args()
    if a.quick:
        a.sizes, a.seconds = [1e6], 2.0
    for exe in (BIN / "simlsh", BIN / "examples" / "load", BIN / "examples" / "mkstore"):
        if not exe.exists():
            sys.exit(f"{exe} is missing: cargo build --release -p simlsh-cli -p simlsh-server --examples")
    WORK.mkdir(parents=True, exist_ok=True)
    results: list[dict] = []
    for n in map(int, a.sizes):
        design = a.design if n < 10**8 else a.big_design
        for d in a.durability:
            codes_runs(n, design, d, a.seconds, results, tuple(a.phases))
    if "text" in a.phases:
        text_runs(a.seconds, results)
    out = a.out or ROOT / "benches" / "serve" / "results" / f"load-{datetime.date.today()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"cores": os.cpu_count(), "uname": " ".join(os.uname()), "load_average_at_end": load_average()}
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    print(f"| store | durability | phase | req/s | items/s | p50 ms | p99 ms | server CPU µs/item | other |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        other = {k: r[k] for k in ("seconds", "exit_code", "rss_per_item", "mapped_per_item", "items") if k in r}
        print(f"| {r['store']:,} | {r['durability']} | {r['phase']} | {r.get('requests_per_s', 0):,.0f} | "
              f"{r.get('items_per_s', 0):,.0f} | {r.get('p50_ms', '')} | {r.get('p99_ms', '')} | "
              f"{r.get('server_cpu_us_per_item', '')} | {other or ''} |" if isinstance(r["store"], int) else
              f"| {r['store']} | {r['durability']} | {r['phase']} | {r.get('requests_per_s', 0):,.0f} | "
              f"{r.get('items_per_s', 0):,.0f} | {r.get('p50_ms', '')} | {r.get('p99_ms', '')} | "
              f"{r.get('server_cpu_us_per_item', '')} | |")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
