// Node peers of ragmem's benchmark: Orama (hybrid, BM25 and vector) and
// LanceDB (flat vector search, full-text, hybrid, and vector search with its
// ANN indexes IVF_PQ and IVF_HNSW_SQ) on the chunks, vectors and queries that
// `ragmem bench --export DIR` wrote, with the same k (10), the same nDCG@10
// (documents ranked by their best chunk), and for vector searches recall@10
// against ragmem's exact scan (the exact10 ids of queries.jsonl).
//
// usage: node peers.mjs EXPORT_DIR/CORPUS [--only orama|lancedb] [--queries N] [--no-ann]
// --queries N keeps the first N queries (Orama's vector search is a scan in
// JavaScript: on 100k chunks one hybrid query takes seconds); --no-ann skips
// building LanceDB's ANN indexes (minutes at 100k chunks).
// Prints one JSON array of peer results on stdout; progress on stderr.
process.env.RUST_LOG ??= "error"; // LanceDB logs a deprecation warning per query otherwise
process.env.LANCEDB_LOG ??= "error";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";

const dir = process.argv[2];
const arg = (name) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : "");
const only = arg("--only");
const noANN = process.argv.includes("--no-ann");
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

// recall10 is the fraction of the exact top 10 (by ragmem's exact scan of
// the same vectors) among the chunk ids returned.
function recall10(ids, exact) {
  if (!exact || exact.length === 0) return undefined;
  const got = new Set(ids.slice(0, 10));
  return exact.filter((id) => got.has(id)).length / exact.length;
}

// runQueries times fn(i) for every query (after 5 warm-up calls) and scores
// what it returns: {docs, ids} (ids: chunk ids, for the recall of vector
// searches) or an array of document ids.
async function runQueries(name, fn) {
  for (let i = 0; i < Math.min(5, queries.length); i++) await fn(i);
  const ms = [];
  let ndcg = 0;
  let rec = 0;
  let recN = 0;
  for (let i = 0; i < queries.length; i++) {
    const t0 = performance.now();
    const out = await fn(i);
    ms.push(performance.now() - t0);
    const docs = Array.isArray(out) ? out : out.docs;
    ndcg += ndcg10(docs, queries[i].relevant);
    if (!Array.isArray(out)) {
      const r = recall10(out.ids, queries[i].exact10);
      if (r !== undefined) {
        rec += r;
        recN++;
      }
    }
  }
  const r = { query: summarise(ms), ndcg10: ndcg / Math.max(1, queries.length) };
  if (recN > 0) r.recall10 = rec / recN;
  log(`${name}: p50 ${r.query.p50Ms.toFixed(2)} ms, nDCG@10 ${r.ndcg10.toFixed(4)}${r.recall10 !== undefined ? `, recall@10 ${r.recall10.toFixed(4)}` : ""}`);
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
  const withIDs = (res) => ({ docs: res.hits.map((h) => h.document.doc), ids: res.hits.map((h) => h.id) });
  const hybrid = await runQueries("orama hybrid", async (i) =>
    docsOf(await search(db, { mode: "hybrid", term: queries[i].text, properties: ["text"], vector: { value: Array.from(queryVecs[i]), property: "embedding" }, similarity: 0.0001, limit: K })));
  results.push({ name: "Orama (hybrid)", indexSeconds, perSecond: chunks.length / indexSeconds, ...hybrid, k: K });
  const text = await runQueries("orama bm25", async (i) => docsOf(await search(db, { term: queries[i].text, properties: ["text"], limit: K })));
  results.push({ name: "Orama (BM25)", indexSeconds, perSecond: chunks.length / indexSeconds, ...text, k: K });
  const vec = await runQueries("orama vector", async (i) =>
    withIDs(await search(db, { mode: "vector", vector: { value: Array.from(queryVecs[i]), property: "embedding" }, similarity: -1, limit: K })));
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
    const withIDs = (rows) => ({ docs: rows.map((r) => r.doc), ids: rows.map((r) => r.id) });
    const vec = await runQueries("lancedb vector", async (i) =>
      withIDs(await tbl.query().nearestTo(Array.from(queryVecs[i])).distanceType("cosine").select(["id", "doc"]).limit(K).toArray()));
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
    if (!noANN) await lanceANN(lancedb, tbl, withIDs, indexSeconds);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

// lanceANN builds LanceDB's approximate indexes on the vector column, one
// after the other (IVF_PQ, then IVF_HNSW_SQ), and queries each at two
// settings: LanceDB's documented knobs for trading speed for recall. The
// index time reported is the table's plus the index build.
async function lanceANN(lancedb, tbl, withIDs, tableSeconds) {
  const partitions = Math.max(1, Math.round(Math.sqrt(chunks.length)));
  const subVectors = dim % 16 === 0 ? dim / 16 : dim % 8 === 0 ? dim / 8 : 1;
  const builds = [
    {
      name: "IVF_PQ",
      config: lancedb.Index.ivfPq({ distanceType: "cosine", numPartitions: partitions, numSubVectors: subVectors }),
      settings: [
        { label: "nprobes 20, refine 10", q: (x) => x.nprobes(20).refineFactor(10) },
        { label: "nprobes 50, refine 40", q: (x) => x.nprobes(50).refineFactor(40) },
      ],
    },
    {
      name: "IVF_HNSW_SQ",
      config: lancedb.Index.hnswSq({ distanceType: "cosine", numPartitions: Math.max(1, Math.round(chunks.length / 100000)) }),
      settings: [
        { label: "ef 64", q: (x) => x.ef(64) },
        { label: "ef 300", q: (x) => x.ef(300) },
      ],
    },
  ];
  for (const b of builds) {
    const t0 = performance.now();
    try {
      await tbl.createIndex("vector", { config: b.config, replace: true });
    } catch (e) {
      log(`lancedb ${b.name}: index build failed: ${e.message}`);
      continue;
    }
    const buildSeconds = (performance.now() - t0) / 1000;
    log(`lancedb ${b.name}: built in ${buildSeconds.toFixed(1)} s`);
    for (const st of b.settings) {
      const r = await runQueries(`lancedb ${b.name} ${st.label}`, async (i) =>
        withIDs(await st.q(tbl.query().nearestTo(Array.from(queryVecs[i])).distanceType("cosine")).select(["id", "doc"]).limit(K).toArray()));
      const indexSeconds = tableSeconds + buildSeconds;
      results.push({ name: `LanceDB (vector, ${b.name}, ${st.label})`, indexSeconds, perSecond: chunks.length / indexSeconds, buildSeconds, ...r, k: K });
    }
  }
}

if (only === "" || only === "orama") await orama();
if (only === "" || only === "lancedb") await lance();
process.stdout.write(JSON.stringify(results, null, 2) + "\n");
