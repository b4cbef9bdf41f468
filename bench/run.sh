#!/usr/bin/env bash
# Side-by-side benchmark: ragmem, chromem-go alone, bleve alone (in the
# ragmem process, `ragmem bench --peers`), and Orama and LanceDB (Node, from
# npm) on the same chunks, vectors and queries, in one run; prints ratios.
#
#   bash bench/run.sh [CORPORA]        # default: scifact,100k
#
# Everything stays on this machine (no server, no network but the npm
# install of bench/package.json the first time). Each step is bounded by a
# timeout; results go to bench/out/ (ragmem.json, peers-CORPUS.json,
# report.md). Needs Go, Node 20+ and npm.
set -euo pipefail
cd "$(dirname "$0")"
CORPORA="${1:-scifact,100k}"
OUT="out"
mkdir -p "$OUT"

if [ ! -d node_modules/@orama/orama ] || [ ! -d node_modules/@lancedb/lancedb ]; then
	timeout 600 npm install --no-audit --no-fund --loglevel=error
fi

go build -o "$OUT/ragmem" ../cmd/ragmem
rm -rf "$OUT/data"
timeout 7200 "$OUT/ragmem" bench --corpora "$CORPORA" --queries 300 --peers --export "$OUT/data" --json >"$OUT/ragmem.json"

IFS=',' read -ra names <<<"$CORPORA"
for c in "${names[@]}"; do
	# SciFact: all 300 judged queries; larger corpora: the first 100.
	q=300
	[ "$c" = scifact ] || q=100
	timeout 3600 node peers.mjs "$OUT/data/$c" --queries "$q" >"$OUT/peers-$c.json"
done
rm -rf "$OUT/data"
node report.mjs "$OUT" | tee "$OUT/report.md"
