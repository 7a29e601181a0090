"""OSErrors as TF's file system reports them (tsl errors.cc IOError): the message is
"<context>; <strerror>" and the class follows ErrnoToCode's errno table."""

from __future__ import annotations

import errno
import os

from aioflow.framework import errors


def _codes(code: int, *names: str) -> dict[int, int]:
    """errno values by name (those this platform defines) -> a status code."""
    return {getattr(errno, n): code for n in names if hasattr(errno, n)}


#: ErrnoToCode (tsl/platform/errors.cc); an errno not listed is UNKNOWN.
ERRNO_CODES: dict[int, int] = {
    **_codes(errors.INVALID_ARGUMENT, "EINVAL", "ENAMETOOLONG", "E2BIG", "EDESTADDRREQ",
             "EDOM", "EFAULT", "EILSEQ", "ENOPROTOOPT", "ENOSTR", "ENOTSOCK", "ENOTTY",
             "EPROTOTYPE", "ESPIPE"),
    **_codes(errors.DEADLINE_EXCEEDED, "ETIMEDOUT", "ETIME"),
    **_codes(errors.NOT_FOUND, "ENODEV", "ENOENT", "ENXIO", "ESRCH"),
    **_codes(errors.ALREADY_EXISTS, "EEXIST", "EADDRNOTAVAIL", "EALREADY"),
    **_codes(errors.PERMISSION_DENIED, "EPERM", "EACCES", "EROFS"),
    **_codes(errors.FAILED_PRECONDITION, "ENOTEMPTY", "EISDIR", "ENOTDIR", "EADDRINUSE",
             "EBADF", "EBUSY", "ECHILD", "EISCONN", "ENOTBLK", "ENOTCONN", "EPIPE",
             "ESHUTDOWN", "ETXTBSY"),
    **_codes(errors.RESOURCE_EXHAUSTED, "ENOSPC", "EDQUOT", "EMFILE", "EMLINK", "ENFILE",
             "ENOBUFS", "ENODATA", "ENOMEM", "ENOSR", "EUSERS"),
    **_codes(errors.OUT_OF_RANGE, "EFBIG", "EOVERFLOW", "ERANGE"),
    **_codes(errors.UNIMPLEMENTED, "ENOSYS", "ENOTSUP", "EAFNOSUPPORT", "EPFNOSUPPORT",
             "EPROTONOSUPPORT", "ESOCKTNOSUPPORT", "EXDEV"),
    **_codes(errors.UNAVAILABLE, "EAGAIN", "ECONNREFUSED", "ECONNABORTED", "ECONNRESET",
             "EINTR", "EHOSTDOWN", "EHOSTUNREACH", "ENETDOWN", "ENETRESET", "ENETUNREACH",
             "ENOLCK", "ENOLINK", "ENONET"),
    **_codes(errors.ABORTED, "EDEADLK", "ESTALE"),
    **_codes(errors.CANCELLED, "ECANCELED"),
}


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def io_error(e: OSError, context=None) -> errors.OpError:
    """`e` as TF's IOError(context, errno): context defaults to the file the OS named."""
    code = ERRNO_CODES.get(e.errno, errors.UNKNOWN) if e.errno else errors.UNKNOWN
    if context is None:
        context = e.filename if e.filename is not None else "file operation"
    reason = os.strerror(e.errno) if e.errno else (e.strerror or str(e))
    return errors.exception_type_from_error_code(code)(None, None,
                                                       f"{_text(context)}; {reason}")
