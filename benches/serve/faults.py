#!/usr/bin/env python3
"""Fault runs of `simlsh serve` (standard library only; Linux, root for the tmpfs).

1. **kill -9**: `--rounds` times (default 100), start the server on the same store, load it
   with batched inserts and check-and-inserts from 16 keep-alive clients (the `load`
   example records every id it sent and every id acknowledged as inserted), and `kill -9`
   it at a random moment. After each kill: `simlsh store verify` must pass, and, reopened,
   every acknowledged id must be stored (0 lost) and the store must hold exactly the items
   acknowledged or sent in flight (0 phantom: nothing that was never sent).
2. **disk full**: a store on a small tmpfs, loaded until the log no longer fits: every
   failed request must be a 507 with a JSON error, the server must keep answering queries,
   and every acknowledged id must be there after a restart with space freed.

    cargo build --release -p simlsh-cli -p simlsh-server --examples
    python3 benches/serve/faults.py --rounds 100
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import pathlib
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
BIN = TARGET / "release"
WORK = TARGET / "bench-serve" / "faults"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(store: pathlib.Path, *args: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    log = open(store.parent / f"{store.name}.log", "a")
    p = subprocess.Popen([str(BIN / "simlsh"), "serve", str(store), "--listen", f"127.0.0.1:{port}", *args], stderr=log)
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return p, port
        except OSError:
            if p.poll() is not None:
                raise RuntimeError(f"the server exited with {p.returncode}")
            time.sleep(0.02)


def ids(path: pathlib.Path) -> set[int]:
    if not path.exists():
        return set()
    return {int(x) for x in path.read_text().split()}


def present(port: int, wanted: set[int]) -> set[int]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    found = set()
    for i in sorted(wanted):
        c.request("GET", f"/v1/items/{i}")
        r = c.getresponse()
        r.read()
        if r.status == 200:
            found.add(i)
        elif r.status != 404:
            raise RuntimeError(f"GET /v1/items/{i}: {r.status}")
    return found


def stats(port: int) -> dict:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/v1/stats")
    return json.loads(c.getresponse().read())


def kill_rounds(rounds: int, seed: int) -> dict:
    rng = random.Random(seed)
    store = WORK / "kill"
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    subprocess.run([str(BIN / "simlsh"), "store", "create", str(store), "--quiet", "--delta-limit", "2048"], check=True)
    items = 0
    lost_total = phantom_total = acked_total = torn = 0
    for r in range(rounds):
        p, port = start(store)
        acks = WORK / f"acks-{r}"
        kill_after = rng.uniform(0.05, 1.5)
        mode = rng.choice(["insert-batch", "check-batch", "check"])
        load = subprocess.Popen(
            [str(BIN / "examples" / "load"), "--addr", f"127.0.0.1:{port}", "--mode", mode, "--batch",
             str(rng.choice([1, 10, 100])), "--clients", "16", "--seconds", str(kill_after + 1.0),
             "--seed", str(r + 1), "--dup", "0", "--acks", str(acks)],
            stdout=subprocess.DEVNULL,
        )
        time.sleep(kill_after)
        p.send_signal(signal.SIGKILL)
        p.wait()
        load.wait()
        v = subprocess.run([str(BIN / "simlsh"), "store", "verify", str(store)], capture_output=True, text=True)
        if v.returncode != 0:
            raise SystemExit(f"round {r}: store verify failed: {v.stderr}")
        report = json.loads(v.stdout)
        torn += report["torn_tail_bytes"] is not None
        acked, sent = ids(acks), ids(pathlib.Path(f"{acks}.sent"))
        p, port = start(store)
        here = present(port, sent)
        lost = acked - here
        n = stats(port)["items"]
        phantom = n - (items + len(here))
        items = n
        lost_total += len(lost)
        phantom_total += abs(phantom)
        acked_total += len(acked)
        print(f"round {r:3}: {mode:12} killed after {kill_after:.2f} s: {len(acked):6} acknowledged, "
              f"{len(sent - acked):5} in flight ({len(here - acked)} stored), lost {len(lost)}, phantom {phantom}, "
              f"{'torn tail cut' if report['torn_tail_bytes'] is not None else 'no torn tail'}", flush=True)
        p.send_signal(signal.SIGKILL)
        p.wait()
    return {"rounds": rounds, "acknowledged": acked_total, "lost": lost_total, "phantom": phantom_total,
            "torn_tails": torn, "items": items}


def disk_full() -> dict:
    mnt = WORK / "tmpfs"
    mnt.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)]).returncode != 0:
        return {"skipped": "cannot mount a tmpfs (needs root)"}
    try:
        store = mnt / "store"
        subprocess.run([str(BIN / "simlsh"), "store", "create", str(store), "--quiet"], check=True)
        p, port = start(store)
        acks = WORK / "acks-full"
        out = subprocess.run(
            [str(BIN / "examples" / "load"), "--addr", f"127.0.0.1:{port}", "--mode", "insert-batch", "--batch", "100",
             "--clients", "8", "--seconds", "20", "--seed", "999", "--dup", "0", "--acks", str(acks)],
            capture_output=True, text=True, check=True).stdout
        r = json.loads(out)
        # The server still answers queries on a full disk.
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("POST", "/v1/check_insert", body=json.dumps({"items": [{"id": 1, "code": [5]}], "radius": 0}))
        resp = c.getresponse()
        body = json.loads(resp.read())
        c.request("POST", "/v1/query", body=json.dumps({"queries": [{"code": [5]}], "radius": 3}))
        q = c.getresponse()
        q.read()
        p.send_signal(signal.SIGTERM)
        term = p.wait(timeout=120)
        acked, sent = ids(acks), ids(pathlib.Path(f"{acks}.sent"))
        # Restart with space freed: the store moves to a larger tmpfs.
        big = WORK / "after"
        shutil.rmtree(big, ignore_errors=True)
        shutil.copytree(store, big)
        p, port = start(big)
        here = present(port, sent)
        n = stats(port)["items"]
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=120)
        return {"statuses": r["statuses"], "a_write_on_the_full_disk": [resp.status, body], "query_status": q.status,
                "sigterm_exit": term, "acknowledged": len(acked), "lost": len(acked - here),
                "phantom": n - len(here)}
    finally:
        subprocess.run(["umount", "-l", str(mnt)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-disk-full", action="store_true")
    a = ap.parse_args()
    for exe in (BIN / "simlsh", BIN / "examples" / "load"):
        if not exe.exists():
            sys.exit(f"{exe} is missing: cargo build --release -p simlsh-cli -p simlsh-server --examples")
    res = {"kill_9": kill_rounds(a.rounds, a.seed)}
    if not a.skip_disk_full:
        res["disk_full"] = disk_full()
    print(json.dumps(res, indent=1))
    if res["kill_9"]["lost"] or res["kill_9"]["phantom"] or res.get("disk_full", {}).get("lost"):
        sys.exit(1)


if __name__ == "__main__":
    main()
