// Compiled with `tsc --noEmit` by `npm test`: the published declarations
// type what a user writes, and refuse what is wrong.

import { Client, RagmemError, RateLimitError, JobError } from "../dist/index.js";
import type { Context, Job, Memory, SearchResponse, SearchResult, Stats } from "../dist/index.js";

export async function usage(c: Client): Promise<void> {
  const res: SearchResponse = await c.search("q", { topK: 5, mode: "hybrid", filter: "team = search", filters: { docTypes: ["knowledge"] } });
  const first: SearchResult | undefined = res.results[0];
  const method: string | undefined = first?.explanation.method;
  const path: string[] | undefined = first?.headingPath;
  const ctx: Context = await c.buildContext("q", { model: "gpt-4o", knowledgeBudget: 1500 });
  const messages: { role: string; content: string }[] = ctx.empty ? [] : [ctx.message];
  const job: Job = await c.waitJob("job_1", { timeoutMs: 1000 });
  const st: Stats = await c.stats();
  const n: number = st.store.queue.depth;
  const mem: Memory | undefined = (await c.memories.list()).memories[0];
  const slug: string | undefined = mem?.slug;
  try {
    await c.index({ url: "notes://x", content: "x", format: "markdown", attrs: { a: "b" } });
  } catch (e) {
    if (e instanceof RateLimitError) {
      const after: number | undefined = e.retryAfter;
      void after;
    } else if (e instanceof JobError) {
      const state: string = e.job.state;
      void state;
    } else if (e instanceof RagmemError) {
      const fields: [string, number, string | undefined] = [e.code, e.status, e.requestId];
      void fields;
    }
  }
  // @ts-expect-error: options are the wire's camelCase fields
  await c.search("q", { top_k: 5 });
  // @ts-expect-error: a document needs its content
  await c.index({ url: "notes://x" });
  // @ts-expect-error: results are typed
  const wrong: number = res.results[0]?.content;
  void [method, path, messages, job, n, slug, wrong];
}
