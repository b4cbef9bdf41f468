"""The HTTP client of ragmem's API (``ragmem serve``)."""

from __future__ import annotations

import datetime as _dt
import email.utils
import json
import os
import pathlib
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

from ._errors import (
    APIConnectionError,
    APITimeoutError,
    IndexingError,
    JobError,
    NotFoundError,
    RagmemError,
    error_for,
)
from .types import (
    AttrsSet,
    Citations,
    Context,
    Detection,
    Document,
    DocumentResult,
    DroppedJob,
    Extraction,
    Forgotten,
    Job,
    Jobs,
    MemoryDetail,
    MemoryList,
    MemoryMatches,
    MemoryRefresh,
    MemorySearch,
    MemoryStats,
    MemoryWrite,
    Page,
    PageAccepted,
    Preference,
    Removed,
    SearchFilters,
    SearchResponse,
    Sources,
    SourcesDeleted,
    Stats,
)

__version__ = "0.1.0"

DEFAULT_URL = "http://127.0.0.1:7437"
"""Where ``ragmem serve`` listens by default."""

NAMESPACE_HEADER = "X-Ragmem-Namespace"

MAX_RESPONSE_BYTES = 64 << 20
"""The largest answer the client reads (a page of 1,000 sources or a page's
4,096 chunks are far below it); a larger one is an error, not a memory spike."""

_TERMINAL_JOB_STATES = ("done", "failed", "dead", "cancelled")

Time = Union[str, _dt.datetime, _dt.date]
"""A time: an ISO 8601 string, a datetime (naive ones are taken as UTC) or a date."""


def _iso(t: Optional[Time]) -> Optional[str]:
    if t is None or isinstance(t, str):
        return t
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.timezone.utc)
        return t.isoformat()
    return t.isoformat()


def _drop_none(d: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds of a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(int(value)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The API never redirects: a redirect is answered as the error it is,
    so the token is never sent to another address."""

    def redirect_request(self, req: Any, fp: Any, code: Any, msg: Any, headers: Any, newurl: Any) -> None:
        return None


def _file_title(text: str, path: pathlib.Path) -> str:
    """The title `ragmem index` gives a text or Markdown file: its first
    "# " heading within 40 lines (after front matter), else its name."""
    text = text[1:] if text.startswith("\ufeff") else text
    for i, line in enumerate(text.split("\n", 40)[:40]):
        line = line.strip()
        if i == 0 and line == "---":
            continue
        if line.startswith("# "):
            return line.lstrip("#").strip()
    return path.stem


def _file_url(path: pathlib.Path) -> str:
    """The file:// URL `ragmem index` gives a file (Go's url.URL with the
    absolute path): bytes other than letters, digits, "-_.~" and
    "/$&+,:;=@" percent-encoded."""
    return "file://" + urllib.parse.quote(path.as_posix(), safe="/$&+,:;=@")


_FILE_FORMATS = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text", ".html": "html", ".htm": "html"}


class Client:
    """A client of one ragmem server, in one namespace.

    Arguments default to the environment: ``url`` to ``$RAGMEM_URL`` (else
    http://127.0.0.1:7437), ``token`` to ``$RAGMEM_TOKEN`` and ``namespace`` to
    ``$RAGMEM_NAMESPACE`` (else the token's own namespace, or the default one).

    ``timeout`` is the seconds to wait for a connection and for each read of
    an answer. Answers 429 (and 503 that carry ``Retry-After``: the request
    was refused, nothing was done) are retried after the time the server
    asks, at most ``max_retries`` times and only when that time is at most
    ``max_retry_wait`` seconds; then the error is raised.

    Method names are those of the Go API (``rag.Engine``) in snake_case;
    keyword arguments are the request's fields in snake_case; answers are the
    JSON objects of the wire, with its camelCase keys (see ``ragmem.types``).

    A Client holds no connection and no mutable state: it is safe for
    concurrent use by several threads.
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *, namespace: Optional[str] = None,
                 timeout: float = 60.0, max_retries: int = 2, max_retry_wait: float = 30.0,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        url = url or os.environ.get("RAGMEM_URL") or DEFAULT_URL
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"ragmem: url {url!r} is not an http:// or https:// URL")
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("RAGMEM_TOKEN", "")
        self.namespace = namespace if namespace is not None else (os.environ.get("RAGMEM_NAMESPACE") or None)
        if timeout <= 0:
            raise ValueError("ragmem: timeout must be positive")
        if max_retries < 0 or max_retry_wait < 0:
            raise ValueError("ragmem: max_retries and max_retry_wait must not be negative")
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.ssl_context = ssl_context
        handlers: List[Any] = [_NoRedirect()]
        if ssl_context is not None:
            handlers.append(urllib.request.HTTPSHandler(context=ssl_context))
        self._opener = urllib.request.build_opener(*handlers)
        self.memories = Memories(self)
        """The namespace's agent memories (``/v1/memories``)."""

    def __repr__(self) -> str:
        ns = f", namespace={self.namespace!r}" if self.namespace else ""
        return f"Client({self.url!r}{ns})"

    def with_namespace(self, namespace: Optional[str]) -> "Client":
        """A client of the same server in another namespace (None: the default).
        Needs the main token: a token bound to a namespace reaches only its own."""
        return Client(self.url, self.token, namespace=namespace or "", timeout=self.timeout, max_retries=self.max_retries,
                      max_retry_wait=self.max_retry_wait, ssl_context=self.ssl_context)

    # --- transport ----------------------------------------------------------

    def _request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                 body: Any = None) -> Tuple[Any, Optional[str]]:
        """Sends one API call and returns the decoded answer and its request id."""
        url = self.url + path
        if query:
            q = {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        data = None
        headers = {"Accept": "application/json", "User-Agent": f"ragmem-python/{__version__}"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if self.namespace:
            headers[NAMESPACE_HEADER] = self.namespace
        if body is not None:
            data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            req = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with self._opener.open(req, timeout=self.timeout) as resp:
                    status, rid, raw = resp.status, resp.headers.get("X-Request-Id"), self._read(resp)
                    retry = None
            except urllib.error.HTTPError as e:
                status, rid = e.code, e.headers.get("X-Request-Id") if e.headers else None
                retry = _retry_after(e.headers.get("Retry-After") if e.headers else None)
                try:
                    raw = self._read(e)
                except RagmemError:
                    raw = b""
                finally:
                    e.close()
            except OSError as e:  # URLError, connection errors and timeouts
                reason = getattr(e, "reason", e)
                if isinstance(reason, (TimeoutError, socket.timeout)) or isinstance(e, (TimeoutError, socket.timeout)):
                    raise APITimeoutError(f"ragmem: {method} {path}: no answer from {self.url} within {self.timeout:g}s",
                                          code="timeout") from e
                raise APIConnectionError(f"ragmem: {method} {path}: cannot reach {self.url}: {reason}",
                                         code="connection_error") from e
            if status < 400:
                if not raw:
                    return None, rid
                try:
                    return json.loads(raw.decode("utf-8")), rid
                except ValueError as e:
                    raise APIConnectionError(f"ragmem: {method} {path}: the answer is not JSON", code="invalid_response",
                                             status=status, request_id=rid) from e
            if status in (429, 503) and retry is not None and attempt < self.max_retries and retry <= self.max_retry_wait:
                attempt += 1
                time.sleep(retry)
                continue
            raise self._error(status, raw, rid, retry)

    def _read(self, resp: Any) -> bytes:
        raw = cast(bytes, resp.read(MAX_RESPONSE_BYTES + 1))
        if len(raw) > MAX_RESPONSE_BYTES:
            raise APIConnectionError(f"ragmem: the answer is larger than {MAX_RESPONSE_BYTES} bytes", code="response_too_large")
        return raw

    @staticmethod
    def _error(status: int, raw: bytes, rid: Optional[str], retry: Optional[float]) -> RagmemError:
        code, message = f"http_{status}", f"HTTP {status}"
        try:
            env = json.loads(raw.decode("utf-8"))
            err = env.get("error") if isinstance(env, dict) else None
            if isinstance(err, dict):
                code = str(err.get("code") or code)
                message = str(err.get("message") or message)
                rid = str(err.get("requestId") or rid or "") or None
        except ValueError:
            pass
        return error_for(status, code, message, rid, retry)

    # --- indexing -----------------------------------------------------------

    def index_many(self, documents: Sequence[Document]) -> List[DocumentResult]:
        """Indexes up to 1,000 documents synchronously, in one atomic, durable
        write (``POST /v1/documents``). A document that cannot be indexed has
        ``error`` set in its result; the others are indexed."""
        out, _ = self._request("POST", "/v1/documents", body={"documents": list(documents)})
        return cast(List[DocumentResult], out["results"])

    def index(self, document: Document) -> DocumentResult:
        """Indexes one document synchronously; raises IndexingError when the
        server could not index it (no text, binary data, too many chunks)."""
        out, rid = self._request("POST", "/v1/documents", body={"documents": [document]})
        res = cast(DocumentResult, out["results"][0])
        if res.get("error"):
            raise IndexingError(f"ragmem: {res['url']}: {res['error']}", result=cast(Dict[str, Any], res), request_id=rid)
        return res

    def index_text(self, url: str, text: str, *, title: Optional[str] = None, format: Optional[str] = None,
                   type: Optional[str] = None, attrs: Optional[Mapping[str, str]] = None) -> DocumentResult:
        """Indexes text (``format`` text, the default, or markdown) under the
        source name ``url``; indexing it again with other text replaces it."""
        return self.index(cast(Document, _drop_none({"url": url, "content": text, "title": title, "format": format,
                                                      "type": type, "attrs": dict(attrs) if attrs else None})))

    def index_file(self, path: Union[str, "os.PathLike[str]"], *, url: Optional[str] = None, title: Optional[str] = None,
                   type: Optional[str] = None, attrs: Optional[Mapping[str, str]] = None) -> DocumentResult:
        """Reads a text, Markdown or HTML file (by its extension; others as
        text) and indexes it as `ragmem index` does: named by its ``file://``
        URL, titled by its first heading or its name. PDF, DOCX and EPUB files
        need `ragmem index`, which extracts their text."""
        p = pathlib.Path(path).absolute()
        ext = p.suffix.lower()
        if ext in (".pdf", ".docx", ".epub"):
            raise ValueError(f"ragmem: {p}: {ext} files are read by `ragmem index`, not by the client")
        raw = p.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"ragmem: {p}: not UTF-8 text") from e
        fmt = _FILE_FORMATS.get(ext, "text")
        if title is None and fmt != "html":
            title = _file_title(text, p)
        return self.index(cast(Document, _drop_none({"url": url or _file_url(p), "content": text, "title": title,
                                                      "format": fmt, "type": type,
                                                      "attrs": dict(attrs) if attrs else None})))

    def index_page_async(self, url: str, *, html: Optional[str] = None, text: Optional[str] = None,
                         title: Optional[str] = None, format: Optional[str] = None,
                         attrs: Optional[Mapping[str, str]] = None) -> PageAccepted:
        """Sends a web page (its ``html``, or ``text``) to be extracted and
        indexed in the background (``POST /v1/pages``). The answer has
        ``status`` "queued" and a ``jobId`` to poll with job() or wait_job(),
        or "unchanged" when the same URL already holds the same content."""
        body = _drop_none({"url": url, "html": html, "text": text, "title": title, "format": format,
                           "attrs": dict(attrs) if attrs else None})
        out, _ = self._request("POST", "/v1/pages", body=body)
        return cast(PageAccepted, out)

    def index_page(self, url: str, *, html: Optional[str] = None, text: Optional[str] = None,
                   title: Optional[str] = None, format: Optional[str] = None, attrs: Optional[Mapping[str, str]] = None,
                   timeout: float = 120.0, poll_interval: float = 0.25) -> DocumentResult:
        """index_page_async, then waits for its job: the page is searchable
        when this returns. Raises JobError when the job fails or does not end
        within ``timeout`` seconds."""
        acc = self.index_page_async(url, html=html, text=text, title=title, format=format, attrs=attrs)
        if acc["status"] == "unchanged":
            return {"url": acc["url"], "chunks": acc.get("chunks", 0), "unchanged": True}
        job = self.wait_job(acc["jobId"], timeout=timeout, poll_interval=poll_interval)
        res: DocumentResult = {"url": job["url"], "chunks": job.get("chunks", 0)}
        if job.get("unchanged"):
            res["unchanged"] = True
        return res

    def job(self, id: str) -> Job:
        """The state of a background job (``GET /v1/jobs/{id}``)."""
        out, _ = self._request("GET", "/v1/jobs/" + urllib.parse.quote(id, safe=""))
        return cast(Job, out)

    def wait_job(self, id: str, *, timeout: float = 120.0, poll_interval: float = 0.25) -> Job:
        """Polls a job until it is done and returns it. Raises JobError when it
        ends failed, dead or cancelled, or is still running after ``timeout``
        seconds."""
        deadline = time.monotonic() + timeout
        delay = max(0.01, poll_interval)
        while True:
            job = self.job(id)
            state = job["state"]
            if state == "done":
                return job
            if state in _TERMINAL_JOB_STATES:
                why = f": {job['error']}" if job.get("error") else ""
                raise JobError(f"ragmem: job {id} ({job['url']}) ended {state}{why}", code="job_" + state, job=cast(Dict[str, Any], job))
            left = deadline - time.monotonic()
            if left <= 0:
                raise JobError(f"ragmem: job {id} ({job['url']}) is still {state} after {timeout:g}s", code="job_timeout",
                               job=cast(Dict[str, Any], job))
            time.sleep(min(delay, left))
            delay = min(delay * 1.5, 2.0)

    def jobs(self, *, state: Union[str, Sequence[str], None] = None, limit: Optional[int] = None) -> Jobs:
        """The namespace's jobs, most recent first, in the given states (all
        by default), and its queue's counters."""
        if state is not None and not isinstance(state, str):
            state = ",".join(state)
        out, _ = self._request("GET", "/v1/jobs", query={"state": state, "limit": limit})
        return cast(Jobs, out)

    def retry_job(self, id: str) -> Job:
        """Queues a dead letter's page again, its attempts reset."""
        out, _ = self._request("POST", "/v1/jobs/" + urllib.parse.quote(id, safe="") + "/retry")
        return cast(Job, out)

    def drop_job(self, id: str) -> DroppedJob:
        """Deletes a dead letter and its page."""
        out, _ = self._request("DELETE", "/v1/jobs/" + urllib.parse.quote(id, safe=""))
        return cast(DroppedJob, out)

    # --- search and context -------------------------------------------------

    def search(self, query: str, *, top_k: Optional[int] = None, mode: Optional[str] = None,
               fusion: Optional[str] = None, threshold: Optional[float] = None,
               filters: Optional[SearchFilters] = None, filter: Optional[str] = None,
               max_per_source: Optional[int] = None, group_by_source: Optional[bool] = None,
               keep_duplicates: Optional[bool] = None, unit: Optional[str] = None) -> SearchResponse:
        """Hybrid (default), vector or full-text search (``POST /v1/search``).
        ``filter`` is a filter expression (``lang = "en" AND source STARTS WITH
        "https://go.dev/"``); ``filters`` the structured ones (url, docTypes,
        attrs); ``max_per_source`` 0 lifts the cap of 3 results per source;
        ``unit`` is what a conversation's result is: turn (default), round or
        session."""
        body = _drop_none({"query": query, "topK": top_k, "mode": mode, "fusion": fusion, "threshold": threshold,
                           "filters": filters, "filter": filter, "maxPerSource": max_per_source,
                           "groupBySource": group_by_source, "keepDuplicates": keep_duplicates, "unit": unit})
        out, _ = self._request("POST", "/v1/search", body=body)
        return cast(SearchResponse, out)

    def build_context(self, query: str, *, model: Optional[str] = None, model_context_limit: Optional[int] = None,
                      system_prompt: Optional[str] = None, system_prompt_tokens: Optional[int] = None,
                      response_reserve: Optional[int] = None, filter: Optional[str] = None,
                      mode: Optional[str] = None, top_k: Optional[int] = None,
                      knowledge_budget: Optional[int] = None) -> Context:
        """The knowledge context for a model call, sized to its window (``POST
        /v1/context``): send ``context["message"]`` as its own chat message,
        after the system prompt and before the user's, unless ``empty``."""
        body = _drop_none({"query": query, "model": model, "modelContextLimit": model_context_limit,
                           "systemPrompt": system_prompt, "systemPromptTokens": system_prompt_tokens,
                           "responseReserve": response_reserve, "filter": filter, "mode": mode, "topK": top_k,
                           "knowledgeBudget": knowledge_budget})
        out, _ = self._request("POST", "/v1/context", body=body)
        return cast(Context, out)

    # --- sources ------------------------------------------------------------

    def sources(self, *, offset: Optional[int] = None, limit: Optional[int] = None,
                type: Union[str, Sequence[str], None] = None, filter: Optional[str] = None) -> Sources:
        """Sources ordered by URL, a page at a time (limit 1-1000, default 50);
        ``type`` knowledge (default), memory, preference or several."""
        if type is not None and not isinstance(type, str):
            type = ",".join(type)
        out, _ = self._request("GET", "/v1/sources", query={"offset": offset, "limit": limit, "type": type, "filter": filter})
        return cast(Sources, out)

    def source(self, url: str) -> Page:
        """The chunks of one page, in order (``GET /v1/pages``)."""
        out, _ = self._request("GET", "/v1/pages", query={"url": url})
        return cast(Page, out)

    def forget_page(self, url: str) -> Forgotten:
        """Forgets a page and cancels its queued indexing: once this returns,
        the page is gone and stays gone. NotFoundError when there is neither
        the page nor a queued job for it."""
        out, _ = self._request("DELETE", "/v1/pages", query={"url": url})
        return cast(Forgotten, out)

    def remove(self, url: str) -> Removed:
        """Removes a source of any type (a page, a file, a memory) and its chunks."""
        out, _ = self._request("DELETE", "/v1/sources", query={"url": url})
        return cast(Removed, out)

    def delete_sources(self, filter: Optional[str] = None, *, all: bool = False, dry_run: bool = False) -> SourcesDeleted:
        """Removes every knowledge source with a chunk that matches the filter
        expression (the syntax of search's ``filter``), each whole
        (``POST /v1/sources:delete``). With ``dry_run`` nothing is removed and
        the answer lists what would be. No filter matches everything and needs
        ``all=True``. Memories and preferences are never removed here: a filter
        that matches only them raises PermissionDeniedError (code reserved)."""
        body = _drop_none({"filter": filter, "all": all or None, "dryRun": dry_run or None})
        out, _ = self._request("POST", "/v1/sources:delete", body=body)
        return cast(SourcesDeleted, out)

    def set_attrs(self, url: str, attrs: Mapping[str, Optional[str]]) -> AttrsSet:
        """Changes a source's attributes without indexing it again (``PATCH
        /v1/sources``): a string sets a key, None removes it. NotFoundError when
        there is no such source; PermissionDeniedError for a memory, the
        preferences or one of their keys."""
        out, _ = self._request("PATCH", "/v1/sources", query={"url": url}, body={"attrs": dict(attrs)})
        return cast(AttrsSet, out)

    # --- preferences --------------------------------------------------------

    def list_preferences(self) -> List[Preference]:
        """The user's profile."""
        out, _ = self._request("GET", "/v1/preferences")
        return cast(List[Preference], out["preferences"])

    def add_preference(self, type: str, content: str) -> Preference:
        """Adds a preference (type expertise, style, domain or custom)."""
        out, _ = self._request("POST", "/v1/preferences", body={"type": type, "content": content})
        return cast(Preference, out["preference"])

    def remove_preference(self, id: str) -> bool:
        """Removes one preference; False when there is none with that id."""
        try:
            self._request("DELETE", "/v1/preferences", query={"id": id})
        except NotFoundError:
            return False
        return True

    def clear_preferences(self) -> int:
        """Removes every preference and returns how many there were."""
        out, _ = self._request("DELETE", "/v1/preferences", query={"all": True})
        return int(out["removed"])

    def detect_preference(self, message: str, *, save: bool = False) -> Detection:
        """Detects a preference statement in a message ("I'm a data
        scientist", "keep it short"), and stores it with ``save``."""
        out, _ = self._request("POST", "/v1/preferences/detect", body=_drop_none({"message": message, "save": save or None}))
        return cast(Detection, out)

    # --- stats --------------------------------------------------------------

    def stats(self) -> Stats:
        """The namespace's store statistics and indexing queue, and the server's uptime."""
        out, _ = self._request("GET", "/v1/stats")
        return cast(Stats, out)

    def openapi(self) -> Dict[str, Any]:
        """The API's OpenAPI 3.1 description."""
        out, _ = self._request("GET", "/v1/openapi.json")
        return cast(Dict[str, Any], out)


class Memories:
    """The agent memories of a client's namespace (``/v1/memories``): Markdown
    files with a frontmatter, matched to an agent's task. Get it as
    ``client.memories``; it is safe for concurrent use."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def list(self, *, decayed: bool = False, superseded: bool = False) -> MemoryList:
        """The memories, and the files that do not parse; only the decayed or
        superseded ones when asked."""
        out, _ = self._c._request("GET", "/v1/memories", query={"decayed": decayed or None, "superseded": superseded or None})
        return cast(MemoryList, out)

    def add(self, title: str, content: str, when_to_use: Sequence[str], *, tags: Optional[Sequence[str]] = None,
            importance: Optional[str] = None, discovered_at: Optional[Time] = None, discovered_by: Optional[str] = None,
            discovered_in: Optional[str] = None, source: Optional[str] = None,
            related_memories: Optional[Sequence[str]] = None, occurred_at: Optional[Time] = None,
            negative: Optional[bool] = None, supersedes: Optional[Sequence[str]] = None,
            separate: Optional[bool] = None) -> MemoryWrite:
        """Writes a memory. ``when_to_use`` lists when it applies (patterns or
        plain language); a restatement of an existing memory is consolidated
        into it unless ``separate``; one that may contradict another is
        flagged in ``conflicts``."""
        body = _drop_none({"title": title, "content": content, "whenToUse": list(when_to_use),
                           "tags": list(tags) if tags else None, "importance": importance,
                           "discoveredAt": _iso(discovered_at), "discoveredBy": discovered_by,
                           "discoveredIn": discovered_in, "source": source,
                           "relatedMemories": list(related_memories) if related_memories else None,
                           "occurredAt": _iso(occurred_at), "negative": negative,
                           "supersedes": list(supersedes) if supersedes else None, "separate": separate})
        out, _ = self._c._request("POST", "/v1/memories", body=body)
        return cast(MemoryWrite, out)

    def get(self, name: str) -> MemoryDetail:
        """One memory (by slug or file name) with its entries."""
        out, _ = self._c._request("GET", "/v1/memories/" + urllib.parse.quote(name, safe=""))
        return cast(MemoryDetail, out)

    def match(self, task: str, *, agent: Optional[str] = None, agent_tags: Optional[Sequence[str]] = None,
              max_memories: Optional[int] = None, min_importance: Optional[str] = None, no_weak: Optional[bool] = None,
              context: Optional[bool] = None, since: Optional[Time] = None, until: Optional[Time] = None,
              when: Optional[str] = None, include_superseded: Optional[bool] = None) -> MemoryMatches:
        """The memories for an agent's task, best first; with ``context``, the
        ready context message holding their contents."""
        body = _drop_none({"task": task, "agent": agent, "agentTags": list(agent_tags) if agent_tags else None,
                           "maxMemories": max_memories, "minImportance": min_importance, "noWeak": no_weak,
                           "context": context, "since": _iso(since), "until": _iso(until), "when": when,
                           "includeSuperseded": include_superseded})
        out, _ = self._c._request("POST", "/v1/memories/match", body=body)
        return cast(MemoryMatches, out)

    def search(self, query: str = "", *, since: Optional[Time] = None, until: Optional[Time] = None,
               when: Optional[str] = None, include_superseded: Optional[bool] = None,
               limit: Optional[int] = None) -> MemorySearch:
        """Finds memories by content and time (``when``: "last week", "in May
        2025"); superseded ones only with ``include_superseded`` or a time."""
        body = _drop_none({"query": query or None, "since": _iso(since), "until": _iso(until), "when": when,
                           "includeSuperseded": include_superseded, "limit": limit})
        out, _ = self._c._request("POST", "/v1/memories/search", body=body)
        return cast(MemorySearch, out)

    def supersede(self, newer: str, older: str, *, provenance: Optional[str] = None) -> MemoryWrite:
        """Records that memory ``newer`` replaces ``older`` (which stays, marked superseded)."""
        out, _ = self._c._request("POST", "/v1/memories/supersede",
                                  body=_drop_none({"newer": newer, "older": older, "provenance": provenance}))
        return cast(MemoryWrite, out)

    def feedback(self, *, answer: Optional[str] = None, cited: Optional[Sequence[str]] = None,
                 injected: Optional[Sequence[str]] = None) -> Citations:
        """Records the memories a model's answer cites (its ``[memory:slug]``
        ids, or ``cited``), among those ``injected``."""
        body = _drop_none({"answer": answer, "cited": list(cited) if cited is not None else None,
                           "injected": list(injected) if injected is not None else None})
        out, _ = self._c._request("POST", "/v1/memories/feedback", body=body)
        return cast(Citations, out)

    def stats(self) -> MemoryStats:
        """The feedback loop and the memories' state."""
        out, _ = self._c._request("GET", "/v1/memories/stats")
        return cast(MemoryStats, out)

    def refresh(self) -> MemoryRefresh:
        """Re-reads the memory directory now (files edited by hand)."""
        out, _ = self._c._request("POST", "/v1/memories/refresh")
        return cast(MemoryRefresh, out)

    def extract(self, agent: str, task: str, agent_output: str, *, result: Optional[str] = None,
                error: Optional[str] = None, dry_run: Optional[bool] = None) -> Extraction:
        """Asks the server's chat model whether an agent's run is worth
        remembering, and writes the memory unless ``dry_run``. Needs a server
        started with a chat model (UnavailableError otherwise)."""
        body = _drop_none({"agent": agent, "task": task, "agentOutput": agent_output, "result": result, "error": error,
                           "dryRun": dry_run})
        out, _ = self._c._request("POST", "/v1/memories/extract", body=body)
        return cast(Extraction, out)
