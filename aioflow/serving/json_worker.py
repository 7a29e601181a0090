"""Large REST bodies parsed, and large answers formatted, in a worker process.

A JSON body's values take tens of times its bytes as Python objects, and the C calls that
make and unmake them (orjson's parse and dump, NumPy's conversion of nested lists) hold
the GIL for their whole length: on a thread they still stop the event loop (a 16 MB body
held it 2 s on a loaded machine, a 63 MiB one 3.6 s and 2.4 GB of RSS). In a process of
its own the loop is not held and the server's memory does not grow; the process's address
space is capped (WORKER_MEMORY_FACTOR times the request-size limit, and at least
WORKER_MEMORY_MIN), so a body's peak is bounded by the limit on its bytes: past it the
request is RESOURCE_EXHAUSTED (429), and the worker is replaced.

The worker is started on the first large body (spawned: the server's threads are not
forked) and serves one request at a time (RestApi holds a semaphore around it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import resource
from concurrent.futures.process import BrokenProcessPool

from aioflow.framework import dtypes, errors

#: The worker's address space: its size at start plus this many times the request-size
#: limit, and at least WORKER_MEMORY_MIN more.
WORKER_MEMORY_FACTOR = 24
WORKER_MEMORY_MIN = 2 << 30


class _Spec:
    """What parse_predict needs of a signature input: its dtype."""

    __slots__ = ("dtype",)

    def __init__(self, dtype_enum: int):
        self.dtype = dtypes.as_dtype(dtype_enum)


def _limit_memory(extra: int) -> None:
    """The worker's initializer: cap its address space at what it has plus `extra`."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[0])
    limit = pages * resource.getpagesize() + extra
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _error(e: BaseException, signature_name: str = "") -> tuple:
    if isinstance(e, errors.OpError):
        return ("error", signature_name, e.error_code, e.message)
    if isinstance(e, MemoryError):
        return ("error", signature_name, errors.RESOURCE_EXHAUSTED,
                "The request needs more memory than the server gives one request")
    return ("error", signature_name, errors.INVALID_ARGUMENT, f"{type(e).__name__}: {e}")


def parse(body: bytes, signatures: dict, default: str) -> tuple:
    """In the worker: ("ok", signature name, {input: array}, format) or ("error",
    signature name, code, message). `signatures` is {name: {input key: dtype enum}}."""
    from aioflow.serving import rest_codec

    signature_name = ""
    try:
        doc = rest_codec.loads(body)
        del body
        name = doc.get("signature_name", "") if isinstance(doc, dict) else ""
        if not isinstance(name, str):
            raise errors.InvalidArgumentError(
                None, None, f"JSON Value: {rest_codec._debug(name)} not formatted correctly. "
                            "'signature_name' key must be a string value.")
        signature_name = name or default
        specs = signatures.get(signature_name)
        if specs is None:
            raise errors.InvalidArgumentError(
                None, None, f'Serving signature name: "{signature_name}" not found in '
                            'signature def')
        inputs, fmt = rest_codec.parse_predict(
            doc, {key: _Spec(enum) for key, enum in specs.items()})
        return ("ok", signature_name, inputs, fmt)
    except BaseException as e:  # noqa: BLE001 - answered, never raised across processes
        return _error(e, signature_name)


def format_answer(outputs: dict, fmt: str) -> tuple:
    """In the worker: ("ok", body) or ("error", "", code, message)."""
    from aioflow.serving import rest_codec

    try:
        return ("ok", rest_codec.format_predict(outputs, fmt))
    except BaseException as e:  # noqa: BLE001
        return _error(e)


class JsonWorker:
    """The worker process, started when first needed and replaced when it dies."""

    def __init__(self, max_request_bytes: int):
        self._extra = max(WORKER_MEMORY_MIN, WORKER_MEMORY_FACTOR * max_request_bytes)
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    def _executor(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=_limit_memory, initargs=(self._extra,))
        return self._pool

    async def call(self, fn, *args) -> tuple:
        """fn(*args) in the worker; its ("ok", ...) tuple, or an OpError raised."""
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(self._executor(), fn, *args)
        except BrokenProcessPool:  # killed (the kernel's OOM killer, a signal): replace it
            self.close()
            raise errors.ResourceExhaustedError(
                None, None, "The request needs more memory than the server gives one "
                            "request") from None
        if result[0] == "error":
            _, signature_name, code, message = result
            error = errors.exception_type_from_error_code(code)(None, None, message)
            error.signature_name = signature_name
            raise error
        return result

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
