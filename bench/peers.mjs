// Node peers of ragmem's benchmark: Orama (hybrid, and BM25 alone) and
// LanceDB (vector, full-text and hybrid) on the chunks, vectors and queries
// that `ragmem bench --export DIR` wrote, with the same k (10) and the same
// nDCG@10 (documents ranked by their best chunk).
//
// usage: node peers.mjs EXPORT_DIR/CORPUS [--only orama|lancedb] [--queries N]
// --queries N keeps the first N queries (Orama's vector search is a scan in
// JavaScript: on 100k chunks one hybrid query takes seconds).
// Prints one JSON array of peer results on stdout; progress on stderr.
process.env.RUST_LOG ??= "error"; // LanceDB logs a deprecation warning per query otherwise
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

const dir = process.argv[2];
const arg = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : "");
const only = arg("--only");
const maxQueries = Number(arg("--queries")) || Infinity;
if (!dir) {
  console.error("usage: node peers.mjs EXPORT_DIR/CORPUS [--only orama|lancedb]");
  process.exit(2);
}
const log = (...a) => console.error("peers:", ...a);

const meta = JSON.parse(readFileSync(join(dir, "meta.json"), "utf8"));
const dim = meta.dimension;
const K = meta.k || 10;
const lines = (f) => readFileSync(join(dir, f), "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));
const chunks = lines("chunks.jsonl");
const queries = lines("queries.jsonl").slice(0, maxQueries);
const f32 = (f, n) => {
  const b = readFileSync(join(dir, f));
  const all = new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  const out = [];
  for (let i = 0; i < n; i++) out.push(all.subarray(i * dim, (i + 1) * dim));
  return out;
};
const chunkVecs = f32("chunk_vectors.f32", chunks.length);
const queryVecs = f32("query_vectors.f32", queries.length); // the first rows
log(`${dir}: ${chunks.length} chunks, ${queries.length} queries, ${dim} dimensions`);

function ndcg10(rankedDocs, relevant) {
  const seen = new Set();
  let dcg = 0;
  let pos = 0;
  for (const d of rankedDocs) {
    if (seen.has(d)) continue;
    seen.add(d);
    pos++;
    if (pos > 10) break;
    const g = relevant[d] || 0;
    if (g > 0) dcg += (2 ** g - 1) / Math.log2(pos + 1);
  }
  const gains = Object.values(relevant).filter((g) => g > 0).sort((a, b) => b - a);
  let idcg = 0;
  gains.slice(0, 10).forEach((g, i) => (idcg += (2 ** g - 1) / Math.log2(i + 2)));
  return idcg > 0 ? dcg / idcg : 0;
}

function summarise(ms) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (p) => s[Math.max(0, Math.min(s.length - 1, Math.ceil(p * s.length) - 1))];
  return { p50Ms: at(0.5), p95Ms: at(0.95), p99Ms: at(0.99), n: s.length };
}

// runQueries times fn(i) for every query (after 5 warm-up calls) and scores
// the document ids it returns.
async function runQueries(name, fn) {
  for (let i = 0; i < Math.min(5, queries.length); i++) await fn(i);
  const ms = [];
  let ndcg = 0;
  for (let i = 0; i < queries.length; i++) {
    const t0 = performance.now();
    const docs = await fn(i);
    ms.push(performance.now() - t0);
    ndcg += ndcg10(docs, queries[i].relevant);
  }
  const r = { query: summarise(ms), ndcg10: ndcg / Math.max(1, queries.length) };
  log(`${name}: p50 ${r.query.p50Ms.toFixed(2)} ms, nDCG@10 ${r.ndcg10.toFixed(4)}`);
  return r;
}

const results = [];

async function orama() {
  const { create, insertMultiple, search } = await import("@orama/orama");
  const t0 = performance.now();
  const db = create({ schema: { text: "string", doc: "string", embedding: `vector[${dim}]` } });
  const B = 1000;
  for (let i = 0; i < chunks.length; i += B) {
    const batch = [];
    for (let j = i; j < Math.min(i + B, chunks.length); j++) {
      batch.push({ id: chunks[j].id, text: `${chunks[j].title}\n${chunks[j].text}`, doc: chunks[j].doc, embedding: Array.from(chunkVecs[j]) });
    }
    await insertMultiple(db, batch, B);
  }
  const indexSeconds = (performance.now() - t0) / 1000;
  log(`orama: indexed in ${indexSeconds.toFixed(1)} s`);
  const docsOf = (res) => res.hits.map((h) => h.document.doc);
  const hybrid = await runQueries("orama hybrid", async (i) =>
    docsOf(await search(db, { mode: "hybrid", term: queries[i].text, properties: ["text"], vector: { value: Array.from(queryVecs[i]), property: "embedding" }, similarity: 0.0001, limit: K })));
  results.push({ name: "Orama (hybrid)", indexSeconds, perSecond: chunks.length / indexSeconds, ...hybrid, k: K });
  const text = await runQueries("orama bm25", async (i) => docsOf(await search(db, { term: queries[i].text, properties: ["text"], limit: K })));
  results.push({ name: "Orama (BM25)", indexSeconds, perSecond: chunks.length / indexSeconds, ...text, k: K });
  const vec = await runQueries("orama vector", async (i) =>
    docsOf(await search(db, { mode: "vector", vector: { value: Array.from(queryVecs[i]), property: "embedding" }, similarity: 0.0001, limit: K })));
  results.push({ name: "Orama (vector)", indexSeconds, perSecond: chunks.length / indexSeconds, ...vec, k: K });
}

async function lance() {
  const lancedb = await import("@lancedb/lancedb");
  const tmp = mkdtempSync(join(tmpdir(), "ragmem-lancedb-"));
  try {
    const db = await lancedb.connect(tmp);
    const t0 = performance.now();
    const B = 10000;
    let tbl;
    for (let i = 0; i < chunks.length; i += B) {
      const rows = [];
      for (let j = i; j < Math.min(i + B, chunks.length); j++) {
        rows.push({ id: chunks[j].id, doc: chunks[j].doc, text: `${chunks[j].title}\n${chunks[j].text}`, vector: Array.from(chunkVecs[j]) });
      }
      if (!tbl) tbl = await db.createTable("chunks", rows);
      else await tbl.add(rows);
    }
    await tbl.createIndex("text", { config: lancedb.Index.fts() });
    const indexSeconds = (performance.now() - t0) / 1000;
    log(`lancedb: table and full-text index in ${indexSeconds.toFixed(1)} s`);
    const docsOf = (rows) => rows.map((r) => r.doc);
    const vec = await runQueries("lancedb vector", async (i) =>
      docsOf(await tbl.query().nearestTo(Array.from(queryVecs[i])).distanceType("cosine").select(["doc"]).limit(K).toArray()));
    results.push({ name: "LanceDB (vector, flat)", indexSeconds, perSecond: chunks.length / indexSeconds, ...vec, k: K });
    const text = await runQueries("lancedb fts", async (i) =>
      docsOf(await tbl.query().fullTextSearch(queries[i].text).select(["doc"]).limit(K).toArray()));
    results.push({ name: "LanceDB (full-text)", indexSeconds, perSecond: chunks.length / indexSeconds, ...text, k: K });
    try {
      const hyb = await runQueries("lancedb hybrid", async (i) =>
        docsOf(await tbl.query().fullTextSearch(queries[i].text).nearestTo(Array.from(queryVecs[i])).distanceType("cosine").select(["doc"]).limit(K).toArray()));
      results.push({ name: "LanceDB (hybrid, RRF)", indexSeconds, perSecond: chunks.length / indexSeconds, ...hyb, k: K });
    } catch (e) {
      log(`lancedb hybrid unavailable: ${e.message}`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (only === "" || only === "orama") await orama();
if (only === "" || only === "lancedb") await lance();
process.stdout.write(JSON.stringify(results, null, 2) + "\n");
