"""A client of ragmem's HTTP API (``ragmem serve``), with the standard library only.

    import os, ragmem

    client = ragmem.Client(os.environ.get("RAGMEM_URL"), os.environ.get("RAGMEM_TOKEN"))
    client.index_text("notes://standup", "We moved the gateway to port 9090.")
    for r in client.search("which port does the gateway use")["results"]:
        print(r["score"], r["url"], r["content"])

Errors are :class:`RagmemError` subclasses carrying the API's ``code``, the
HTTP ``status`` and the server's ``request_id``.
"""

from ._client import DEFAULT_URL, NAMESPACE_HEADER, Client, Memories, Time, __version__
from ._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    IndexingError,
    InsufficientStorageError,
    InternalServerError,
    JobError,
    NotFoundError,
    PermissionDeniedError,
    RagmemError,
    RateLimitError,
    UnavailableError,
    UnprocessableError,
)
from . import types

__all__ = [
    "APIConnectionError", "APIError", "APITimeoutError", "AuthenticationError", "BadRequestError", "Client",
    "ConflictError", "DEFAULT_URL", "IndexingError", "InsufficientStorageError", "InternalServerError", "JobError",
    "Memories", "NAMESPACE_HEADER", "NotFoundError", "PermissionDeniedError", "RagmemError", "RateLimitError", "Time",
    "UnavailableError", "UnprocessableError", "__version__", "types",
]
