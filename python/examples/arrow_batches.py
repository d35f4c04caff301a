"""Arrow record batches in and out, one call per batch (the shape of a Spark mapInArrow or a
Ray Data map_batches): signatures of a text column, the pairs within a batch, clusters.

    python python/examples/arrow_batches.py
"""

import pathlib

import pyarrow as pa
import pyarrow.csv as pacsv

import simlsh
from simlsh import arrow

DATA = pathlib.Path(__file__).resolve().parents[2] / "datasets"
table = pacsv.read_csv(DATA / "healthtweets-10k" / "healthtweets-10k.csv")
table = table.append_column("id", pa.array(range(table.num_rows), pa.int64()))

signer = simlsh.HashingTrick(bits=64, seed=1)
tok = simlsh.Tokenizer(mode="words", stop_words="english")
sigs = pa.Table.from_batches(
    [arrow.signatures(b, "text", signer, tokenizer=tok) for b in table.to_batches(max_chunksize=2048)]
)
print(sigs.schema)
pairs = arrow.self_join(sigs, radius=3)
roots = arrow.clusters(pairs)
print(f"{sigs.num_rows} signatures, {pairs.num_rows} pairs within 3 bits, "
      f"{roots.num_rows - len(set(roots.column('root').to_pylist()))} documents to drop")
