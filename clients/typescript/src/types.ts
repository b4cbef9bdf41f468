// The wire types of ragmem's HTTP API. Field names are exactly those on the
// wire (camelCase), the same as the Go types' JSON tags (rag.ChunkJSON,
// rag.SearchJSON, server.JobJSON, ...) and the OpenAPI document the server
// serves at /v1/openapi.json. Times are RFC 3339 strings. Optional fields
// are those the server leaves out when empty.

/** A search mode. */
export type Mode = "hybrid" | "vector" | "fulltext";
/** How hybrid search fuses its BM25 and vector lists. */
export type Fusion = "relative" | "rrf" | "dbsf";
/** The type of a stored source. */
export type DocType = "knowledge" | "memory" | "preference";
/** The state of a background indexing job. */
export type JobState = "queued" | "running" | "done" | "failed" | "dead" | "cancelled";
/** The type of a preference. */
export type PreferenceType = "expertise" | "style" | "domain" | "custom";
/** The format of a document's content. */
export type Format = "text" | "markdown" | "html";

// --- chunks, search and context ---------------------------------------------

/** One stored chunk (rag.ChunkJSON). */
export interface Chunk {
  id: string;
  url: string;
  title: string;
  headingPath?: string[];
  content: string;
  position: number;
  tokens: number;
  docType: string;
  createdAt: string;
  age: string;
  attrs?: Record<string, string>;
  start: number;
  end: number;
  contentHash?: string;
}

/** How a result's score was reached (search.Explanation). */
export interface Explanation {
  bm25Rank?: number;
  bm25Score?: number;
  vectorRank?: number;
  vectorSimilarity?: number;
  feedbackSimilarity?: number;
  fused: number;
  boost?: number;
  signals?: string[];
  method: string;
}

/** One search result: the chunk, its score and its explanation (rag.ResultJSON). */
export interface SearchResult extends Chunk {
  score: number;
  explanation: Explanation;
  alsoAt?: string[];
  /** For a round or session (SearchRequest.unit): its turns, each with its own score. */
  unit?: Unit;
}

/** A round or session of a conversation (search.Unit). */
export interface Unit {
  kind: "round" | "session";
  session: string;
  turns: { sourceUrl: string; speaker?: string; turn: number; score?: number }[];
}

/** The answer to a search (rag.SearchJSON); `degraded` says why the mode is not the one asked for. */
export interface SearchResponse {
  query: string;
  mode: string;
  degraded?: string;
  results: SearchResult[];
  tookMs: number;
}

/** Structured filters of a search: one source, document types, exact attribute values. */
export interface SearchFilters {
  url?: string;
  docTypes?: string[];
  attrs?: Record<string, string>;
}

/** The body of POST /v1/search without its query. */
export interface SearchOptions {
  topK?: number;
  mode?: Mode | string;
  fusion?: Fusion | string;
  threshold?: number;
  filters?: SearchFilters;
  /** A filter expression: `team = search AND created >= 2025-01-01`. */
  filter?: string;
  /** Results of one source, at most (default 3; 0: no cap). */
  maxPerSource?: number;
  groupBySource?: boolean;
  keepDuplicates?: boolean;
  /** What a result of a conversation is: turn (default), round or session. */
  unit?: "turn" | "round" | "session";
}

/** A chat message, ready to send to a model. */
export interface Message {
  role: string;
  content: string;
}

/** Token counts of a context block. */
export interface Tokens {
  total: number;
  profile: number;
  knowledge: number;
  userQuery: number;
}

/** The token budgets a context was built within (budget.Budgets). */
export interface Budgets {
  totalAvailable: number;
  preference: number;
  knowledge: number;
  remaining: number;
}

/** One source in a context block (rag.ContextItem). */
export interface ContextSource {
  index: number;
  url: string;
  title: string;
  headingPath?: string[];
  retrieved: string;
  age: string;
  score: number;
  truncated?: boolean;
  chunkId: string;
}

/**
 * A built context (rag.ContextJSON): `message` is the ready chat message (role
 * assistant, marked as untrusted data), to send as its own message and never
 * inside the system prompt; skip it when `empty`.
 */
export interface Context {
  text: string;
  message: Message;
  empty: boolean;
  tokens: Tokens;
  budgets: Budgets;
  sources: ContextSource[];
  profile?: string;
  summary: string;
  totalFound: number;
  mode?: string;
  degraded?: string;
}

/** The body of POST /v1/context without its query. */
export interface ContextOptions {
  model?: string;
  modelContextLimit?: number;
  systemPrompt?: string;
  systemPromptTokens?: number;
  responseReserve?: number;
  filter?: string;
  mode?: Mode | string;
  topK?: number;
  knowledgeBudget?: number;
}

// --- sources and pages --------------------------------------------------------

/** A summary of one source (rag.SourceJSON). */
export interface Source {
  url: string;
  title: string;
  docType: string;
  chunks: number;
  tokens: number;
  createdAt: string;
  age: string;
  contentHash?: string;
}

/** A page of sources, ordered by URL (rag.SourcesJSON). */
export interface Sources {
  total: number;
  offset: number;
  limit: number;
  sources: Source[];
}

/** The query of GET /v1/sources. */
export interface SourcesOptions {
  offset?: number;
  /** 1–1000, default 50. */
  limit?: number;
  /** knowledge (default), memory, preference, or several. */
  type?: string | string[];
  filter?: string;
}

/** The chunks of one page, in order. */
export interface Page {
  url: string;
  title: string;
  chunks: Chunk[];
}

/** The answer to forgetPage: chunks removed and the page's queued jobs cancelled. */
export interface Forgotten {
  url: string;
  removed: number;
  cancelledJobs: string[];
}

/** The answer to remove: chunks removed. */
export interface Removed {
  url: string;
  removed: number;
}

/**
 * The answer to deleteSources (POST /v1/sources:delete): the sources removed
 * (or, with dryRun, that would be) and how many memories or preferences
 * matched and were kept.
 */
export interface SourcesDeleted {
  dryRun: boolean;
  removed: number;
  chunks: number;
  kept: number;
  sources: Source[];
  keptSources?: Source[];
}

/** Options of deleteSources. */
export interface DeleteSourcesOptions {
  /** With no filter: remove every knowledge source. */
  all?: boolean;
  /** List what would be removed; remove nothing. */
  dryRun?: boolean;
}

/** The answer to setAttrs (PATCH /v1/sources): chunks changed. */
export interface AttrsSet {
  url: string;
  changed: number;
}

// --- documents, pages and jobs -------------------------------------------------

/**
 * A document to index synchronously (server.DocumentRequest). `url` is any
 * source name (a file:// URL for a file); `format` text (default), markdown or
 * html; `type` knowledge (default) or memory; `extracted` says HTML content is
 * already a document's main content.
 */
export interface Document {
  url: string;
  content: string;
  title?: string;
  format?: Format | string;
  type?: "knowledge" | "memory" | string;
  attrs?: Record<string, string>;
  extracted?: boolean;
}

/** What indexing one document did (server.DocumentResult). */
export interface DocumentResult {
  url: string;
  contentHash?: string;
  chunks: number;
  removed?: number;
  unchanged?: boolean;
  superseded?: boolean;
  error?: string;
}

/** Options of indexText and indexFile. */
export interface TextOptions {
  title?: string;
  format?: Format | string;
  type?: "knowledge" | "memory" | string;
  attrs?: Record<string, string>;
}

/** A web page to index (POST /v1/pages): its `html`, or `text`. */
export interface PageRequest {
  url: string;
  title?: string;
  html?: string;
  text?: string;
  /** For text: text (default) or markdown. */
  format?: "text" | "markdown" | string;
  attrs?: Record<string, string>;
}

/** A background indexing job (server.JobJSON). */
export interface Job {
  id: string;
  url: string;
  state: JobState | string;
  chunks?: number;
  unchanged?: boolean;
  error?: string;
  attempts?: number;
  queued: string;
  finished?: string;
  retryAt?: string;
}

/**
 * The answer to indexPageAsync: `status` "queued" (with `jobId` and `job`) or
 * "unchanged" (with `chunks`).
 */
export interface PageAccepted {
  status: "queued" | "unchanged" | string;
  url: string;
  jobId?: string;
  job?: Job;
  chunks?: number;
  title: string;
  extractor?: string;
  textBytes: number;
}

/** Options of waitJob and indexPage. */
export interface WaitOptions {
  /** Give up after this long (default 120,000 ms). */
  timeoutMs?: number;
  /** First wait between polls (default 250 ms; it grows to 2 s). */
  pollIntervalMs?: number;
}

/** The counters of a namespace's indexing queue (rag.QueueStats). */
export interface QueueStats {
  depth: number;
  waiting: number;
  bytes: number;
  enqueued: number;
  done: number;
  unchanged: number;
  failed: number;
  retries: number;
  dead: number;
  dropped: number;
  cancelled: number;
  replayed: number;
  durable: boolean;
}

/** The namespace's jobs, most recent first, and its queue's counters. */
export interface Jobs {
  jobs: Job[];
  queue: QueueStats;
}

/** The answer to dropJob. */
export interface DroppedJob {
  id: string;
  dropped: boolean;
}

// --- preferences -----------------------------------------------------------------

/** A stored preference (prefs.Preference). */
export interface Preference {
  id: string;
  type: PreferenceType | string;
  content: string;
  createdAt: string;
  updatedAt: string;
}

/** A detected preference statement. */
export interface Intent {
  type: string;
  content: string;
  match: string;
}

/** The answer to detectPreference: `intent` when one was detected, `saved` when it was stored. */
export interface Detection {
  detected: boolean;
  intent?: Intent;
  saved?: Preference;
}

// --- stats -----------------------------------------------------------------------

/** The query-embedding cache's counters. */
export interface QueryCacheStats {
  hits: number;
  misses: number;
  entries: number;
  bytes: number;
}

/** A namespace's store statistics (index.Stats). */
export interface StoreStats {
  documentCount: number;
  chunkCount: number;
  preferenceCount: number;
  memoryCount: number;
  indexSizeBytes: number;
  lastSyncTime?: string;
  embeddingModelLoaded: boolean;
  embedder: string;
  embedderSpec?: string;
  dimension: number;
  queue: QueueStats;
  queryCache?: QueryCacheStats;
}

/** The answer to stats: the namespace ("" for the default), its store and the server. */
export interface Stats {
  namespace: string;
  store: StoreStats;
  server: { uptimeSeconds: number; namespacesOpen: number };
}

// --- agent memories (/v1/memories) ----------------------------------------------

/** How often a memory was injected and cited. */
export interface MemoryFeedback {
  injected: number;
  cited: number;
  lastInjected?: string;
  lastCited?: string;
}

/** The frontmatter of a memory entry. */
export interface MemoryFrontmatter {
  title: string;
  whenToUse: string[];
  tags?: string[];
  importance: string;
  discoveredAt?: string;
  discoveredBy?: string;
  discoveredIn?: string;
  source?: string;
  relatedMemories?: string[];
  occurredAt?: string;
  negative?: boolean;
  supersedes?: string[];
  conflicts?: string[];
}

/**
 * An agent memory (memory.Memory): its file, frontmatter and derived state.
 * Over HTTP `path` is the file's name and `url` is empty.
 */
export interface Memory extends MemoryFrontmatter {
  slug: string;
  path: string;
  url: string;
  discoverers?: string[];
  entries: number;
  size: number;
  modTime: string;
  hash: string;
  confirmations?: number;
  validFrom?: string;
  validTo?: string;
  supersededBy?: string;
  feedback: MemoryFeedback;
  strength: number;
  decayed?: boolean;
}

/** A memory file that does not parse, with the line of the mistake. */
export interface MemoryProblem {
  file: string;
  line?: number;
  message: string;
}

/** The memories of the namespace's memory directory, and its invalid files. */
export interface MemoryList {
  dir: string;
  memories: Memory[];
  problems: MemoryProblem[];
}

/** One entry of a memory file: its frontmatter and Markdown body. */
export interface MemoryEntry extends MemoryFrontmatter {
  body: string;
  line: number;
}

/** One memory with its entries. */
export interface MemoryDetail {
  memory: Memory;
  entries: MemoryEntry[];
}

/** A memory related to another: consolidated into, superseded by, in conflict with. */
export interface MemoryLink {
  slug: string;
  title: string;
  similarity: number;
  by: string;
  reason?: string;
}

/** What writing a memory did (memory.AddResult). */
export interface MemoryWrite {
  memory: Memory;
  appended: boolean;
  problem?: MemoryProblem;
  consolidated?: MemoryLink;
  superseded?: MemoryLink[];
  conflicts?: MemoryLink[];
}

/** The body of POST /v1/memories. */
export interface NewMemory {
  title: string;
  content: string;
  whenToUse: string[];
  tags?: string[];
  importance?: "low" | "medium" | "high" | "critical" | string;
  discoveredAt?: string | Date;
  discoveredBy?: string;
  discoveredIn?: string;
  source?: string;
  relatedMemories?: string[];
  occurredAt?: string | Date;
  negative?: boolean;
  supersedes?: string[];
  separate?: boolean;
}

/** The parts of a match's relevance score (0–100). */
export interface MemoryScore {
  importance: number;
  recency: number;
  keyword: number;
  agentTags: number;
  discoverer: number;
  total: number;
}

/** A memory selected for a task, with why. */
export interface MemoryMatch {
  memory: Memory;
  score: MemoryScore;
  relevance: number;
  rank: number;
  feedback?: number;
  decay?: number;
  weak?: boolean;
  reasons: string[];
}

/** The body of POST /v1/memories/match without its task. */
export interface MatchOptions {
  agent?: string;
  agentTags?: string[];
  maxMemories?: number;
  minImportance?: string;
  noWeak?: boolean;
  /** Also return the context message holding the memories' contents. */
  context?: boolean;
  since?: string | Date;
  until?: string | Date;
  /** "last week", "in May 2025". */
  when?: string;
  includeSuperseded?: boolean;
}

/** The memories for a task; `message` is the context message with their contents, when asked for and something matched. */
export interface MemoryMatches {
  matches: MemoryMatch[];
  message?: Message;
}

/** The body of POST /v1/memories/search without its query. */
export interface MemorySearchOptions {
  since?: string | Date;
  until?: string | Date;
  when?: string;
  includeSuperseded?: boolean;
  /** Default 10, at most 100. */
  limit?: number;
}

/** A memory found by content and time. */
export interface FoundMemory {
  memory: Memory;
  relevance: number;
  recency: number;
  rank: number;
  snippet?: string;
}

/** The answer to a memory search, best first. */
export interface MemorySearch {
  results: FoundMemory[];
}

/** The body of POST /v1/memories/feedback. */
export interface FeedbackRequest {
  answer?: string;
  cited?: string[];
  injected?: string[];
}

/** The memories an answer cited, and ids that name no injected memory. */
export interface Citations {
  cited: string[];
  unknown: string[];
}

/** One memory in the stats. */
export interface MemoryStatsItem {
  slug: string;
  title: string;
  importance: string;
  feedback: MemoryFeedback;
  citeRate: number;
  strength: number;
  decayed?: boolean;
  negative?: boolean;
  confirmations?: number;
  supersededBy?: string;
  validFrom?: string;
  validTo?: string;
}

/** The feedback loop and the memories' state. */
export interface MemoryStats {
  memories: number;
  superseded: number;
  decayed: number;
  negative: number;
  injections: number;
  citations: number;
  items: MemoryStatsItem[];
}

/** What re-reading the memory directory found. */
export interface MemoryRefresh {
  added: string[];
  changed: string[];
  removed: string[];
  unchanged: string[];
  problems: MemoryProblem[];
  reindexed: number;
}

/** The body of POST /v1/memories/extract. */
export interface ExtractRequest {
  agent: string;
  task: string;
  agentOutput: string;
  /** success (default), failure or partial. */
  result?: string;
  error?: string;
  dryRun?: boolean;
}

/** What a chat model made of an agent's run. */
export interface Extraction {
  shouldCreateMemory: boolean;
  reasoning: string;
  memory?: Record<string, unknown>;
  written?: MemoryWrite;
  duplicate?: Record<string, unknown>;
  structured: boolean;
}
