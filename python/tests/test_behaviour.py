"""What a Python user expects: clean exceptions naming the row and column for bad input, the
GIL released during long calls, Ctrl-C honoured, no hidden copy of large inputs."""

from __future__ import annotations

import _thread
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

import simlsh


@pytest.fixture
def gauss():
    return simlsh.HyperplaneSigner(dim=4, bits=64, seed=1)


def test_bad_dense_input_raises_clean_exceptions(gauss):
    x = np.ones((5, 4), dtype=np.float32)
    x[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"row 3, column 2: value NaN is not finite"):
        gauss.sign(x)
    y = np.ones((40000, 4))
    y[33000, 1] = np.inf  # beyond the first chunk: the row is of the whole input
    with pytest.raises(ValueError, match=r"row 33000, column 1: value inf is not finite"):
        gauss.sign(y)
    with pytest.raises(ValueError, match=r"row 0, column 3: value 1e300 is beyond the range of float32"):
        gauss.sign(np.array([[0, 0, 0, 1e300]]))
    with pytest.raises(ValueError, match="5 columns but the signer was built for dimension 4"):
        gauss.sign(np.ones((2, 5), dtype=np.float32))
    with pytest.raises(TypeError, match="float32 or float64, got int64"):
        gauss.sign(np.ones((2, 4), dtype=np.int64))
    with pytest.raises(TypeError, match="complex"):
        gauss.sign(np.ones((2, 4), dtype=np.complex64))
    with pytest.raises(ValueError, match="2-D"):
        gauss.sign(np.ones(4, dtype=np.float32))
    with pytest.raises(ValueError, match="ragged rows: row 2 has 3 values, row 0 has 4"):
        gauss.sign([[1.0, 2, 3, 4], [1.0, 2, 3, 4], [1.0, 2, 3]])
    with pytest.raises(TypeError, match="single str"):
        simlsh.HashingTrick(bits=64).sign("one document")
    with pytest.raises(TypeError, match="row 1: expected a str"):
        simlsh.HashingTrick(bits=64).sign(["a", 3])
    with pytest.raises(TypeError, match="takes feature indices, not tokens"):
        gauss.sign(["text needs a hashing signer"])
    with pytest.raises(TypeError, match="cannot sign a dict"):
        gauss.sign({"a": 1})


def test_bad_sparse_input_raises_clean_exceptions():
    s = simlsh.HashingTrick(bits=64)
    x = sp.csr_matrix(np.eye(3, dtype=np.float32))
    x.data[1] = np.nan
    with pytest.raises(ValueError, match=r"row 1, column 1: value NaN"):
        s.sign(x)
    bad = sp.csr_matrix((np.ones(2, np.float32), np.array([0, 7]), np.array([0, 1, 2])), shape=(2, 8))
    bad.indices[1] = 9  # beyond the declared columns
    with pytest.raises(ValueError, match="row 1: feature index 9 is out of range for dimension 8"):
        s.sign(bad)
    bad.indices[1] = -1
    with pytest.raises(ValueError, match="row 1: negative feature index"):
        s.sign(bad)
    with pytest.raises(TypeError, match="int64"):
        s.sign(sp.csr_matrix(np.eye(3, dtype=np.int64)))
    r = simlsh.HyperplaneSigner(dim=5, bits=64)
    with pytest.raises(ValueError, match="8 columns but the signer was built for dimension 5"):
        r.sign(sp.csr_matrix((2, 8), dtype=np.float32))


def test_bad_codes_and_files_raise_clean_exceptions(tmp_path):
    idx = simlsh.LinearScan(bits=128)
    with pytest.raises(TypeError, match="uint64"):
        idx.add(np.ones((3, 2), dtype=np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        idx.add(np.ones((3, 4), dtype=np.uint64)[:, ::2])
    with pytest.raises(ValueError, match="3 words per row"):
        idx.add(np.ones((3, 3), dtype=np.uint64))
    with pytest.raises(FileNotFoundError):
        simlsh.load_index(tmp_path / "missing.simlsh")
    junk = tmp_path / "junk.simlsh"
    junk.write_bytes(b"not an index at all" * 10)
    with pytest.raises(simlsh.FormatError, match="junk.simlsh"):
        simlsh.load_index(junk)
    assert issubclass(simlsh.FormatError, OSError)
    idx.add(np.ones((3, 2), dtype=np.uint64))
    idx.save(tmp_path / "ok.simlsh")
    data = bytearray((tmp_path / "ok.simlsh").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "bad.simlsh").write_bytes(bytes(data))
    with pytest.raises(simlsh.FormatError, match="checksum"):
        simlsh.load_index(tmp_path / "bad.simlsh", verify=True)
    with pytest.raises(simlsh.FormatError, match="checksum"):
        simlsh.verify_index(tmp_path / "bad.simlsh")
    simlsh.verify_index(tmp_path / "ok.simlsh")
    with pytest.raises(ValueError, match="threads`: 0: expected at least 1"):
        simlsh.self_join(np.ones((3, 1), np.uint64), 3, threads=0)
    with pytest.raises(ValueError, match="bits"):
        simlsh.HashingTrick(bits=0)
    with pytest.raises(ValueError, match="distribution"):
        simlsh.HyperplaneSigner(dim=4, bits=8, distribution="cauchy")


def _long_dense():
    rng = np.random.default_rng(0)
    return rng.standard_normal((200_000, 256)).astype(np.float32), simlsh.HyperplaneSigner(dim=256, bits=512, seed=1)


def test_the_gil_is_released_during_a_long_call():
    x, s = _long_dense()
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        time.sleep(0.05)
        before = ticks[0]
        t0 = time.perf_counter()
        s.sign(x, threads=1)
        elapsed = time.perf_counter() - t0
        during = ticks[0] - before
    finally:
        stop.set()
        t.join()
    # Holding the GIL, the counter would advance only at the call's edges (one switch
    # interval, 5 ms); released, it runs the whole time.
    assert elapsed > 0.2, "the call must be long enough to tell"
    assert during > 10_000


def test_ctrl_c_interrupts_a_long_call():
    x, s = _long_dense()
    t0 = time.perf_counter()
    s.sign(x[:40_000])
    chunk_time = time.perf_counter() - t0  # about 2.5 chunks of 16,384 rows
    # Python leaves SIGINT alone when it starts with the signal ignored (a background job of a
    # shell without job control), and then interrupt_main does nothing: Ctrl-C's own handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.05, _thread.interrupt_main)
        timer.start()
        t0 = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            s.sign(x)  # 12 chunks
        interrupted = time.perf_counter() - t0
        timer.cancel()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert interrupted < 0.05 + 2 * chunk_time


MEMORY_PROBE = textwrap.dedent(
    """
    import sys, numpy as np, scipy.sparse as sp, simlsh

    def hwm():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

    kind = sys.argv[1]
    rng = np.random.default_rng(0)
    if kind == "f32-fortran":
        x = np.asfortranarray(rng.standard_normal((300_000, 128), dtype=np.float32))
        s = simlsh.HyperplaneSigner(dim=128, bits=64)
    elif kind == "f64":
        x = rng.standard_normal((150_000, 128))
        s = simlsh.HyperplaneSigner(dim=128, bits=64)
    else:
        n, k = 300_000, 40
        x = sp.csr_matrix((rng.standard_normal(n * k), rng.integers(0, 1 << 20, n * k).astype(np.int32),
                           np.arange(0, n * k + 1, k)), shape=(n, 1 << 20))
        x.sort_indices()
        x.sum_duplicates()
        s = simlsh.HashingTrick(bits=64)
    size = x.nbytes if isinstance(x, np.ndarray) else x.data.nbytes + x.indices.nbytes + x.indptr.nbytes
    s.sign(x[:10])
    before = hwm()
    out = s.sign(x)
    print(size, hwm() - before, out.nbytes)
    """
)


@pytest.mark.parametrize("kind", ["f32-fortran", "f64", "csr-f64"])
def test_no_hidden_copy_of_a_large_input(kind):
    """Peak memory of signing a ~150 MB input grows by the output and a few chunks, not by a
    copy of the input (a Fortran-order float32 array is read in place; float64 is converted
    one chunk of rows at a time)."""
    r = subprocess.run([sys.executable, "-c", MEMORY_PROBE, kind], capture_output=True, text=True, check=True)
    size, grew, out = map(int, r.stdout.split())
    assert size > 100e6
    assert grew < out + 0.25 * size, f"peak grew by {grew / 1e6:.0f} MB for a {size / 1e6:.0f} MB input"


def test_errors_in_later_chunks_of_documents_name_the_row_of_the_whole_input():
    docs = ["fine"] * 20_000
    weights = [[1.0]] * 20_000
    weights[17_000] = [float("nan")]
    with pytest.raises(ValueError, match=r"row 17000, column 0: value NaN"):
        simlsh.HashingTrick(bits=64).sign([["t"]] * 20_000, weights=weights)
    with pytest.raises(TypeError, match="row 19999: expected a str"):
        simlsh.HashingTrick(bits=64).sign(docs[:-1] + [None])


@pytest.mark.parametrize(
    "call,raises",
    [
        (lambda: simlsh.HyperplaneSigner(dim=1, bits=1).sign(np.ones((3, 1), np.float32)), False),
        (lambda: simlsh.HashingTrick(bits=2**20 + 1), True),
        (lambda: simlsh.HyperplaneSigner(dim=3, bits=8, distribution="super-bit", depth=9), True),
        (lambda: simlsh.HyperplaneSigner(dim=3, bits=8, distribution="very-sparse", density=0.0), True),
        (lambda: simlsh.PooledSigner(bits=8, pool_size=0), True),
        (lambda: simlsh.PermutedTables(bits=8, radius=10).add(np.zeros((5, 1), np.uint64)), False),
        (lambda: simlsh.PermutedTables(bits=64, levels=[0]), True),
        (lambda: simlsh.MultiIndex(bits=8, substrings=100).add(np.zeros((5, 1), np.uint64)), True),
        (lambda: simlsh.PermutationIndex(bits=64, permutations=0), True),
        (lambda: simlsh.PermutationIndex(bits=64, beam=0), True),
        (lambda: simlsh.LinearScan(bits=64).search(np.zeros((2, 1), np.uint64), 0), False),
        (lambda: simlsh.MultiIndex(bits=64).range_search(np.zeros((2, 1), np.uint64), 2**32 - 1), False),
        (lambda: simlsh.self_join(np.zeros((0, 1), np.uint64), 3), False),
        (lambda: simlsh.knn_graph(np.zeros((1, 1), np.uint64), 5), False),
        (lambda: simlsh.clusters(0, [], []), False),
        (lambda: simlsh.signer("gaussian:depth=3", bits=8, dim=3), True),
        (lambda: simlsh.Tokenizer(ngram=0), True),
        (lambda: simlsh.Tokenizer(top_k=0), True),
        (lambda: simlsh.Tokenizer(mode="klingon"), True),
        (lambda: simlsh.estimate(0, 0), True),
        (lambda: simlsh.plan_radius(2.0), True),
        (lambda: simlsh.plan_bits(angle_degrees=0.0), True),
    ],
)
def test_edge_parameters_never_panic(call, raises):
    """Edge cases work or raise a plain ValueError naming the parameter, as marked: a Rust
    panic (pyo3's PanicException, a BaseException) never crosses into Python."""
    if raises:
        with pytest.raises(ValueError):
            call()
    else:
        call()
