"""Executor factories: which executor runs a session's partitions, by name (TF's
ExecutorFactory, keyed by `ConfigProto.experimental.executor_type`).

- "" and "DEFAULT": the asyncio executor (cheap kernels inline on the loop, expensive
  ones on the device's pool, async kernels awaited, compiled segments).
- "SINGLE_THREADED_EXECUTOR": every kernel inline on the loop, pool kernels too, node by
  node (no compiled segments), ready nodes taken in a fixed order: reproducible
  schedules for debugging and tests. Async kernels (Recv, queues, user coroutines) are
  still awaited. Unlike TF's single-threaded executor it runs v1 control flow and
  several partitions.

`schedule_override(executor_type, seed)` makes every step started inside it (this
context: the thread, and tasks created from it) use another executor type, its ready
nodes taken in an order shuffled by `seed` (None: the fixed order); the shuffled
schedules of aioflow.testing build on it.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
import threading
from dataclasses import dataclass

from aioflow.framework import errors
from aioflow.runtime.executor import ExecutorImpl


class ExecutorFactory:
    """Builds one partition's executor and starts the per-run states of a step."""

    name = "DEFAULT"

    def new_executor(self, graph, device, **options) -> ExecutorImpl:
        """The executor of one partition; `options` are ExecutorImpl's (inline_all,
        deadness, segments, ...), as the session chose them."""
        return ExecutorImpl(graph, device, **options)

    def new_states(self, executors, ctx, runner, seed: int | None = None) -> list:
        """The step's states, one per partition (`seed`: see ShuffledReady)."""
        states = [ex.new_state(ctx, runner) for ex in executors]
        if seed is not None:
            for i, state in enumerate(states):
                state.ready = ShuffledReady(seed * 1_000_003 + i)
        return states


class SingleThreadedExecutorFactory(ExecutorFactory):
    """Every kernel inline on the loop, node by node (TF's SINGLE_THREADED_EXECUTOR)."""

    name = "SINGLE_THREADED_EXECUTOR"

    def new_executor(self, graph, device, **options) -> ExecutorImpl:
        return ExecutorImpl(graph, device, **{**options, "inline_all": True, "segments": False})


class ShuffledReady(list):
    """A ready queue whose `popleft` takes a ready node chosen by a seeded generator:
    any order it produces is a valid schedule, and the same seed gives the same one.
    The executor's hot path uses it as the deque it replaces (append, extend, popleft,
    clear, truth)."""

    __slots__ = ("_rng",)

    def __init__(self, seed: int):
        super().__init__()
        self._rng = random.Random(seed)

    def popleft(self):
        last = self.pop()
        n = len(self)
        if not n:
            return last
        i = self._rng.randrange(n + 1)
        if i == n:
            return last
        item = self[i]
        self[i] = last
        return item


_lock = threading.Lock()
_FACTORIES: dict[str, ExecutorFactory] = {}


def register_factory(executor_type: str, factory: ExecutorFactory) -> None:
    """Register `factory` under `executor_type`; a name is registered once (TF)."""
    with _lock:
        if executor_type in _FACTORIES:
            raise errors.AlreadyExistsError(
                None, None, f"Executor factory for type {executor_type} already registered")
        _FACTORIES[executor_type] = factory


def get_factory(executor_type: str) -> ExecutorFactory:
    """The factory of `executor_type`; NotFoundError, with TF's text, for an unknown one."""
    factory = _FACTORIES.get(executor_type)
    if factory is None:
        with _lock:
            names = ", ".join(_FACTORIES)  # in registration order, as TF lists them
        raise errors.NotFoundError(
            None, None, f"No executor factory registered for the given executor type: "
                        f"{executor_type} Registered factories are {{{names}}}.")
    return factory


def registered_types() -> list[str]:
    with _lock:
        return list(_FACTORIES)


_default = ExecutorFactory()
register_factory("DEFAULT", _default)
register_factory("", _default)
register_factory("SINGLE_THREADED_EXECUTOR", SingleThreadedExecutorFactory())


@dataclass(frozen=True)
class ScheduleOverride:
    executor_type: str
    seed: int | None


_override: contextvars.ContextVar[ScheduleOverride | None] = contextvars.ContextVar(
    "aioflow_schedule_override", default=None)


@contextlib.contextmanager
def schedule_override(executor_type: str, seed: int | None = None):
    """Run every session step started inside the block with `executor_type`, its ready
    nodes taken in an order shuffled by `seed` (None: the fixed order). An unknown type
    is NotFoundError here, at once."""
    get_factory(executor_type)
    token = _override.set(ScheduleOverride(executor_type, seed))
    try:
        yield
    finally:
        _override.reset(token)


def current_override() -> ScheduleOverride | None:
    """The override in force for a step starting now, or None."""
    return _override.get()
