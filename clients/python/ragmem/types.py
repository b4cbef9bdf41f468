"""The wire types of ragmem's HTTP API, as TypedDicts.

Field names are exactly those on the wire (camelCase), the same as the Go
types' JSON tags (rag.ChunkJSON, rag.SearchJSON, server.JobJSON, ...) and the
OpenAPI document the server serves at /v1/openapi.json. Answers are the
decoded JSON objects themselves: ``result["headingPath"]``. Times are RFC 3339
strings. Keys the server leaves out when empty are in the ``total=False``
parts.
"""

from __future__ import annotations

from typing import Dict, List, Literal, TypedDict

Mode = Literal["hybrid", "vector", "fulltext"]
"""A search mode."""

Fusion = Literal["relative", "rrf", "dbsf"]
"""How hybrid search fuses its BM25 and vector lists."""

DocType = Literal["knowledge", "memory", "preference"]
"""The type of a stored source."""

JobState = Literal["queued", "running", "done", "failed", "dead", "cancelled"]
"""The state of a background indexing job."""

PreferenceType = Literal["expertise", "style", "domain", "custom"]
"""The type of a preference."""

Format = Literal["text", "markdown", "html"]
"""The format of a document's content."""


# --- chunks, search and context -------------------------------------------


class _Chunk(TypedDict):
    id: str
    url: str
    title: str
    content: str
    position: int
    tokens: int
    docType: str
    createdAt: str
    age: str
    start: int
    end: int


class Chunk(_Chunk, total=False):
    """One stored chunk (rag.ChunkJSON)."""

    headingPath: List[str]
    attrs: Dict[str, str]
    contentHash: str


class _Explanation(TypedDict):
    fused: float
    method: str


class Explanation(_Explanation, total=False):
    """How a result's score was reached (search.Explanation)."""

    bm25Rank: int
    bm25Score: float
    vectorRank: int
    vectorSimilarity: float
    feedbackSimilarity: float
    boost: float
    signals: List[str]


class _SearchResult(Chunk):
    score: float
    explanation: Explanation


class UnitTurn(TypedDict, total=False):
    """One turn of a round or session, with its own score."""

    sourceUrl: str
    speaker: str
    turn: int
    score: float


class Unit(TypedDict):
    """A round or session of a conversation (search.Unit)."""

    kind: str
    session: str
    turns: List[UnitTurn]


class SearchResult(_SearchResult, total=False):
    """One search result: the chunk, its score and its explanation (rag.ResultJSON).
    ``unit`` names a round's or session's turns (``search(..., unit=...)``)."""

    alsoAt: List[str]
    unit: Unit


class _SearchResponse(TypedDict):
    query: str
    mode: str
    results: List[SearchResult]
    tookMs: float


class SearchResponse(_SearchResponse, total=False):
    """The answer to a search (rag.SearchJSON). ``degraded`` says why the mode is
    not the one asked for (the embedder is unavailable)."""

    degraded: str


class SearchFilters(TypedDict, total=False):
    """Structured filters of a search: one source, document types, exact attribute values."""

    url: str
    docTypes: List[str]
    attrs: Dict[str, str]


class Message(TypedDict):
    """A chat message, ready to send to a model."""

    role: str
    content: str


class Tokens(TypedDict):
    """Token counts of a context block."""

    total: int
    profile: int
    knowledge: int
    userQuery: int


class Budgets(TypedDict):
    """The token budgets a context was built within (budget.Budgets)."""

    totalAvailable: int
    preference: int
    knowledge: int
    remaining: int


class _ContextSource(TypedDict):
    index: int
    url: str
    title: str
    retrieved: str
    age: str
    score: float
    chunkId: str


class ContextSource(_ContextSource, total=False):
    """One source in a context block (rag.ContextItem)."""

    headingPath: List[str]
    truncated: bool


class _Context(TypedDict):
    text: str
    message: Message
    empty: bool
    tokens: Tokens
    budgets: Budgets
    sources: List[ContextSource]
    summary: str
    totalFound: int


class Context(_Context, total=False):
    """A built context (rag.ContextJSON): ``message`` is the ready chat message
    (role assistant, marked as untrusted data), to send as its own message
    and never inside the system prompt; skip it when ``empty``."""

    profile: str
    mode: str
    degraded: str


# --- sources and pages ----------------------------------------------------


class _Source(TypedDict):
    url: str
    title: str
    docType: str
    chunks: int
    tokens: int
    createdAt: str
    age: str


class Source(_Source, total=False):
    """A summary of one source (rag.SourceJSON)."""

    contentHash: str


class Sources(TypedDict):
    """A page of sources, ordered by URL (rag.SourcesJSON)."""

    total: int
    offset: int
    limit: int
    sources: List[Source]


class Page(TypedDict):
    """The chunks of one page, in order."""

    url: str
    title: str
    chunks: List[Chunk]


class Forgotten(TypedDict):
    """The answer to forget_page: chunks removed and the page's queued jobs cancelled."""

    url: str
    removed: int
    cancelledJobs: List[str]


class Removed(TypedDict):
    """The answer to remove: chunks removed."""

    url: str
    removed: int


class _SourcesDeleted(TypedDict):
    dryRun: bool
    removed: int
    chunks: int
    kept: int
    sources: List[Source]


class SourcesDeleted(_SourcesDeleted, total=False):
    """The answer to delete_sources (``POST /v1/sources:delete``): the sources
    removed (or, with dry_run, that would be) and how many memories or
    preferences matched and were kept."""

    keptSources: List[Source]


class AttrsSet(TypedDict):
    """The answer to set_attrs (``PATCH /v1/sources``): chunks changed."""

    url: str
    changed: int


# --- documents, pages and jobs --------------------------------------------


class _Document(TypedDict):
    url: str
    content: str


class Document(_Document, total=False):
    """A document to index synchronously (server.DocumentRequest). ``url`` is any
    source name (a ``file://`` URL for a file); ``format`` text (default),
    markdown or html; ``type`` knowledge (default) or memory; ``extracted``
    says HTML content is already a document's main content."""

    title: str
    format: str
    type: str
    attrs: Dict[str, str]
    extracted: bool


class _DocumentResult(TypedDict):
    url: str
    chunks: int


class DocumentResult(_DocumentResult, total=False):
    """What indexing one document did (server.DocumentResult)."""

    contentHash: str
    removed: int
    unchanged: bool
    superseded: bool
    error: str


class _Job(TypedDict):
    id: str
    url: str
    state: str
    queued: str


class Job(_Job, total=False):
    """A background indexing job (server.JobJSON)."""

    chunks: int
    unchanged: bool
    error: str
    attempts: int
    finished: str
    retryAt: str


class _PageAccepted(TypedDict):
    status: str
    url: str
    title: str
    textBytes: int


class PageAccepted(_PageAccepted, total=False):
    """The answer to index_page_async: ``status`` "queued" (with ``jobId`` and
    ``job``) or "unchanged" (with ``chunks``)."""

    jobId: str
    job: Job
    chunks: int
    extractor: str


class QueueStats(TypedDict, total=False):
    """The counters of a namespace's indexing queue (rag.QueueStats)."""

    depth: int
    waiting: int
    bytes: int
    enqueued: int
    done: int
    unchanged: int
    failed: int
    retries: int
    dead: int
    dropped: int
    cancelled: int
    replayed: int
    durable: bool


class Jobs(TypedDict):
    """The namespace's jobs, most recent first, and its queue's counters."""

    jobs: List[Job]
    queue: QueueStats


class DroppedJob(TypedDict):
    """The answer to drop_job."""

    id: str
    dropped: bool


# --- preferences ----------------------------------------------------------


class Preference(TypedDict):
    """A stored preference (prefs.Preference)."""

    id: str
    type: str
    content: str
    createdAt: str
    updatedAt: str


class Intent(TypedDict):
    """A detected preference statement."""

    type: str
    content: str
    match: str


class _Detection(TypedDict):
    detected: bool


class Detection(_Detection, total=False):
    """The answer to detect_preference: ``intent`` when one was detected,
    ``saved`` when it was stored."""

    intent: Intent
    saved: Preference


# --- stats ----------------------------------------------------------------


class QueryCacheStats(TypedDict, total=False):
    """The query-embedding cache's counters."""

    hits: int
    misses: int
    entries: int
    bytes: int


class _StoreStats(TypedDict):
    documentCount: int
    chunkCount: int
    preferenceCount: int
    memoryCount: int
    indexSizeBytes: int
    embeddingModelLoaded: bool
    embedder: str
    dimension: int
    queue: QueueStats


class StoreStats(_StoreStats, total=False):
    """A namespace's store statistics (index.Stats)."""

    lastSyncTime: str
    embedderSpec: str
    queryCache: QueryCacheStats


class ServerStats(TypedDict):
    uptimeSeconds: float
    namespacesOpen: int


class Stats(TypedDict):
    """The answer to stats: the namespace ("" for the default), its store and the server."""

    namespace: str
    store: StoreStats
    server: ServerStats


# --- agent memories (/v1/memories) ----------------------------------------


class MemoryFeedback(TypedDict, total=False):
    """How often a memory was injected and cited."""

    injected: int
    cited: int
    lastInjected: str
    lastCited: str


class _Memory(TypedDict):
    slug: str
    path: str
    url: str
    title: str
    whenToUse: List[str]
    importance: str
    entries: int
    size: int
    modTime: str
    hash: str
    feedback: MemoryFeedback
    strength: float


class Memory(_Memory, total=False):
    """An agent memory (memory.Memory): its file, frontmatter and derived state.
    Over HTTP ``path`` is the file's name and ``url`` is empty."""

    tags: List[str]
    discoveredAt: str
    discoveredBy: str
    discoveredIn: str
    source: str
    relatedMemories: List[str]
    occurredAt: str
    negative: bool
    supersedes: List[str]
    conflicts: List[str]
    discoverers: List[str]
    confirmations: int
    validFrom: str
    validTo: str
    supersededBy: str
    decayed: bool


class _MemoryProblem(TypedDict):
    file: str
    message: str


class MemoryProblem(_MemoryProblem, total=False):
    """A memory file that does not parse, with the line of the mistake."""

    line: int


class MemoryList(TypedDict):
    """The memories of the namespace's memory directory, and its invalid files."""

    dir: str
    memories: List[Memory]
    problems: List[MemoryProblem]


class _MemoryEntry(TypedDict):
    title: str
    whenToUse: List[str]
    importance: str
    body: str
    line: int


class MemoryEntry(_MemoryEntry, total=False):
    """One entry of a memory file: its frontmatter and Markdown body."""

    tags: List[str]
    discoveredAt: str
    discoveredBy: str
    discoveredIn: str
    source: str
    relatedMemories: List[str]
    occurredAt: str
    negative: bool
    supersedes: List[str]


class MemoryDetail(TypedDict):
    """One memory with its entries."""

    memory: Memory
    entries: List[MemoryEntry]


class _MemoryLink(TypedDict):
    slug: str
    title: str
    similarity: float
    by: str


class MemoryLink(_MemoryLink, total=False):
    """A memory related to another: consolidated into, superseded by, in conflict with."""

    reason: str


class _MemoryWrite(TypedDict):
    memory: Memory
    appended: bool


class MemoryWrite(_MemoryWrite, total=False):
    """What writing a memory did (memory.AddResult)."""

    problem: MemoryProblem
    consolidated: MemoryLink
    superseded: List[MemoryLink]
    conflicts: List[MemoryLink]


class MemoryScore(TypedDict):
    """The parts of a match's relevance score (0-100)."""

    importance: int
    recency: int
    keyword: int
    agentTags: int
    discoverer: int
    total: int


class _MemoryMatch(TypedDict):
    memory: Memory
    score: MemoryScore
    relevance: float
    rank: float
    reasons: List[str]


class MemoryMatch(_MemoryMatch, total=False):
    """A memory selected for a task, with why."""

    feedback: float
    decay: float
    weak: bool


class _MemoryMatches(TypedDict):
    matches: List[MemoryMatch]


class MemoryMatches(_MemoryMatches, total=False):
    """The memories for a task; ``message`` is the context message with their
    contents, when asked for and something matched."""

    message: Message


class _FoundMemory(TypedDict):
    memory: Memory
    relevance: float
    recency: float
    rank: float


class FoundMemory(_FoundMemory, total=False):
    """A memory found by content and time."""

    snippet: str


class MemorySearch(TypedDict):
    """The answer to a memory search, best first."""

    results: List[FoundMemory]


class Citations(TypedDict):
    """The memories an answer cited, and ids that name no injected memory."""

    cited: List[str]
    unknown: List[str]


class _MemoryStatsItem(TypedDict):
    slug: str
    title: str
    importance: str
    feedback: MemoryFeedback
    citeRate: float
    strength: float


class MemoryStatsItem(_MemoryStatsItem, total=False):
    decayed: bool
    negative: bool
    confirmations: int
    supersededBy: str
    validFrom: str
    validTo: str


class MemoryStats(TypedDict):
    """The feedback loop and the memories' state."""

    memories: int
    superseded: int
    decayed: int
    negative: int
    injections: int
    citations: int
    items: List[MemoryStatsItem]


class MemoryRefresh(TypedDict):
    """What re-reading the memory directory found."""

    added: List[str]
    changed: List[str]
    removed: List[str]
    unchanged: List[str]
    problems: List[MemoryProblem]
    reindexed: int


class _Extraction(TypedDict):
    shouldCreateMemory: bool
    reasoning: str
    structured: bool


class Extraction(_Extraction, total=False):
    """What a chat model made of an agent's run: the proposed memory (a dict of
    its frontmatter and content), whether it was written, or the near-duplicate
    that stopped it."""

    memory: Dict[str, object]
    written: MemoryWrite
    duplicate: Dict[str, object]


__all__ = [
    "Budgets", "Chunk", "Citations", "Context", "ContextSource", "Detection", "DocType", "Document",
    "DocumentResult", "DroppedJob", "Explanation", "Extraction", "FoundMemory", "Forgotten", "Format",
    "Fusion", "Intent", "Job", "JobState", "Jobs", "Memory", "MemoryDetail", "MemoryEntry", "MemoryFeedback",
    "MemoryLink", "MemoryList", "MemoryMatch", "MemoryMatches", "MemoryProblem", "MemoryRefresh",
    "MemoryScore", "MemorySearch", "MemoryStats", "MemoryStatsItem", "MemoryWrite", "Message", "Mode",
    "Page", "PageAccepted", "Preference", "PreferenceType", "QueryCacheStats", "QueueStats", "Removed",
    "SearchFilters", "SearchResponse", "SearchResult", "ServerStats", "Source", "Sources", "Stats",
    "StoreStats", "Tokens",
]
