"""simlsh: random-hyperplane LSH (simhash) for Python, on the Rust library of the same name.

Signatures of dense (NumPy), sparse (SciPy), text and Arrow data; exact Hamming search with
FAISS-shaped results; the all-pairs self-join, clusters and the k-NN graph; calibrated
estimates and planners; a scikit-learn transformer (:mod:`simlsh.sklearn`) and Arrow batch
functions (:mod:`simlsh.arrow`). Heavy calls release the GIL and run on all cores (or
``threads=n``; ``-1`` is all cores and ``-2`` all but one, as scikit-learn's ``n_jobs``), Ctrl-C
interrupts them, and the results are bit-identical to the command line and the Rust library
for the same seed and parameters.

>>> import numpy as np, simlsh
>>> X = np.random.default_rng(0).standard_normal((1000, 64)).astype(np.float32)
>>> codes = simlsh.HyperplaneSigner(dim=64, bits=128, seed=7).sign(X)
>>> idx = simlsh.MultiIndex(bits=128)
>>> idx.add(codes)
>>> D, I = idx.search(codes[:3], k=1)
>>> I[:, 0].tolist(), D[:, 0].tolist()
([0, 1, 2], [0, 0, 0])
"""

from ._simlsh import FormatError, __version__
from .dedup import DedupResult, dedup
from .estimate import (
    Estimate,
    angle,
    cosine,
    estimate,
    expected_half_width,
    expected_hamming,
    max_hamming_for_cosine,
    plan_bits,
    plan_radius,
    recall_at,
)
from .index import (
    GraphIndex,
    Index,
    LinearScan,
    MultiIndex,
    PermutationIndex,
    PermutedTables,
    load_index,
    update_index,
    verify_index,
)
from .join import Scheme, banded_join, clusters, cosine_join, knn_graph, plan_join, rerank, self_join, verified_join
from .signers import FwhtSigner, HashedGaussian, HashingTrick, HyperplaneSigner, PooledSigner, Signer, hamming, signer
from .text import Idf, Tokenizer
from .store import CheckResult, Match, Store
from .client import Client

__all__ = [
    "FormatError", "__version__",
    "Signer", "HyperplaneSigner", "HashingTrick", "HashedGaussian", "FwhtSigner", "PooledSigner", "signer", "hamming",
    "Tokenizer", "Idf",
    "Store", "Client", "Match", "CheckResult",
    "Index", "LinearScan", "PermutedTables", "MultiIndex", "PermutationIndex", "GraphIndex", "load_index",
    "update_index", "verify_index",
    "dedup", "DedupResult", "Scheme", "plan_join", "self_join", "clusters", "knn_graph", "banded_join", "verified_join",
    "cosine_join", "rerank",
    "angle", "cosine", "estimate", "Estimate", "expected_hamming", "max_hamming_for_cosine",
    "recall_at", "expected_half_width", "plan_radius", "plan_bits",
]
