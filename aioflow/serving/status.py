"""Errors as the APIs report them: any exception of a request as an OpError (its class
is the error code), and that code as TF Serving's HTTP status (http_server.cc's table)
and as a gRPC status code (the same numbers)."""

from __future__ import annotations

import asyncio
import re

from aioflow.framework import errors

#: TF Serving's ToHTTPStatusCode: canonical error code -> HTTP status.
HTTP_STATUS = {
    errors.OK: 200,
    errors.CANCELLED: 499,  # CLIENT_CLOSED_REQUEST
    errors.UNKNOWN: 500,
    errors.INVALID_ARGUMENT: 400,
    errors.DEADLINE_EXCEEDED: 504,
    errors.NOT_FOUND: 404,
    errors.ALREADY_EXISTS: 409,
    errors.PERMISSION_DENIED: 403,
    errors.RESOURCE_EXHAUSTED: 429,
    errors.FAILED_PRECONDITION: 400,
    errors.ABORTED: 409,
    errors.OUT_OF_RANGE: 400,
    errors.UNIMPLEMENTED: 501,
    errors.INTERNAL: 500,
    errors.UNAVAILABLE: 503,
    errors.DATA_LOSS: 500,
    errors.UNAUTHENTICATED: 401,
}


def as_op_error(e: BaseException) -> errors.OpError:
    """The OpError a request's exception stands for: bad values fed (TypeError,
    ValueError) are INVALID_ARGUMENT, a timeout DEADLINE_EXCEEDED, anything else
    INTERNAL with its type named (and no path of the server's files)."""
    if isinstance(e, errors.OpError):
        return e
    if isinstance(e, (TypeError, ValueError)):
        return errors.InvalidArgumentError(None, None, str(e))
    if isinstance(e, (TimeoutError, asyncio.TimeoutError)):
        return errors.DeadlineExceededError(None, None, "Deadline Exceeded")
    return errors.InternalError(None, None, f"{type(e).__name__}: {without_paths(str(e))}")


_PATH = re.compile(r"(?<![\w.:/])/(?:[^\s'\"/:]+/)+[^\s'\",:)]*")


def without_paths(text: str) -> str:
    """`text` with the absolute filesystem paths in it replaced by <path>: an error of
    the server's own (an OSError of a file it opened) must not tell a client where it is
    installed."""
    return _PATH.sub("<path>", text)


def http_status(err: errors.OpError) -> int:
    return HTTP_STATUS.get(err.error_code, 500)


def code_name(err: errors.OpError) -> str:
    """The error code's name (INVALID_ARGUMENT, ...), as metrics label it."""
    from aioflow.proto import error_codes_pb2

    return error_codes_pb2.Code.Name(err.error_code)
