"""Timing of a child process, shared by the comparison scripts (`scale.py`, `graph.py`)."""

import os
import re
import subprocess
import time
from pathlib import Path


def run_timed(cmd, log, env_extra=None):
    """Runs cmd under /usr/bin/time -v (its stdout and stderr in `log`.stdout, `log`.stderr);
    returns wall seconds (ours), CPU seconds (user + sys), peak RSS (MB) and the child's
    output (`stderr`: its stdout then time's report). Raises RuntimeError if cmd fails."""
    env = dict(os.environ)
    env.update(env_extra or {})
    with open(f"{log}.stdout", "wb") as so, open(f"{log}.stderr", "wb") as se:
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-v", *map(str, cmd)], stdout=so, stderr=se, env=env)
        wall = time.perf_counter() - t0
    err = Path(f"{log}.stderr").read_text(errors="replace")
    summary = Path(f"{log}.stdout").read_text(errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(map(str, cmd))}\n{err[-2000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1))
    user = float(re.search(r"User time \(seconds\): ([0-9.]+)", err).group(1))
    sys_t = float(re.search(r"System time \(seconds\): ([0-9.]+)", err).group(1))
    return {"wall_s": wall, "cpu_s": user + sys_t, "peak_rss_mb": rss / 1024, "stderr": summary + err}
