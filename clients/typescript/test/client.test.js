// The client against a real ragmem server (see server.js).

import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";

import * as ragmem from "../dist/index.js";
import { Client } from "../dist/index.js";
import { sharedServer, stopShared, Served } from "./server.js";

const uid = () => randomBytes(5).toString("hex");
const s = await sharedServer();
const skip = s ? false : "no ragmem server: set RAGMEM_URL and RAGMEM_TOKEN, or RAGMEM_BIN, or install Go";
after(stopShared);

/** Asserts that fn rejects with an instance of cls and returns the error. */
async function rejects(fn, cls, fields = {}) {
  let err;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof cls, `want ${cls.name}, got ${err?.constructor?.name}: ${err?.message}`);
  for (const [k, v] of Object.entries(fields)) assert.equal(err[k], v, k);
  return err;
}

describe("client", { skip }, () => {
  const client = s && new Client({ url: s.url, token: s.token, timeoutMs: 30_000 });

  it("indexes text, searches it with filters and removes it", async () => {
    const u = `notes://${uid()}`;
    const word = "zq" + uid();
    const text = `# Gateway\n\n## Ports\n\nThe gateway ${word} listens on port 9090.`;
    const res = await client.indexText(u, text, { format: "markdown", title: "Gateway notes", attrs: { team: "platform" } });
    assert.equal(res.url, u);
    assert.ok(res.chunks > 0 && res.contentHash);
    assert.equal((await client.indexText(u, text, { format: "markdown", title: "Gateway notes", attrs: { team: "platform" } })).unchanged, true);
    const found = await client.search(`gateway ${word}`, { filter: 'team = "platform"', topK: 5 });
    const hit = found.results.find((r) => r.url === u);
    assert.ok(hit, JSON.stringify(found));
    assert.deepEqual(hit.headingPath, ["Gateway", "Ports"]);
    assert.equal(hit.attrs.team, "platform");
    assert.ok(hit.score > 0 && hit.explanation.method);
    assert.equal(hit.docType, "knowledge");
    assert.equal((await client.search(`gateway ${word}`, { filter: 'team = "infra"' })).results.filter((r) => r.url === u).length, 0);
    const only = await client.search(`gateway ${word}`, { filters: { url: u } });
    assert.deepEqual([...new Set(only.results.map((r) => r.url))], [u]);
    const page = await client.source(u);
    assert.equal(page.title, "Gateway notes");
    assert.ok(page.chunks[0].content);
    assert.equal((await client.remove(u)).removed, res.chunks);
    const e = await rejects(() => client.remove(u), ragmem.NotFoundError, { status: 404, code: "not_found" });
    assert.ok(e.requestId);
    assert.ok(e.message.includes(u));
  });

  it("indexes a file as ragmem index does", async () => {
    const d = mkdtempSync(join(tmpdir(), "ragmem-ts-"));
    try {
      const p = join(d, "notes b+c@(1)ü.md");
      writeFileSync(p, "---\ntags: x\n---\n# Release checklist\n\nTag the release, then publish the notes.\n");
      const res = await client.indexFile(p, { attrs: { kind: "checklist" } });
      assert.equal(res.url, "file://" + d + "/notes%20b+c@%281%29%C3%BC.md"); // as Go's url.URL writes it
      assert.equal((await client.source(res.url)).title, "Release checklist");
      await client.remove(res.url);
      const b = join(d, "blob.txt");
      writeFileSync(b, Buffer.from([0xff, 0xfe, 0, 1]));
      await rejects(() => client.indexFile(b), TypeError);
      // A File, as a browser gives one.
      const FileClass = globalThis.File ?? (await import("node:buffer")).File; // a global from Node 20 on
      const f = new FileClass(["# From the browser\n\nDropped into the page."], "dropped.md");
      const fr = await client.indexFile(f, { url: "upload://dropped.md" });
      assert.equal((await client.source(fr.url)).title, "From the browser");
      await client.remove(fr.url);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it("indexes many documents and reports the ones it could not index", async () => {
    const a = `notes://${uid()}`, b = `notes://${uid()}`;
    const res = await client.indexMany([{ url: a, content: "Sourdough needs a lively starter." }, { url: b, content: "   " }]);
    assert.deepEqual(res.map((r) => r.url), [a, b]);
    assert.ok(res[0].chunks > 0 && res[1].error);
    const e = await rejects(() => client.index({ url: b, content: "\n\n" }), ragmem.IndexingError, { code: "not_indexed" });
    assert.equal(e.result.url, b);
    await client.remove(a);
  });

  it("indexes pages in the background, polls the job and forgets the page", async () => {
    const u = `https://example.com/${uid()}`;
    const html = "<html><head><title>Narwhals | Sea</title></head><body><nav>Home</nav><article><h1>Narwhals</h1>" +
      "<p>The narwhal's tusk is a canine tooth that grows through the upper lip in a left-handed spiral.</p>" +
      "<p>It can reach three metres and holds millions of nerve endings.</p></article></body></html>";
    const acc = await client.indexPageAsync({ url: u, html });
    assert.equal(acc.status, "queued");
    assert.equal(acc.title, "Narwhals");
    assert.equal(acc.job.id, acc.jobId);
    const job = await client.waitJob(acc.jobId, { timeoutMs: 60_000 });
    assert.equal(job.state, "done");
    assert.ok(job.chunks > 0);
    assert.equal((await client.job(acc.jobId)).state, "done");
    assert.ok((await client.jobs({ state: ["done"], limit: 1000 })).jobs.some((j) => j.id === acc.jobId));
    assert.deepEqual(await client.indexPage({ url: u, html }), { url: u, chunks: job.chunks, unchanged: true });
    assert.equal((await client.search("narwhal tusk canine tooth", { filters: { url: u } })).results[0].url, u);
    assert.deepEqual(await client.forgetPage(u), { url: u, removed: job.chunks, cancelledJobs: [] });
    await rejects(() => client.source(u), ragmem.NotFoundError);
    await rejects(() => client.job("job_nope"), ragmem.NotFoundError);
    await rejects(() => client.retryJob("job_nope"), ragmem.NotFoundError);
    const t = `https://example.com/${uid()}`;
    assert.ok((await client.indexPage({ url: t, text: "# Kelp\n\nKelp forests grow fast.", format: "markdown", title: "Kelp" })).chunks > 0);
    await client.forgetPage(t);
    await rejects(() => client.indexPageAsync({ url: `https://example.com/${uid()}`, html: "<html><body><script>x()</script></body></html>" }),
      ragmem.UnprocessableError, { status: 422, code: "no_content" });
  });

  it("builds the context message", async () => {
    const u = `notes://${uid()}`;
    await client.indexText(u, "Hybrid search fuses BM25 and vector similarity with relative score fusion.");
    const ctx = await client.buildContext("how does hybrid search fuse BM25 and vectors", { model: "gpt-4o", filter: `source = "${u}"` });
    assert.equal(ctx.empty, false);
    assert.equal(ctx.message.role, "assistant");
    assert.ok(ctx.message.content.includes("<knowledge_context>"));
    assert.ok(ctx.sources.some((x) => x.url === u));
    assert.ok(ctx.tokens.knowledge > 0 && ctx.budgets.knowledge > 0);
    assert.match(ctx.summary, /Showing/);
    await client.remove(u);
  });

  it("pages through sources", async () => {
    const tag = uid();
    const urls = [0, 1, 2].map((i) => `notes://${tag}/${i}`).sort();
    await client.indexMany(urls.map((u, i) => ({ url: u, content: `Document number ${i} of ${tag}.`, attrs: { batch: tag } })));
    const first = await client.sources({ limit: 2, filter: `batch = "${tag}"` });
    assert.equal(first.total, 3);
    assert.deepEqual(first.sources.map((x) => x.url), urls.slice(0, 2));
    const rest = await client.sources({ offset: 2, limit: 2, filter: `batch = "${tag}"` });
    assert.deepEqual(rest.sources.map((x) => x.url), urls.slice(2));
    for (const u of urls) await client.remove(u);
  });

  it("throws errors carrying the code, status and request id", async () => {
    const e = await rejects(() => client.search("q", { filter: "team = = x" }), ragmem.BadRequestError, { status: 400, code: "bad_request" });
    assert.ok(e.requestId && e.message.includes("filter"));
    assert.ok(e instanceof ragmem.APIError && e instanceof ragmem.RagmemError && e instanceof Error);
    assert.equal(e.name, "BadRequestError");
    await rejects(() => client.search("q", { topK: 100000 }), ragmem.BadRequestError);
  });

  it("manages preferences", async () => {
    const ns = client.withNamespace("ts-prefs-" + uid());
    const p = await ns.addPreference("expertise", "User is a Go developer");
    assert.equal(p.type, "expertise");
    assert.deepEqual((await ns.listPreferences()).map((x) => x.id), [p.id]);
    const d = await ns.detectPreference("I prefer short answers with code examples", { save: true });
    assert.ok(d.detected && d.saved);
    assert.equal((await ns.listPreferences()).length, 2);
    assert.equal(await ns.removePreference(p.id), true);
    assert.equal(await ns.removePreference(p.id), false);
    assert.equal(await ns.clearPreferences(), 1);
    assert.deepEqual(await ns.listPreferences(), []);
    assert.equal((await ns.detectPreference("What time is it?")).detected, false);
    await rejects(() => ns.addPreference("mood", "happy"), ragmem.BadRequestError);
  });

  it("keeps namespaces apart", async () => {
    const a = client.withNamespace("ts-a-" + uid());
    const b = client.withNamespace("ts-b-" + uid());
    const word = "zq" + uid();
    await a.indexText("notes://secret", `The launch code word is ${word}.`);
    assert.equal((await a.search(word)).results[0].url, "notes://secret");
    assert.deepEqual((await b.search(word)).results, []);
    const st = await a.stats();
    assert.equal(st.namespace, a.namespace);
    assert.equal(st.store.documentCount, 1);
    await rejects(() => b.source("notes://secret"), ragmem.NotFoundError);
    await rejects(() => client.withNamespace("Not A Namespace!").stats(), ragmem.BadRequestError);
  });

  it("deletes sources by filter and sets attributes", async () => {
    const ns = client.withNamespace("ts-bulk-" + uid());
    for (let i = 0; i < 5; i++) {
      await ns.indexText(`notes://bulk/${i}`, `Bulk note ${i} about herons.`, { attrs: { team: i % 2 === 0 ? "red" : "blue" } });
    }
    const changed = await ns.setAttrs("notes://bulk/1", { team: "red", extra: "x" });
    assert.equal(changed.url, "notes://bulk/1");
    assert.ok(changed.changed > 0);
    await ns.setAttrs("notes://bulk/1", { extra: null });
    assert.deepEqual((await ns.sources({ filter: "extra EXISTS" })).sources, []);
    const want = ["notes://bulk/0", "notes://bulk/1", "notes://bulk/2", "notes://bulk/4"];
    const dry = await ns.deleteSources('team = "red"', { dryRun: true });
    assert.equal(dry.dryRun, true);
    assert.deepEqual(dry.sources.map((x) => x.url), want);
    assert.equal((await ns.stats()).store.documentCount, 5);
    const done = await ns.deleteSources('team = "red"');
    assert.equal(done.dryRun, false);
    assert.deepEqual(done.sources.map((x) => x.url), want);
    assert.deepEqual((await ns.sources()).sources.map((x) => x.url), ["notes://bulk/3"]);
    await rejects(() => ns.deleteSources(), ragmem.BadRequestError);
    await rejects(() => ns.deleteSources("team = "), ragmem.BadRequestError);
    await rejects(() => ns.setAttrs("notes://bulk/none", { a: "b" }), ragmem.NotFoundError);
    await rejects(() => ns.setAttrs("preference://user", { a: "b" }), ragmem.PermissionDeniedError, { code: "reserved" });
    await ns.addPreference("expertise", "User is a Go developer");
    await rejects(() => ns.deleteSources('type = "preference"'), ragmem.PermissionDeniedError);
    assert.equal((await ns.deleteSources(undefined, { all: true })).removed, 1);
    assert.equal((await ns.listPreferences()).length, 1);
  });

  it("reports stats and the OpenAPI document", async () => {
    const st = await client.stats();
    assert.equal(typeof st.store.documentCount, "number");
    assert.equal(typeof st.store.queue.depth, "number");
    assert.ok(st.server.uptimeSeconds >= 0);
    assert.match(String((await client.openapi()).openapi), /^3\.1/);
  });

  it("manages agent memories", async () => {
    const m = client.withNamespace("ts-mem-" + uid()).memories;
    const w = await m.add({ title: "The gateway listens on port 8080", content: "The gateway service listens on port 8080.",
      whenToUse: ["gateway|port"], tags: ["ops"], importance: "high", occurredAt: new Date("2025-05-10T00:00:00Z") });
    const slug = w.memory.slug;
    assert.equal(slug, "the-gateway-listens-on-port-8080");
    assert.equal(w.appended, false);
    assert.equal(w.memory.path, slug + ".md");
    const moved = await m.add({ title: "Gateway moved", content: "The gateway service listens on port 9090.", whenToUse: ["gateway|port"] });
    await m.supersede(moved.memory.slug, slug, { provenance: "checked the config" });
    const listed = await m.list();
    assert.deepEqual(listed.memories.map((x) => x.slug).sort(), ["gateway-moved", slug]);
    assert.deepEqual(listed.problems, []);
    assert.deepEqual((await m.list({ superseded: true })).memories.map((x) => x.slug), [slug]);
    const detail = await m.get(slug);
    assert.equal(detail.memory.supersededBy, "gateway-moved");
    assert.equal(detail.entries[0].title, "The gateway listens on port 8080");
    const match = await m.match("change the gateway port", { context: true });
    assert.equal(match.matches[0].memory.slug, "gateway-moved");
    assert.ok(match.message.content.includes("[memory:gateway-moved]"));
    assert.deepEqual((await m.search("gateway port", { when: "in May 2025" })).results.map((f) => f.memory.slug), [slug]);
    assert.deepEqual(await m.feedback({ answer: "Use 9090 [memory:gateway-moved].", injected: ["gateway-moved"] }), { cited: ["gateway-moved"], unknown: [] });
    const st = await m.stats();
    assert.deepEqual([st.memories, st.superseded, st.citations], [2, 1, 1]);
    assert.deepEqual((await m.refresh()).problems, []);
    await rejects(() => m.get("nope"), ragmem.NotFoundError);
    await rejects(() => m.extract({ agent: "developer", task: "add a login page", agentOutput: "Added the page." }), ragmem.UnavailableError, { code: "unavailable" });
  });
});

describe("errors without a server", () => {
  it("connection refused", async () => {
    const srv = createServer();
    await new Promise((r) => srv.listen(0, "127.0.0.1", r));
    const port = srv.address().port;
    await new Promise((r) => srv.close(r));
    const c = new Client({ url: `http://127.0.0.1:${port}`, token: "t", timeoutMs: 5000 });
    await rejects(() => c.stats(), ragmem.APIConnectionError, { status: 0, code: "connection_error" });
  });

  /** A server that accepts connections and never answers; close() ends them. */
  async function silent() {
    const socks = new Set();
    const srv = createServer((sock) => socks.add(sock));
    await new Promise((r) => srv.listen(0, "127.0.0.1", r));
    srv.end = () => {
      for (const sock of socks) sock.destroy();
      return new Promise((r) => srv.close(r));
    };
    return srv;
  }

  it("timeout", async () => {
    const srv = await silent();
    try {
      const c = new Client({ url: `http://127.0.0.1:${srv.address().port}`, token: "t", timeoutMs: 500 });
      const t0 = Date.now();
      await rejects(() => c.stats(), ragmem.APITimeoutError, { code: "timeout" });
      assert.ok(Date.now() - t0 < 5000);
    } finally {
      await srv.end();
    }
  });

  it("cancellation", async () => {
    const srv = await silent();
    try {
      const c = new Client({ url: `http://127.0.0.1:${srv.address().port}`, token: "t" });
      const ctl = new AbortController();
      setTimeout(() => ctl.abort(new Error("user gave up")), 100);
      await assert.rejects(() => c.search("q", { signal: ctl.signal }), /user gave up/);
    } finally {
      await srv.end();
    }
  });

  it("bad arguments and environment defaults", () => {
    for (const bad of ["ftp://x", "localhost:7437", "http://"]) assert.throws(() => new Client({ url: bad, token: "t" }), TypeError);
    assert.throws(() => new Client({ url: "http://127.0.0.1:1", timeoutMs: 0 }), RangeError);
    const old = { ...process.env };
    try {
      Object.assign(process.env, { RAGMEM_URL: "http://127.0.0.1:9/", RAGMEM_TOKEN: "tok", RAGMEM_NAMESPACE: "team" });
      const c = new Client();
      assert.deepEqual([c.url, c.namespace], ["http://127.0.0.1:9", "team"]);
      assert.equal(c.withNamespace(undefined).namespace, undefined);
    } finally {
      for (const k of ["RAGMEM_URL", "RAGMEM_TOKEN", "RAGMEM_NAMESPACE"]) {
        if (old[k] === undefined) delete process.env[k];
        else process.env[k] = old[k];
      }
    }
  });
});

const own = await Served.start("--rate-limit", "2", "--rate-burst", "2");
describe("a server of its own", { skip: own ? false : "no ragmem binary" }, () => {
  after(() => own?.stop());

  it("authentication", async () => {
    const e = await rejects(() => new Client({ url: own.url, token: "rgm_wrong", maxRetries: 5 }).stats(), ragmem.AuthenticationError,
      { status: 401, code: "unauthorized" });
    assert.ok(e.requestId);
  });

  it("a token bound to a namespace", async () => {
    const tok = own.ragmem("token", "rotate", "--namespace", "alice").trim();
    const alice = new Client({ url: own.url, token: tok, maxRetries: 5 });
    const main = new Client({ url: own.url, token: own.token, maxRetries: 5 });
    // The server reads the token file again within a second; failed
    // authentications meanwhile are rate-limited per address.
    for (const deadline = Date.now() + 30_000; ;) {
      try {
        await alice.stats();
        break;
      } catch (err) {
        if (!(err instanceof ragmem.AuthenticationError || err instanceof ragmem.RateLimitError) || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    await alice.indexText("notes://alice", "Alice keeps her tea recipes here.");
    assert.equal((await alice.stats()).namespace, "alice");
    assert.deepEqual((await main.search("tea recipes")).results, []);
    assert.equal((await main.withNamespace("alice").search("tea recipes")).results[0].url, "notes://alice");
    await rejects(() => alice.withNamespace("bob").stats(), ragmem.PermissionDeniedError, { status: 403, code: "forbidden" });
  });

  /** n calls at once; their results or errors. */
  const burst = (c, n = 8) => Promise.all(Array.from({ length: n }, () => c.stats().catch((e) => e)));

  it("retries 429 as the server asks, within bounds", async () => {
    // Without retries, a burst past the limit (2 a second, 2 at once) gets 429 with Retry-After.
    const limited = (await burst(new Client({ url: own.url, token: own.token, maxRetries: 0 }))).filter((r) => r instanceof Error);
    assert.ok(limited.length > 0);
    for (const e of limited) {
      assert.ok(e instanceof ragmem.RateLimitError, String(e));
      assert.deepEqual([e.status, e.code], [429, "rate_limited"]);
      assert.ok(e.retryAfter > 0);
    }
    // With them, every call of the burst succeeds, waiting as asked.
    const got = await burst(new Client({ url: own.url, token: own.token, maxRetries: 10 }));
    assert.deepEqual(got.filter((r) => r instanceof Error), []);
    // A wait longer than maxRetryWaitMs is not waited for.
    const t0 = Date.now();
    const fast = await burst(new Client({ url: own.url, token: own.token, maxRetries: 10, maxRetryWaitMs: 0 }));
    assert.ok(fast.some((r) => r instanceof ragmem.RateLimitError));
    assert.ok(Date.now() - t0 < 10_000);
  });

  it("concurrent calls", async () => {
    const c = new Client({ url: own.url, token: own.token, maxRetries: 20, maxRetryWaitMs: 5000 });
    await Promise.all([0, 1, 2, 3].map((i) => c.withNamespace(`conc-${i}`).indexText(`notes://${i}`, `Call ${i} wrote this.`)));
  });
});
