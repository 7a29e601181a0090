"""The request path both APIs share: resolve the model version, check the request
against its signature as TF Serving's predict_util does, and run it (through the
signature's batcher when batching is on), recording metrics."""

from __future__ import annotations

import asyncio
import contextlib
import time

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.serving.batching import Batcher, BatchingOptions
from aioflow.serving.loader import DEFAULT_SIGNATURE, Signature
from aioflow.serving.model_registry import ModelRegistry, ModelVersion
from aioflow.serving.rest_codec import type_string
from aioflow.serving.status import as_op_error, code_name


class DefaultDeadlines:
    """The server's default deadline (for requests that carry none), kept by one timer
    instead of one per request: requests in flight are held by task with their deadline,
    and a sweep every `period` s (a fiftieth of the deadline, at least 1 ms) cancels
    those past it, so a request ends at most 2% after its default deadline. An
    asyncio.timeout per request cost ~6 µs (its timer's start and stop); this costs a
    dict insert and delete."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self.period = max(timeout_s / 50, 0.001)
        self.tasks: dict[asyncio.Task, float] = {}  # in flight -> its deadline (loop time)
        self.expired: set[asyncio.Task] = set()  # cancelled by a sweep, not yet seen
        self._timer = None
        self._loop = None

    def add(self, task: asyncio.Task) -> None:
        if self._timer is None:
            self._loop = asyncio.get_running_loop()
            self._timer = self._loop.call_later(self.period, self._sweep)
        self.tasks[task] = self._loop.time() + self.timeout_s

    def _sweep(self) -> None:
        now = self._loop.time()
        for task, deadline in list(self.tasks.items()):
            if task.done():  # ended without telling (it cannot, but never leak it)
                del self.tasks[task]
                self.expired.discard(task)
            elif deadline <= now and task not in self.expired:
                self.expired.add(task)
                task.cancel()
        self._timer = (self._loop.call_later(self.period, self._sweep) if self.tasks
                       else None)

    def done(self, task: asyncio.Task) -> bool:
        """Forget `task`; whether a sweep cancelled it (its CancelledError is then the
        deadline's: the caller un-cancels the task and reports DEADLINE_EXCEEDED)."""
        del self.tasks[task]
        if task in self.expired:
            self.expired.discard(task)
            task.uncancel()
            return True
        return False


#: The metrics' label for a model or signature name that is not served.
UNKNOWN_LABEL = "(unknown)"


class PredictService:
    """Predict over a ModelRegistry; `batching` None runs each request on its own."""

    def __init__(self, registry: ModelRegistry, batching: BatchingOptions | None = None,
                 metrics=None):
        self.registry = registry
        self.batching = batching
        self.metrics = metrics
        self._children: dict = {}  # metric series by labels, looked up once
        self._deadlines: dict[float, DefaultDeadlines] = {}  # by default deadline (ms)

    def acquire(self, name: str, version: int | None = None,
                label: str | None = None) -> ModelVersion:
        """The model version serving one request; `release` it when the request ends."""
        mv = self.registry.acquire(name, version, label)
        if self.metrics is not None:
            gauge = self._children.get(name)
            if gauge is None:
                gauge = self._children[name] = self.metrics.in_flight.labels(name)
            gauge.inc()
        return mv

    def release(self, mv: ModelVersion) -> None:
        mv.release()
        if self.metrics is not None:
            self._children[mv.model].dec()

    @contextlib.contextmanager
    def version(self, name: str, version: int | None = None, label: str | None = None):
        """acquire / release as a context manager."""
        mv = self.acquire(name, version, label)
        try:
            yield mv
        finally:
            self.release(mv)

    @staticmethod
    def signature(mv: ModelVersion, signature_name: str) -> Signature:
        name = signature_name or DEFAULT_SIGNATURE
        sig = mv.servable.signatures.get(name)
        if sig is None:
            raise errors.FailedPreconditionError(
                None, None, f'Serving signature key "{name}" not found.')
        return sig

    @staticmethod
    def output_keys(sig: Signature, output_filter) -> tuple[str, ...]:
        """The outputs to compute: the filter's (checked), else all of them."""
        if not output_filter:
            return tuple(sig.outputs)
        seen = []
        for alias in output_filter:
            if alias not in sig.outputs:
                raise errors.InvalidArgumentError(
                    None, None, f"output tensor alias not found in signature: {alias} "
                                f"Outputs expected to be in the set "
                                f"{{{','.join(sorted(sig.outputs))}}}.")
            if alias in seen:
                raise errors.InvalidArgumentError(
                    None, None, f"duplicate output tensor alias: {alias}")
            seen.append(alias)
        return tuple(seen)

    @staticmethod
    def check_inputs(sig: Signature, inputs: dict) -> None:
        """Every input of the signature, and no other (TF Serving's message), each of a
        shape the signature admits (Signature.check_shapes)."""
        PredictService.check_keys(sig, inputs.keys())
        sig.check_shapes(inputs)

    @staticmethod
    def check_keys(sig: Signature, keys) -> None:
        """Every input of the signature, and no other (TF Serving's message)."""
        if keys == sig.inputs.keys():
            return
        given, wanted = sorted(keys), sorted(sig.inputs)
        extra = sorted(set(given) - set(wanted))
        missing = sorted(set(wanted) - set(given))
        raise errors.InvalidArgumentError(
            None, None, f"input size does not match signature: {len(given)}!={len(wanted)} "
                        f"len({{{','.join(given)}}}) != len({{{','.join(wanted)}}}). Sent "
                        f"extra: {{{','.join(extra)}}}. Missing but required: "
                        f"{{{','.join(missing)}}}.")

    @staticmethod
    def check_dtypes(sig: Signature, inputs: dict) -> None:
        """Each input array of its signature dtype (TF's call-frame message)."""
        for i, (key, spec) in enumerate(sig.inputs.items()):
            value = inputs[key]
            want = spec.dtype.as_numpy_dtype
            if spec.dtype.name == "string":
                ok = value.dtype == object
            else:
                ok = value.dtype == want
            if not ok:
                got = "string" if value.dtype == object else type_string(
                    dtypes.as_dtype(value.dtype))
                raise errors.InvalidArgumentError(
                    None, None, f"Expects arg[{i}] to be {type_string(spec.dtype)} but {got} "
                                "is provided")

    async def run(self, mv: ModelVersion, sig: Signature, inputs: dict[str, np.ndarray],
                  output_keys: tuple[str, ...], timeout_ms: int = 0,
                  default_timeout_ms: int = 0) -> dict[str, np.ndarray]:
        """Run a checked request: batched when batching is on, else on its own.

        `timeout_ms`, a deadline the request carries (gRPC's, or the REST header or query
        parameter), becomes the run's RunOptions.timeout_in_ms (batched: an asyncio
        timeout on the request); `default_timeout_ms`, the server's default for requests
        that carry none, is kept by DefaultDeadlines (cancelling the request's task, and
        so its run). Either way a request past its deadline is DEADLINE_EXCEEDED."""
        if default_timeout_ms > 0 and timeout_ms <= 0:
            deadlines = self._deadlines.get(default_timeout_ms)
            if deadlines is None:
                deadlines = self._deadlines[default_timeout_ms] = DefaultDeadlines(
                    default_timeout_ms / 1000)
            task = asyncio.current_task()
            deadlines.add(task)
            try:  # (unbatched: the signature's run itself, one coroutine less)
                result = await (sig.run(inputs, output_keys, 0) if self.batching is None
                                else self._run(mv, sig, inputs, output_keys, 0))
            except BaseException:
                if deadlines.done(task):  # cancelled by the sweep: the deadline passed
                    raise errors.DeadlineExceededError(None, None,
                                                       "Deadline Exceeded") from None
                raise
            deadlines.done(task)
            return result
        return await self._run(mv, sig, inputs, output_keys, timeout_ms)

    async def _run(self, mv, sig, inputs, output_keys, timeout_ms):
        try:
            if self.batching is None:
                return await sig.run(inputs, output_keys, timeout_ms)
            batcher = mv.batchers.get((sig.name, output_keys))
            if batcher is None:
                batcher = mv.batchers[(sig.name, output_keys)] = self._batcher(mv, sig,
                                                                               output_keys)
            if timeout_ms <= 0:
                return await batcher.submit(inputs)
            async with asyncio.timeout(timeout_ms / 1000):
                return await batcher.submit(inputs)
        except TimeoutError:
            raise errors.DeadlineExceededError(None, None, "Deadline Exceeded") from None

    def _batcher(self, mv: ModelVersion, sig: Signature, output_keys) -> Batcher:
        async def run(inputs):
            return await sig.run(inputs, output_keys)

        observe = None
        if self.metrics is not None:
            labels = (mv.model, str(mv.version), sig.name)
            sizes = self.metrics.batch_size.labels(*labels)
            padded = self.metrics.padded_batch_size.labels(*labels)
            depth = self.metrics.queue_depth.labels(*labels)

            def observe(size, padded_size, queue_depth):
                sizes.observe(size)
                padded.observe(padded_size)
                depth.set(queue_depth)

        return Batcher(run, self.batching, observe)

    def _served_labels(self, name: str, signature_name: str) -> tuple[str, str]:
        """The model and signature names as metrics label them: only what is served,
        any other name collapsed to UNKNOWN_LABEL (a client's made-up names must not
        add series: each one is kept, and written on every scrape, for ever)."""
        versions = self.registry.versions.get(name)
        if versions is None:
            return UNKNOWN_LABEL, UNKNOWN_LABEL if signature_name else ""
        if signature_name and not any(
                mv.servable is not None and signature_name in mv.servable.signatures
                for mv in versions.values()):
            return name, UNKNOWN_LABEL
        return name, signature_name

    def record(self, api: str, name: str, version, signature_name: str, started: float,
               error: BaseException | None = None) -> None:
        """Count one request and its latency (and its error's class)."""
        if self.metrics is None:
            return
        status = "OK" if error is None else code_name(as_op_error(error))
        name, signature_name = self._served_labels(name, signature_name)
        key = (api, name, version, signature_name, status)
        children = self._children.get(key)
        if children is None:  # labels() costs microseconds: look each series up once
            m = self.metrics
            v = "" if version is None else str(version)
            children = self._children[key] = (
                m.requests.labels(name, v, signature_name, api, status),
                m.latency.labels(name, v, signature_name, api),
                m.run_errors.labels(name, status) if error is not None else None)
        requests, latency, run_errors = children
        requests.inc()
        latency.observe(time.perf_counter() - started)
        if run_errors is not None:
            run_errors.inc()
