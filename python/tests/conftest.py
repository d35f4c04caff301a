"""Shared fixtures: the repository's bundled data and the command line's binary.

The equality-with-the-CLI tests run ``target/release/simlsh`` (``$CARGO_TARGET_DIR`` honoured);
when it is missing, the session builds it once with ``cargo build --release -p simlsh-cli``
(``scripts/test`` runs ``cargo test --release`` first, which builds it).
"""

from __future__ import annotations

import csv
import json
import os
import pathlib
import subprocess

# scikit-learn's check_estimator runs its array API check only when SciPy's array API mode was
# switched on before SciPy was first imported (otherwise the check is skipped, not passed); it
# changes nothing for NumPy inputs.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "datasets"


def target_dir() -> pathlib.Path:
    t = os.environ.get("CARGO_TARGET_DIR")
    return pathlib.Path(t) if t else ROOT / "target"


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    exe = target_dir() / "release" / "simlsh"
    if not exe.exists():
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "simlsh-cli"], cwd=ROOT, check=True)
    assert exe.exists(), f"{exe} was not built"
    return exe


def run_cli(cli: pathlib.Path, *args) -> str:
    r = subprocess.run([str(cli), *map(str, args), "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, f"simlsh {' '.join(map(str, args))} failed: {r.stderr}"
    return r.stdout


def read_fvecs(path: pathlib.Path) -> np.ndarray:
    raw = np.fromfile(path, dtype=np.int32)
    d = int(raw[0])
    return raw.reshape(-1, d + 1)[:, 1:].view(np.float32).copy()


@pytest.fixture(scope="session")
def glove() -> np.ndarray:
    return read_fvecs(DATA / "glove-6B-50d-10k" / "vectors.fvecs")


@pytest.fixture(scope="session")
def tweets() -> list[str]:
    with open(DATA / "healthtweets-10k" / "healthtweets-10k.csv", newline="", encoding="utf-8") as f:
        return [r["text"] for r in csv.DictReader(f)]


@pytest.fixture(scope="session")
def poems() -> list[str]:
    with open(DATA / "chinese-poetry-3k" / "poems.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def popcount_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Brute-force Hamming distances between every row of ``a`` and every row of ``b``
    (``uint64`` words): the oracle of the indexes and joins."""
    x = a[:, None, :] ^ b[None, :, :]
    return np.unpackbits(x.view(np.uint8), axis=-1).reshape(len(a), len(b), -1).sum(axis=-1)


def random_codes(rng: np.random.Generator, n: int, bits: int, planted: int = 0, flips: int = 3) -> np.ndarray:
    """``n`` random ``bits``-bit codes (padding bits zero), the last ``planted`` rows near
    copies (at most ``flips`` bits flipped) of random earlier rows."""
    w = (bits + 63) // 64
    c = rng.integers(0, 2**64, size=(n, w), dtype=np.uint64, endpoint=False)
    if bits % 64:
        c[:, -1] &= np.uint64((1 << (bits % 64)) - 1)
    for r in range(n - planted, n):
        src = int(rng.integers(0, n - planted))
        c[r] = c[src]
        for b in rng.choice(bits, size=int(rng.integers(0, flips + 1)), replace=False):
            c[r, b // 64] ^= np.uint64(1 << (b % 64))
    return c


def check_java() -> None:
    """Spark needs Java 17: a clear failure, not a skip, when ``java -version`` does not run."""
    import shutil

    java = shutil.which("java")
    assert java is not None, "Spark needs Java 17: `java` is not on PATH (apt-get install openjdk-17-jre-headless)"
    r = subprocess.run([java, "-version"], capture_output=True, text=True)
    assert r.returncode == 0, f"`java -version` failed ({r.returncode}): {r.stderr.strip()}"


def session(master: str, partitions: int = 3):
    """A SparkSession on the loopback interface with the UI off."""
    import sys

    from pyspark.sql import SparkSession

    check_java()
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    s = (
        SparkSession.builder.master(master)
        .appName("simlsh-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.executor.memory", "512m")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    return s


@pytest.fixture(scope="session")
def spark():
    """One local[2] Spark session for the whole run (skipped without pyspark)."""
    pytest.importorskip("pyspark")
    s = session("local[2]")
    yield s
    s.stop()
