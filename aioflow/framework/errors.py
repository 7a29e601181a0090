"""TensorFlow's error classes and codes, each carrying the node (and op) it concerns."""

from __future__ import annotations

# Canonical error codes (tensorflow/core/protobuf/error_codes.proto).
OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """The base error of a failed graph operation: a message, a code, and the op concerned."""

    error_code = UNKNOWN

    def __init__(self, node_def=None, op=None, message: str = "", error_code: int | None = None):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        if error_code is not None:
            self.error_code = error_code

    @property
    def message(self) -> str:
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def node_name(self) -> str | None:
        if self._node_def is not None:
            return getattr(self._node_def, "name", None)
        if self._op is not None:
            return getattr(self._op, "name", None)
        return None

    def __str__(self) -> str:
        return self._message

    def __reduce__(self):
        return (type(self), (self._node_def, self._op, self._message))


def _make(name: str, code: int, doc: str) -> type[OpError]:
    def __init__(self, node_def=None, op=None, message: str = "", *args, **kwargs):
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc, "error_code": code})


CancelledError = _make("CancelledError", CANCELLED, "The operation or step was cancelled.")
UnknownError = _make("UnknownError", UNKNOWN, "An error of an unknown kind.")
InvalidArgumentError = _make("InvalidArgumentError", INVALID_ARGUMENT, "An argument is invalid.")
DeadlineExceededError = _make("DeadlineExceededError", DEADLINE_EXCEEDED, "A deadline expired.")
NotFoundError = _make("NotFoundError", NOT_FOUND, "A requested entity was not found.")
AlreadyExistsError = _make("AlreadyExistsError", ALREADY_EXISTS, "An entity already exists.")
PermissionDeniedError = _make("PermissionDeniedError", PERMISSION_DENIED, "Permission denied.")
UnauthenticatedError = _make("UnauthenticatedError", UNAUTHENTICATED, "No valid credentials.")
ResourceExhaustedError = _make("ResourceExhaustedError", RESOURCE_EXHAUSTED, "Out of a resource.")
FailedPreconditionError = _make(
    "FailedPreconditionError", FAILED_PRECONDITION, "The system is not in a state to run this."
)
AbortedError = _make("AbortedError", ABORTED, "The operation was aborted.")
OutOfRangeError = _make("OutOfRangeError", OUT_OF_RANGE, "Iterated past the valid range.")
UnimplementedError = _make("UnimplementedError", UNIMPLEMENTED, "Not implemented or supported.")
InternalError = _make("InternalError", INTERNAL, "An internal invariant was broken.")
UnavailableError = _make("UnavailableError", UNAVAILABLE, "The runtime is unavailable.")
DataLossError = _make("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")

_CODE_TO_CLASS = {
    cls.error_code: cls
    for cls in (
        CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
        AlreadyExistsError, PermissionDeniedError, UnauthenticatedError, ResourceExhaustedError,
        FailedPreconditionError, AbortedError, OutOfRangeError, UnimplementedError, InternalError,
        UnavailableError, DataLossError,
    )
}


def exception_type_from_error_code(code: int) -> type[OpError]:
    """The error class for a canonical code (as tf.errors does)."""
    return _CODE_TO_CLASS.get(code, UnknownError)


def error_code_from_exception_type(cls: type[OpError]) -> int:
    return cls.error_code


class InaccessibleTensorError(ValueError):
    """A fetch of a tensor or op marked not fetchable (defined inside a while loop's body or
    a function, or by Graph.prevent_fetching): TF's client raises this ValueError."""
