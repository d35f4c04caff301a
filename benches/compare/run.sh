#!/usr/bin/env bash
# The side-by-side comparison of simlsh with FAISS, gaoya, datasketch, scikit-learn/SciPy/NumPy
# and the simhash package, in one run (see README.md beside this script).
#
#   benches/compare/run.sh                 # everything: ~8 minutes on 2 cores once installed
#   benches/compare/run.sh --smoke         # every code path on small prefixes (CI), ~3 minutes
#   benches/compare/run.sh --only W3,W5    # some synthetic workloads only (no real-data part)
#
# Environment: COMPARE_OUT (default target/compare), COMPARE_VENV (default $COMPARE_OUT/venv),
# PYTHON (default python3, >= 3.11), SHARED (default ../shared, the shared data sets).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
smoke=""
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke="--smoke" ;;
    --only) [ $# -ge 2 ] || { echo "--only needs a list, e.g. --only W3,W5" >&2; exit 2; }; only="$2"; shift ;;
    *) echo "usage: benches/compare/run.sh [--smoke] [--only W1,W2,...]" >&2; exit 2 ;;
  esac
  shift
done
out="${COMPARE_OUT:-$root/target/compare}"
venv="${COMPARE_VENV:-$out/venv}"
shared="${SHARED:-$root/../shared}"
mkdir -p "$out"
start=$(date +%s)

echo "== peers: Python venv $venv" >&2
if ! "$venv/bin/python" -c "import faiss, sklearn, scipy, simhash, gaoya, datasketch, rensa" 2>/dev/null; then
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi
PY="$venv/bin/python"
# simlsh's own Python package (the "simlsh-py" rows, and the tokenizer of the real-data truth),
# rebuilt when the sources it is built from changed.
stamp="$venv/.simlsh-py-sources"
want="$(git rev-parse HEAD:python HEAD:src 2>/dev/null | tr '\n' ' ')$(git status --porcelain -- python src | md5sum)"
if ! "$venv/bin/python" -c "import simlsh" 2>/dev/null || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "== simlsh Python package (pip install ./python)" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check ./python
  echo "$want" > "$stamp"
fi

echo "== simlsh: release build" >&2
cargo build --release --quiet --bin simlsh --example compare_worker --example write_workloads
bin="$root/target/release"

echo "== gaoya crate driver (crates.io gaoya, built in $out/gaoya-driver)" >&2
drv="$out/gaoya-driver"
mkdir -p "$drv/src"
cp "$here/gaoya/Cargo.toml" "$here/gaoya/Cargo.lock" "$drv/"
cp "$here/gaoya/main.rs" "$drv/src/main.rs"
(cd "$drv" && cargo build --release --quiet --locked)

echo "== workloads W1-W5 (simlsh's generator; checked against the published SHA-256)" >&2
data="$out/data"
[ -f "$data/w5.truth_ids.u32" ] || "$bin/examples/write_workloads" "$data"
"$PY" "$here/compare.py" --verify --data "$data" --out "$out"
rm -f "$out/synthetic.md" "$out/realdata.md" "$out/graph.md" "$out/results.md"

status=0
echo "== synthetic workloads" >&2
"$PY" "$here/compare.py" --data "$data" --out "$out" --worker "$bin/examples/compare_worker" \
  --gaoya "$drv/target/release/compare-gaoya" $smoke ${only:+--only "$only"} > /dev/null || status=1
if [ -z "$only" ]; then
  echo "== real data" >&2
  "$PY" "$here/realdata.py" --simlsh "$bin/simlsh" --out "$out" --shared "$shared" $smoke > /dev/null || status=1
fi
if [ -z "$only" ] && [ -n "$smoke" ]; then
  # The graph index's comparison (graph.py) is a separate, larger run (README.md); its smoke
  # run checks the script on small prefixes with the peers installed above (usearch, not
  # installed here, is skipped).
  echo "== graph index (graph.py --smoke)" >&2
  "$PY" "$here/graph.py" --smoke --out "$out" --shared "$shared" --simlsh "$bin/simlsh" > /dev/null || status=1
fi

{
  echo "# simlsh side by side with its peers"
  echo
  echo "Command: \`benches/compare/run.sh${smoke:+ --smoke}${only:+ --only $only}\`; total time $(( $(date +%s) - start )) s."
  echo
  cat "$out/synthetic.md"
  if [ -z "$only" ] && [ -f "$out/realdata.md" ]; then echo; cat "$out/realdata.md"; fi
  if [ -z "$only" ] && [ -n "$smoke" ] && [ -f "$out/graph.md" ]; then echo; cat "$out/graph.md"; fi
} > "$out/results.md"
cat "$out/results.md"
echo "results: $out/results.md (raw: $out/synthetic.jsonl, $out/realdata.json; plots: $out/*.svg)" >&2
exit $status
