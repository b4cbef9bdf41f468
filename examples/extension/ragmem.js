// A client of ragmem's HTTP API (`ragmem serve`) for Node 18+ and browsers:
// fetch only, no dependencies. Method names are those of the Go API
// (rag.Engine) in camelCase; request options and answers are the JSON
// objects of the wire, with its camelCase keys (see types.ts).
/** The client's version. */
export const VERSION = "0.1.0";
/** Where `ragmem serve` listens by default. */
export const DEFAULT_URL = "http://127.0.0.1:7437";
/** The header that picks a namespace (with the main token). */
export const NAMESPACE_HEADER = "X-Ragmem-Namespace";
/**
 * The largest answer the client reads (a page of 1,000 sources or a page's
 * 4,096 chunks are far below it); a larger one is an error, not a memory spike.
 */
export const MAX_RESPONSE_BYTES = 64 << 20;
/**
 * The base of every error the client throws: `code` is the API's error code
 * (`not_found`, `rate_limited`, ...) or the client's own for errors without an
 * answer (`connection_error`, `timeout`, `not_indexed`, `job_failed`,
 * `job_timeout`, ...); `status` the HTTP status (0 without an answer);
 * `requestId` the server's request id (its log holds the details of a 500
 * under it); `retryAfter` the seconds the server asked to wait.
 */
export class RagmemError extends Error {
    code;
    status;
    requestId;
    retryAfter;
    constructor(message, init) {
        super(message, init.cause === undefined ? undefined : { cause: init.cause });
        this.name = new.target.name;
        this.code = init.code;
        this.status = init.status ?? 0;
        this.requestId = init.requestId;
        this.retryAfter = init.retryAfter;
    }
}
/** The server answered with an error ({"error": {"code", "message", "requestId"}}). */
export class APIError extends RagmemError {
}
/** 400, 405, 413 or 415: the request is malformed, too large or of the wrong type. */
export class BadRequestError extends APIError {
}
/** 401: no token, or a wrong one. */
export class AuthenticationError extends APIError {
}
/** 403: a token bound to another namespace, or a refused origin or host. */
export class PermissionDeniedError extends APIError {
}
/** 404: no such source, job, preference or memory. */
export class NotFoundError extends APIError {
}
/** 409: the URL belongs to a preference or a memory, or a memory file is not a regular file. */
export class ConflictError extends APIError {
}
/** 422: no text to index, a page too complex, or too many chunks. */
export class UnprocessableError extends APIError {
}
/** 429: over the rate limit, after the client's retries. */
export class RateLimitError extends APIError {
}
/** 500 and other 5xx answers without a more specific class. */
export class InternalServerError extends APIError {
}
/** 503: the server is shutting down, busy, its queue full or the request took too long. */
export class UnavailableError extends APIError {
}
/** 507: the namespace's quota is full, or the server's disk. */
export class InsufficientStorageError extends APIError {
}
/** The server could not be reached, or the connection broke (status 0). */
export class APIConnectionError extends RagmemError {
}
/** The server did not answer within the client's timeout. */
export class APITimeoutError extends APIConnectionError {
}
/** A document the server received could not be indexed (`not_indexed`); `result.error` says why. */
export class IndexingError extends RagmemError {
    result;
    constructor(message, result, requestId) {
        super(message, { code: "not_indexed", status: 200, requestId });
        this.result = result;
    }
}
/**
 * A background job ended without indexing its page (`job_failed`,
 * `job_dead`, `job_cancelled`), or did not end in time (`job_timeout`); `job`
 * is its last state.
 */
export class JobError extends RagmemError {
    job;
    constructor(message, code, job) {
        super(message, { code });
        this.job = job;
    }
}
const byStatus = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
    405: BadRequestError, 409: ConflictError, 413: BadRequestError, 415: BadRequestError, 422: UnprocessableError,
    429: RateLimitError, 503: UnavailableError, 507: InsufficientStorageError,
};
function errorFor(status, code, message, requestId, retryAfter) {
    const cls = byStatus[status] ?? (status >= 500 ? InternalServerError : APIError);
    return new cls(message, { code, status, requestId, retryAfter });
}
/** The process environment under Node; nothing in browsers. */
function env() {
    const p = globalThis.process;
    return p?.env ?? {};
}
/** Seconds of a Retry-After header: delta-seconds or an HTTP date. */
function parseRetryAfter(v) {
    if (!v)
        return undefined;
    const s = v.trim();
    if (/^\d+$/.test(s))
        return Number(s);
    const t = Date.parse(s);
    return Number.isNaN(t) ? undefined : Math.max(0, (t - Date.now()) / 1000);
}
function iso(t) {
    return t instanceof Date ? t.toISOString() : t;
}
/** obj without its undefined fields. */
function clean(obj) {
    return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));
}
function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal?.aborted) {
            reject(signal.reason);
            return;
        }
        const onAbort = () => {
            clearTimeout(t);
            reject(signal?.reason);
        };
        const t = setTimeout(() => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
        }, ms);
        signal?.addEventListener("abort", onAbort, { once: true });
    });
}
/** Reads a body of at most MAX_RESPONSE_BYTES. */
async function readBody(res) {
    const declared = Number(res.headers.get("Content-Length") ?? "0");
    if (declared > MAX_RESPONSE_BYTES) {
        await res.body?.cancel();
        throw new APIConnectionError(`ragmem: the answer is larger than ${MAX_RESPONSE_BYTES} bytes`, { code: "response_too_large", status: res.status });
    }
    if (!res.body)
        return "";
    const reader = res.body.getReader();
    const parts = [];
    let n = 0;
    for (;;) {
        const { done, value } = await reader.read();
        if (done)
            break;
        n += value.byteLength;
        if (n > MAX_RESPONSE_BYTES) {
            await reader.cancel();
            throw new APIConnectionError(`ragmem: the answer is larger than ${MAX_RESPONSE_BYTES} bytes`, { code: "response_too_large", status: res.status });
        }
        parts.push(value);
    }
    const all = new Uint8Array(n);
    let off = 0;
    for (const p of parts) {
        all.set(p, off);
        off += p.byteLength;
    }
    return new TextDecoder().decode(all);
}
/** The title `ragmem index` gives a text or Markdown file: its first "# " heading within 40 lines, else its name. */
function fileTitle(text, name) {
    const lines = text.replace(/^\uFEFF/, "").split("\n", 40);
    for (let i = 0; i < lines.length; i++) {
        const line = lines[i].trim();
        if (i === 0 && line === "---")
            continue;
        if (line.startsWith("# "))
            return line.replace(/^#+/, "").trim();
    }
    const base = name.split(/[\\/]/).pop() ?? name;
    const dot = base.lastIndexOf(".");
    return dot > 0 ? base.slice(0, dot) : base;
}
/**
 * The file:// URL `ragmem index` gives a file (Go's url.URL with the
 * absolute path): bytes other than letters, digits, "-_.~" and "/$&+,:;=@"
 * percent-encoded.
 */
function fileURL(absPath) {
    let out = "file://";
    for (const byte of new TextEncoder().encode(absPath.replace(/\\/g, "/"))) {
        const c = String.fromCharCode(byte);
        out += /[A-Za-z0-9\-_.~\/$&+,:;=@]/.test(c) && byte < 0x80 ? c : "%" + byte.toString(16).toUpperCase().padStart(2, "0");
    }
    return out;
}
const fileFormats = {
    ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text", ".html": "html", ".htm": "html",
};
function extension(name) {
    const base = name.split(/[\\/]/).pop() ?? name;
    const dot = base.lastIndexOf(".");
    return dot > 0 ? base.slice(dot).toLowerCase() : "";
}
const terminalStates = ["done", "failed", "dead", "cancelled"];
/**
 * A client of one ragmem server, in one namespace. It holds no connection
 * and no mutable state: share one between concurrent calls.
 *
 * Errors are RagmemError subclasses carrying the API's `code`, the HTTP
 * `status` and the server's `requestId`. A 429, and a 503 that carries
 * Retry-After (the request was refused, nothing was done), is retried after
 * the time the server asks, at most `maxRetries` times and only when that
 * time is at most `maxRetryWaitMs`; nothing else is retried. Redirects are
 * never followed, so the token goes only to the server named.
 */
export class Client {
    url;
    namespace;
    timeoutMs;
    maxRetries;
    maxRetryWaitMs;
    /** The namespace's agent memories (/v1/memories). */
    memories;
    #token;
    #fetch;
    constructor(options = {}) {
        const e = env();
        const url = options.url || e.RAGMEM_URL || DEFAULT_URL;
        let parsed;
        try {
            parsed = new URL(url);
        }
        catch {
            throw new TypeError(`ragmem: url ${JSON.stringify(url)} is not an http:// or https:// URL`);
        }
        if ((parsed.protocol !== "http:" && parsed.protocol !== "https:") || !parsed.host) {
            throw new TypeError(`ragmem: url ${JSON.stringify(url)} is not an http:// or https:// URL`);
        }
        this.url = url.replace(/\/+$/, "");
        this.#token = options.token ?? e.RAGMEM_TOKEN ?? "";
        this.namespace = (options.namespace ?? e.RAGMEM_NAMESPACE) || undefined;
        this.timeoutMs = options.timeoutMs ?? 60_000;
        this.maxRetries = options.maxRetries ?? 2;
        this.maxRetryWaitMs = options.maxRetryWaitMs ?? 30_000;
        if (!(this.timeoutMs > 0))
            throw new RangeError("ragmem: timeoutMs must be positive");
        if (this.maxRetries < 0 || this.maxRetryWaitMs < 0)
            throw new RangeError("ragmem: maxRetries and maxRetryWaitMs must not be negative");
        const f = options.fetch ?? globalThis.fetch;
        if (typeof f !== "function")
            throw new TypeError("ragmem: no fetch: pass options.fetch (Node 18+ and browsers have one)");
        this.#fetch = f.bind(globalThis);
        this.memories = new Memories(this);
    }
    /** A client of the same server in another namespace (undefined: the default). Needs the main token. */
    withNamespace(namespace) {
        return new Client({
            url: this.url, token: this.#token, namespace: namespace ?? "", timeoutMs: this.timeoutMs,
            maxRetries: this.maxRetries, maxRetryWaitMs: this.maxRetryWaitMs, fetch: this.#fetch,
        });
    }
    /**
     * Sends one API call and returns the decoded answer. Other methods are
     * built on it; use it for routes a newer server has.
     */
    async request(method, path, init = {}) {
        let url = this.url + path;
        if (init.query) {
            const q = new URLSearchParams();
            for (const [k, v] of Object.entries(init.query))
                if (v !== undefined)
                    q.set(k, String(v));
            const s = q.toString();
            if (s)
                url += "?" + s;
        }
        const headers = { Accept: "application/json" };
        if (this.#token)
            headers["Authorization"] = "Bearer " + this.#token;
        if (this.namespace)
            headers[NAMESPACE_HEADER] = this.namespace;
        let body;
        if (init.body !== undefined) {
            body = JSON.stringify(init.body);
            headers["Content-Type"] = "application/json";
        }
        for (let attempt = 0;; attempt++) {
            const ctl = new AbortController();
            let timedOut = false;
            const timer = setTimeout(() => {
                timedOut = true;
                ctl.abort();
            }, this.timeoutMs);
            const onAbort = () => ctl.abort(init.signal?.reason);
            if (init.signal?.aborted)
                onAbort();
            init.signal?.addEventListener("abort", onAbort, { once: true });
            let res;
            let text;
            try {
                res = await this.#fetch(url, { method, headers, body, signal: ctl.signal, redirect: "error" });
                text = await readBody(res);
            }
            catch (err) {
                if (err instanceof RagmemError)
                    throw err;
                if (timedOut) {
                    throw new APITimeoutError(`ragmem: ${method} ${path}: no answer from ${this.url} within ${this.timeoutMs} ms`, { code: "timeout", cause: err });
                }
                if (init.signal?.aborted)
                    throw init.signal.reason ?? err;
                const cause = err?.cause;
                const why = cause?.code ?? cause?.message ?? err?.message ?? String(err);
                throw new APIConnectionError(`ragmem: ${method} ${path}: cannot reach ${this.url}: ${why}`, { code: "connection_error", cause: err });
            }
            finally {
                clearTimeout(timer);
                init.signal?.removeEventListener("abort", onAbort);
            }
            const requestId = res.headers.get("X-Request-Id") ?? undefined;
            if (res.ok) {
                if (!text)
                    return { data: undefined, requestId };
                try {
                    return { data: JSON.parse(text), requestId };
                }
                catch (err) {
                    throw new APIConnectionError(`ragmem: ${method} ${path}: the answer is not JSON`, { code: "invalid_response", status: res.status, requestId, cause: err });
                }
            }
            const retryAfter = parseRetryAfter(res.headers.get("Retry-After"));
            if ((res.status === 429 || res.status === 503) && retryAfter !== undefined && attempt < this.maxRetries && retryAfter * 1000 <= this.maxRetryWaitMs) {
                await sleep(retryAfter * 1000, init.signal);
                continue;
            }
            let code = `http_${res.status}`;
            let message = `HTTP ${res.status}`;
            let rid = requestId;
            try {
                const e = JSON.parse(text).error;
                if (e) {
                    code = e.code || code;
                    message = e.message || message;
                    rid = e.requestId || rid;
                }
            }
            catch {
                // not JSON: the status says it all
            }
            throw errorFor(res.status, code, message, rid, retryAfter);
        }
    }
    async #call(method, path, init = {}) {
        return (await this.request(method, path, init)).data;
    }
    // --- indexing -----------------------------------------------------------------
    /**
     * Indexes up to 1,000 documents synchronously, in one atomic, durable write
     * (POST /v1/documents). A document that cannot be indexed has `error` set
     * in its result; the others are indexed.
     */
    async indexMany(documents, opts = {}) {
        const out = await this.#call("POST", "/v1/documents", { body: { documents }, signal: opts.signal });
        return out.results;
    }
    /** Indexes one document synchronously; throws IndexingError when the server could not index it. */
    async index(document, opts = {}) {
        const { data, requestId } = await this.request("POST", "/v1/documents", { body: { documents: [document] }, signal: opts.signal });
        const res = data.results[0];
        if (res.error)
            throw new IndexingError(`ragmem: ${res.url}: ${res.error}`, res, requestId);
        return res;
    }
    /** Indexes text (format text, the default, or markdown) under the source name `url`; indexing it again replaces it. */
    indexText(url, text, opts = {}) {
        const { signal, ...rest } = opts;
        return this.index(clean({ url, content: text, ...rest }), { signal });
    }
    /**
     * Reads a text, Markdown or HTML file (by its extension; others as text)
     * and indexes it as `ragmem index` does: named by its file:// URL, titled by
     * its first heading or its name. Under Node, `file` is a path; in browsers,
     * a File (named by `opts.url`, else `file:///` and its name). PDF, DOCX
     * and EPUB files need `ragmem index`, which extracts their text.
     */
    async indexFile(file, opts = {}) {
        let name;
        let bytes;
        let url;
        if (typeof file === "string") {
            const fsName = "node:fs/promises";
            const pathName = "node:path";
            const [fs, path] = await Promise.all([import(fsName), import(pathName)]);
            name = path.resolve(file);
            url = opts.url ?? fileURL(name);
            bytes = new Uint8Array(await fs.readFile(name));
        }
        else {
            name = file.name ?? "file.txt";
            url = opts.url ?? "file:///" + encodeURIComponent(name);
            bytes = new Uint8Array(await file.arrayBuffer());
        }
        const ext = extension(name);
        if (ext === ".pdf" || ext === ".docx" || ext === ".epub") {
            throw new TypeError(`ragmem: ${name}: ${ext} files are read by \`ragmem index\`, not by the client`);
        }
        let text;
        try {
            text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
        }
        catch {
            throw new TypeError(`ragmem: ${name}: not UTF-8 text`);
        }
        const format = fileFormats[ext] ?? "text";
        const title = opts.title ?? (format === "html" ? undefined : fileTitle(text, name));
        return this.index(clean({ url, content: text, title, format, type: opts.type, attrs: opts.attrs }), { signal: opts.signal });
    }
    /**
     * Sends a web page (its `html`, or `text`) to be extracted and indexed in
     * the background (POST /v1/pages). The answer has `status` "queued" and a
     * `jobId` to poll with job() or waitJob(), or "unchanged" when the same URL
     * already holds the same content.
     */
    indexPageAsync(page, opts = {}) {
        return this.#call("POST", "/v1/pages", { body: clean(page), signal: opts.signal });
    }
    /**
     * indexPageAsync, then waits for its job: the page is searchable when the
     * promise resolves. Throws JobError when the job fails or does not end in time.
     */
    async indexPage(page, opts = {}) {
        const acc = await this.indexPageAsync(page, opts);
        if (acc.status === "unchanged")
            return { url: acc.url, chunks: acc.chunks ?? 0, unchanged: true };
        const job = await this.waitJob(acc.jobId, opts);
        const res = { url: job.url, chunks: job.chunks ?? 0 };
        if (job.unchanged)
            res.unchanged = true;
        return res;
    }
    /** The state of a background job (GET /v1/jobs/{id}). */
    job(id, opts = {}) {
        return this.#call("GET", "/v1/jobs/" + encodeURIComponent(id), { signal: opts.signal });
    }
    /** Polls a job until it is done and returns it; throws JobError when it ends failed, dead or cancelled, or after `timeoutMs`. */
    async waitJob(id, opts = {}) {
        const timeoutMs = opts.timeoutMs ?? 120_000;
        const deadline = Date.now() + timeoutMs;
        let delay = Math.max(10, opts.pollIntervalMs ?? 250);
        for (;;) {
            const job = await this.job(id, opts);
            if (job.state === "done")
                return job;
            if (terminalStates.includes(job.state)) {
                throw new JobError(`ragmem: job ${id} (${job.url}) ended ${job.state}${job.error ? ": " + job.error : ""}`, "job_" + job.state, job);
            }
            const left = deadline - Date.now();
            if (left <= 0)
                throw new JobError(`ragmem: job ${id} (${job.url}) is still ${job.state} after ${timeoutMs} ms`, "job_timeout", job);
            await sleep(Math.min(delay, left), opts.signal);
            delay = Math.min(delay * 1.5, 2000);
        }
    }
    /** The namespace's jobs, most recent first, in the given states (all by default), and its queue's counters. */
    jobs(opts = {}) {
        const state = Array.isArray(opts.state) ? opts.state.join(",") : opts.state;
        return this.#call("GET", "/v1/jobs", { query: { state, limit: opts.limit }, signal: opts.signal });
    }
    /** Queues a dead letter's page again, its attempts reset. */
    retryJob(id, opts = {}) {
        return this.#call("POST", "/v1/jobs/" + encodeURIComponent(id) + "/retry", { signal: opts.signal });
    }
    /** Deletes a dead letter and its page. */
    dropJob(id, opts = {}) {
        return this.#call("DELETE", "/v1/jobs/" + encodeURIComponent(id), { signal: opts.signal });
    }
    // --- search and context -------------------------------------------------------
    /**
     * Hybrid (default), vector or full-text search (POST /v1/search). `filter`
     * is a filter expression; `filters` the structured ones (url, docTypes,
     * attrs); `maxPerSource` 0 lifts the cap of 3 results per source.
     */
    search(query, opts = {}) {
        const { signal, ...rest } = opts;
        return this.#call("POST", "/v1/search", { body: clean({ query, ...rest }), signal });
    }
    /**
     * The knowledge context for a model call, sized to its window (POST
     * /v1/context): send `context.message` as its own chat message, after the
     * system prompt and before the user's, unless `empty`.
     */
    buildContext(query, opts = {}) {
        const { signal, ...rest } = opts;
        return this.#call("POST", "/v1/context", { body: clean({ query, ...rest }), signal });
    }
    // --- sources ------------------------------------------------------------------
    /** Sources ordered by URL, a page at a time (limit 1–1000, default 50). */
    sources(opts = {}) {
        const type = Array.isArray(opts.type) ? opts.type.join(",") : opts.type;
        return this.#call("GET", "/v1/sources", { query: { offset: opts.offset, limit: opts.limit, type, filter: opts.filter }, signal: opts.signal });
    }
    /** The chunks of one page, in order (GET /v1/pages). */
    source(url, opts = {}) {
        return this.#call("GET", "/v1/pages", { query: { url }, signal: opts.signal });
    }
    /**
     * Forgets a page and cancels its queued indexing: once the promise
     * resolves, the page is gone and stays gone. NotFoundError when there is
     * neither the page nor a queued job for it.
     */
    forgetPage(url, opts = {}) {
        return this.#call("DELETE", "/v1/pages", { query: { url }, signal: opts.signal });
    }
    /** Removes a source of any type (a page, a file, a memory) and its chunks. */
    remove(url, opts = {}) {
        return this.#call("DELETE", "/v1/sources", { query: { url }, signal: opts.signal });
    }
    /**
     * Removes every knowledge source with a chunk that matches the filter
     * expression (the syntax of search's `filter`), each whole (POST
     * /v1/sources:delete). With `dryRun` nothing is removed and the answer
     * lists what would be. No filter matches everything and needs `all`.
     * Memories and preferences are never removed here: a filter that matches
     * only them rejects with PermissionDeniedError (code reserved).
     */
    deleteSources(filter, opts = {}) {
        const body = clean({ filter, all: opts.all || undefined, dryRun: opts.dryRun || undefined });
        return this.#call("POST", "/v1/sources:delete", { body, signal: opts.signal });
    }
    /**
     * Changes a source's attributes without indexing it again (PATCH
     * /v1/sources): a string sets a key, null removes it. NotFoundError when
     * there is no such source; PermissionDeniedError for a memory, the
     * preferences or one of their keys.
     */
    setAttrs(url, attrs, opts = {}) {
        return this.#call("PATCH", "/v1/sources", { query: { url }, body: { attrs }, signal: opts.signal });
    }
    // --- preferences --------------------------------------------------------------
    /** The user's profile. */
    async listPreferences(opts = {}) {
        return (await this.#call("GET", "/v1/preferences", { signal: opts.signal })).preferences;
    }
    /** Adds a preference (type expertise, style, domain or custom). */
    async addPreference(type, content, opts = {}) {
        return (await this.#call("POST", "/v1/preferences", { body: { type, content }, signal: opts.signal })).preference;
    }
    /** Removes one preference; false when there is none with that id. */
    async removePreference(id, opts = {}) {
        try {
            await this.#call("DELETE", "/v1/preferences", { query: { id }, signal: opts.signal });
            return true;
        }
        catch (err) {
            if (err instanceof NotFoundError)
                return false;
            throw err;
        }
    }
    /** Removes every preference and returns how many there were. */
    async clearPreferences(opts = {}) {
        return (await this.#call("DELETE", "/v1/preferences", { query: { all: true }, signal: opts.signal })).removed;
    }
    /** Detects a preference statement in a message ("I'm a data scientist", "keep it short"), and stores it with `save`. */
    detectPreference(message, opts = {}) {
        return this.#call("POST", "/v1/preferences/detect", { body: clean({ message, save: opts.save || undefined }), signal: opts.signal });
    }
    // --- stats --------------------------------------------------------------------
    /** The namespace's store statistics and indexing queue, and the server's uptime. */
    stats(opts = {}) {
        return this.#call("GET", "/v1/stats", { signal: opts.signal });
    }
    /** The API's OpenAPI 3.1 description. */
    openapi(opts = {}) {
        return this.#call("GET", "/v1/openapi.json", { signal: opts.signal });
    }
}
/**
 * The agent memories of a client's namespace (/v1/memories): Markdown files
 * with a frontmatter, matched to an agent's task. Get it as `client.memories`.
 */
export class Memories {
    #c;
    constructor(client) {
        this.#c = client;
    }
    async #call(method, path, init = {}) {
        return (await this.#c.request(method, "/v1/memories" + path, init)).data;
    }
    /** The memories, and the files that do not parse; only the decayed or superseded ones when asked. */
    list(opts = {}) {
        return this.#call("GET", "", { query: { decayed: opts.decayed || undefined, superseded: opts.superseded || undefined }, signal: opts.signal });
    }
    /**
     * Writes a memory. `whenToUse` lists when it applies (patterns or plain
     * language); a restatement of an existing memory is consolidated into it
     * unless `separate`; one that may contradict another is flagged in `conflicts`.
     */
    add(memory, opts = {}) {
        const body = clean({ ...memory, discoveredAt: iso(memory.discoveredAt), occurredAt: iso(memory.occurredAt) });
        return this.#call("POST", "", { body, signal: opts.signal });
    }
    /** One memory (by slug or file name) with its entries. */
    get(name, opts = {}) {
        return this.#call("GET", "/" + encodeURIComponent(name), { signal: opts.signal });
    }
    /** The memories for an agent's task, best first; with `context`, the ready context message holding their contents. */
    match(task, opts = {}) {
        const { signal, ...rest } = opts;
        return this.#call("POST", "/match", { body: clean({ task, ...rest, since: iso(rest.since), until: iso(rest.until) }), signal });
    }
    /** Finds memories by content and time (`when`: "last week", "in May 2025"). */
    search(query, opts = {}) {
        const { signal, ...rest } = opts;
        return this.#call("POST", "/search", { body: clean({ query: query || undefined, ...rest, since: iso(rest.since), until: iso(rest.until) }), signal });
    }
    /** Records that memory `newer` replaces `older` (which stays, marked superseded). */
    supersede(newer, older, opts = {}) {
        return this.#call("POST", "/supersede", { body: clean({ newer, older, provenance: opts.provenance }), signal: opts.signal });
    }
    /** Records the memories a model's answer cites (its [memory:slug] ids, or `cited`), among those `injected`. */
    feedback(req, opts = {}) {
        return this.#call("POST", "/feedback", { body: clean(req), signal: opts.signal });
    }
    /** The feedback loop and the memories' state. */
    stats(opts = {}) {
        return this.#call("GET", "/stats", { signal: opts.signal });
    }
    /** Re-reads the memory directory now (files edited by hand). */
    refresh(opts = {}) {
        return this.#call("POST", "/refresh", { signal: opts.signal });
    }
    /**
     * Asks the server's chat model whether an agent's run is worth remembering,
     * and writes the memory unless `dryRun`. Needs a server started with a chat
     * model (UnavailableError otherwise).
     */
    extract(req, opts = {}) {
        return this.#call("POST", "/extract", { body: clean(req), signal: opts.signal });
    }
}
