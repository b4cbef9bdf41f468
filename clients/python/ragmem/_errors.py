"""Errors raised by the client.

Every error is a :class:`RagmemError` carrying the API's error ``code``, the
HTTP ``status`` and the server's ``request_id`` (its logs name the details of
a 500 under it). Errors the server answered are :class:`APIError` subclasses
by status; a server that cannot be reached, or answers too slowly, raises
:class:`APIConnectionError` (``status`` 0).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class RagmemError(Exception):
    """The base of every error the client raises.

    Attributes:
        code: the API's error code (``not_found``, ``rate_limited``, ...), or
            the client's own for errors without an answer (``connection_error``,
            ``timeout``, ``not_indexed``, ``job_failed``, ``job_timeout``).
        status: the HTTP status, 0 when there was no answer.
        request_id: the server's request id (``X-Request-Id``), if any.
        message: the error's message.
        retry_after: seconds the server asked to wait (``Retry-After``), if any.
    """

    def __init__(self, message: str, *, code: str, status: int = 0, request_id: Optional[str] = None,
                 retry_after: Optional[float] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.request_id = request_id
        self.retry_after = retry_after

    def __str__(self) -> str:
        parts = [self.message]
        if self.status:
            parts.append(f"(HTTP {self.status} {self.code}")
            parts[-1] += f", request {self.request_id})" if self.request_id else ")"
        else:
            parts.append(f"({self.code})")
        return " ".join(parts)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.message!r}, code={self.code!r}, status={self.status}, "
                f"request_id={self.request_id!r})")


class APIError(RagmemError):
    """The server answered with an error (``{"error": {"code", "message", "requestId"}}``)."""


class BadRequestError(APIError):
    """400, 405, 413 or 415: the request is malformed, too large or of the wrong type."""


class AuthenticationError(APIError):
    """401: no token, or a wrong one."""


class PermissionDeniedError(APIError):
    """403: a token bound to another namespace, or a refused origin or host."""


class NotFoundError(APIError):
    """404: no such source, job, preference or memory."""


class ConflictError(APIError):
    """409: the URL belongs to a preference or a memory, or a memory file is not a regular file."""


class UnprocessableError(APIError):
    """422: no text to index, a page too complex, or too many chunks."""


class RateLimitError(APIError):
    """429: over the rate limit, after the client's retries."""


class InternalServerError(APIError):
    """500 and other 5xx answers without a more specific class; the server's log has the details."""


class UnavailableError(APIError):
    """503: the server is shutting down, busy, its queue full or the request took too long."""


class InsufficientStorageError(APIError):
    """507: the namespace's quota is full, or the server's disk."""


class APIConnectionError(RagmemError):
    """The server could not be reached, or the connection broke (``status`` 0)."""


class APITimeoutError(APIConnectionError):
    """The server did not answer within the client's timeout."""


class IndexingError(RagmemError):
    """A document the server received could not be indexed (``code`` ``not_indexed``);
    ``result`` is its result, whose ``error`` says why."""

    def __init__(self, message: str, *, result: Dict[str, Any], request_id: Optional[str] = None) -> None:
        super().__init__(message, code="not_indexed", status=200, request_id=request_id)
        self.result = result


class JobError(RagmemError):
    """A background job ended without indexing its page (``code`` ``job_failed``,
    ``job_dead``, ``job_cancelled``), or did not end in time (``job_timeout``);
    ``job`` is its last state."""

    def __init__(self, message: str, *, code: str, job: Dict[str, Any]) -> None:
        super().__init__(message, code=code)
        self.job = job


_BY_STATUS: Dict[int, Type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: BadRequestError,
    409: ConflictError,
    413: BadRequestError,
    415: BadRequestError,
    422: UnprocessableError,
    429: RateLimitError,
    503: UnavailableError,
    507: InsufficientStorageError,
}


def error_for(status: int, code: str, message: str, request_id: Optional[str],
              retry_after: Optional[float]) -> APIError:
    """The APIError subclass for an answer's status."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = InternalServerError if status >= 500 else APIError
    return cls(message, code=code, status=status, request_id=request_id, retry_after=retry_after)
