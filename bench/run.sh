#!/usr/bin/env bash
# Side-by-side benchmark: ragmem, chromem-go alone, bleve alone (in the
# ragmem process, `ragmem bench --peers`), and Orama and LanceDB (Node, from
# npm; LanceDB flat and with its ANN indexes) on the same chunks, vectors and
# queries, in one run; prints ratios and the peers' recall@10.
#
#   bash bench/run.sh [CORPORA] [EMBEDDERS]   # default: scifact,100k lexical
#   bash bench/run.sh 100k randproj           # dense vectors (the test embedder)
#
# EMBEDDERS is ragmem bench's --embedders (comma-separated; each is measured
# with every peer). Everything stays on this machine (no server, no network
# but the npm install of bench/package.json the first time). Each step is
# bounded by a timeout; results go to bench/out/ (ragmem.json,
# peers-NAME.json, report.md). Needs Go, Node 20+ and npm.
set -euo pipefail
cd "$(dirname "$0")"
CORPORA="${1:-scifact,100k}"
EMBEDDERS="${2:-lexical}"
OUT="out"
mkdir -p "$OUT"

if [ ! -d node_modules/@orama/orama ] || [ ! -d node_modules/@lancedb/lancedb ]; then
	timeout 600 npm install --no-audit --no-fund --loglevel=error
fi

go build -o "$OUT/ragmem" ../cmd/ragmem
rm -rf "$OUT/data"
timeout 7200 "$OUT/ragmem" bench --corpora "$CORPORA" --embedders "$EMBEDDERS" --queries 300 --peers --export "$OUT/data" --json >"$OUT/ragmem.json"

for d in "$OUT"/data/*/; do
	name="$(basename "$d")"
	# SciFact: all 300 judged queries; larger corpora: the first 100.
	q=300
	case "$name" in scifact*) ;; *) q=100 ;; esac
	timeout 3600 node peers.mjs "$d" --queries "$q" >"$OUT/peers-$name.json"
done
rm -rf "$OUT/data"
node report.mjs "$OUT" | tee "$OUT/report.md"
