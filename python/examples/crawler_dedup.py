"""A crawler's near-duplicate filter: stream documents through check-and-insert.

Each incoming tweet of ``datasets/healthtweets-10k`` is signed (256-bit simhash of its words,
English stop words dropped) and checked against everything kept so far: it is kept only if
no kept tweet has an exact cosine of ``--cosine`` or more with it, atomically, so two
near-duplicates arriving at once never both get in. Tweets arrive in batches (a crawler's
fetch loop); the store is durable, so a crawler killed and restarted resumes with every
acknowledged tweet still known.

Embedded (the store in a local directory)::

    python python/examples/crawler_dedup.py

Against a running service (``simlsh store create STORE --content text --bits 256
--weighting tf --stop-words english``, then ``simlsh serve STORE``)::

    python python/examples/crawler_dedup.py --url http://127.0.0.1:7700
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import tempfile
import time

import simlsh

ROOT = pathlib.Path(__file__).resolve().parents[2]
TWEETS = ROOT / "datasets" / "healthtweets-10k" / "healthtweets-10k.csv"


def stream(path: pathlib.Path, batch: int):
    """The tweets of the CSV file, ``batch`` at a time, with their row numbers as ids."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = []
        for i, row in enumerate(csv.DictReader(f)):
            rows.append((i, row["text"]))
            if len(rows) == batch:
                yield rows
                rows = []
        if rows:
            yield rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="a simlsh serve URL; default: an embedded store")
    ap.add_argument("--store", help="directory of the embedded store (default: a new temporary one)")
    ap.add_argument("--cosine", type=float, default=0.8)
    ap.add_argument("--batch", type=int, default=100)
    args = ap.parse_args()

    if args.url:
        target = simlsh.Client(args.url)
    else:
        path = pathlib.Path(args.store or tempfile.mkdtemp()) / "tweets.store"
        tok = simlsh.Tokenizer(mode="words", weighting="tf", stop_words="english")
        target = simlsh.Store.create(path, tokenizer=tok, bits=256, seed=0)
        print(f"embedded store: {path}")

    kept = dup = 0
    examples = []
    texts = {}
    t = time.perf_counter()
    for rows in stream(TWEETS, args.batch):
        ids = [i for i, _ in rows]
        docs = [d for _, d in rows]
        texts.update(rows)
        for (i, _doc), r in zip(rows, target.check_insert(ids, texts=docs, cosine=args.cosine)):
            if r.inserted:
                kept += 1
            else:
                dup += 1
                if len(examples) < 3:
                    examples.append((i, r.matches[0]))
    secs = time.perf_counter() - t
    print(f"{kept + dup} tweets in {secs:.2f} s ({(kept + dup) / secs:,.0f}/s): kept {kept}, "
          f"near-duplicates {dup} (cosine >= {args.cosine})")
    for i, m in examples:
        print(f"  #{i} ~ #{m.id} (cosine {m.cosine:.3f}, distance {m.distance}):\n"
              f"    {texts[i][:90]!r}\n    {texts[m.id][:90]!r}")
    if not args.url:
        target.close()


if __name__ == "__main__":
    main()
