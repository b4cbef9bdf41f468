// Prints the side-by-side table of a bench/run.sh run: ragmem's figures
// and each peer's from the same run, with ratios (peer / ragmem for times,
// so a ratio above 1 means ragmem is faster) and, for vector searches,
// recall@10 against ragmem's exact scan of the same vectors.
//
// usage: node report.mjs OUT_DIR   (reads ragmem.json and peers-NAME.json)
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

const out = process.argv[2];
const ragmem = JSON.parse(readFileSync(join(out, "ragmem.json"), "utf8"));
const f = (x, d = 2) => (x === undefined || x === null || Number.isNaN(x) ? "-" : x.toFixed(d));
const ratio = (peer, ours) => (ours > 0 && peer > 0 ? `${(peer / ours).toFixed(1)}x` : "-");
const several = new Set(ragmem.map((r) => r.embedderName)).size > 1;

for (const r of ragmem) {
  const name = several ? `${r.corpus}-${r.embedderName.replace(/[^A-Za-z0-9.-]/g, "_")}` : r.corpus;
  console.log(`\n## ${r.corpus}, ${r.embedderName}: ${r.chunks} chunks, ${r.dimension} dimensions, k = 10 (load average ${f(r.loadAverage1m, 1)} at start)\n`);
  console.log("| system | mode | index s | chunks/s | p50 ms | p99 ms | nDCG@10 | recall@10 | p50 vs ragmem | index time vs ragmem |");
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  const modes = { hybrid: r.hybrid, vector: r.vector, fulltext: r.fulltext };
  for (const [m, l] of Object.entries(modes)) {
    const rec = m === "vector" ? f(r.recallAt10, 4) : "-";
    console.log(`| ragmem | ${m} | ${f(r.indexSeconds, 1)} | ${f(r.chunksPerSecond, 0)} | ${f(l.p50Ms)} | ${f(l.p99Ms)} | ${f(r.ndcg10[m], 4)} | ${rec} | 1.0x | 1.0x |`);
  }
  const peers = [...(r.peers || [])];
  const pf = join(out, `peers-${name}.json`);
  if (existsSync(pf)) peers.push(...JSON.parse(readFileSync(pf, "utf8")));
  for (const p of peers) {
    const n = p.name.toLowerCase();
    const m = n.includes("hybrid") ? "hybrid" : n.includes("vector") ? "vector" : "fulltext";
    console.log(`| ${p.name} | ${m} | ${f(p.indexSeconds, 1)} | ${f(p.perSecond, 0)} | ${f(p.query.p50Ms)} | ${f(p.query.p99Ms)} | ${f(p.ndcg10, 4)} | ${f(p.recall10, 4)} | ${ratio(p.query.p50Ms, modes[m].p50Ms)} | ${ratio(p.indexSeconds, r.indexSeconds)} |`);
  }
  const pre = r.preEmbedded ? ` ragmem's index time excludes its embedder (every chunk was embedded beforehand, at ${f(r.embedChunksPerSecond, 0)} chunks/s); the peers are given ready vectors.` : "";
  console.log(`\nragmem's vector index answers a hybrid candidate pool (top 100) in ${f(r.vectorIndexTop100.p50Ms)} ms p50 (its exact scan ${f(r.vectorIndexTop100Exact.p50Ms)} ms), recall@10 ${f(r.recallAt10, 4)} against the exact scan.${pre}`);
  if (r.chromemTop100) {
    console.log(`chromem-go's exhaustive top-100 query on the same vectors: p50 ${f(r.chromemTop100.p50Ms)} ms; ragmem's hybrid p50 is ${f(r.hybridP50SpeedupOverChromem, 1)}x faster.`);
  }
}
