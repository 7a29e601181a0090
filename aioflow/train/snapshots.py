"""Training and serving on one event loop: consistent snapshots of the variables.

A training task and request handlers share a process and a loop. The trainer publishes a
snapshot of its variables (all read in one run, between two training steps, then
copied), every N steps or on demand; a request takes the current snapshot when it starts
and feeds its arrays to the inference graph, so it never sees a half-applied update and
a new snapshot replaces the old one without failing a request in flight (a snapshot is
immutable; swapping it is one assignment on the loop). TF's answer to the same wish, a
Session shared with a server thread, gives neither guarantee: a request's reads may
interleave with an update's writes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

import numpy as np

from aioflow.framework import ops
from aioflow.ops.array_ops import placeholder
from aioflow.train.session_run_hook import SessionRunArgs, SessionRunHook, session_run


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """The variables' values at one point of training (read-only arrays)."""

    version: int
    step: int | None
    values: dict
    published_at: float

    def feed_dict(self, placeholders: dict) -> dict:
        """{placeholder: value} for {variable name: placeholder} (the inference graph's
        inputs for the weights)."""
        return {ph: self.values[name] for name, ph in placeholders.items()}


class SnapshotPublisher:
    """Publishes Snapshots of `variables` (a list of Variables) to readers on the loop."""

    def __init__(self, variables, global_step=None):
        self._variables = list(variables)
        self._names = [v.op.name for v in self._variables]
        self._reads = [v.read_value() if getattr(v, "_is_resource", False) else v
                       for v in self._variables]
        self._global_step = global_step
        self._current: Snapshot | None = None
        self._changed = asyncio.Event() if _has_loop() else None

    @property
    def current(self) -> Snapshot | None:
        """The latest snapshot (None before the first)."""
        return self._current

    async def publish(self, sess) -> Snapshot:
        """Read every variable in one run of `sess` (awaitable), copy, and make it the
        current snapshot. Call it between training steps: no update is then in flight."""
        fetches = list(self._reads)
        if self._global_step is not None:
            fetches.append(self._global_step)
        values = await sess.run(fetches)
        return self._install(values)

    def publish_blocking(self, sess) -> Snapshot:
        """publish() from a hook's thread or with a blocking session."""
        fetches = list(self._reads)
        if self._global_step is not None:
            fetches.append(self._global_step)
        return self._install(session_run(sess, fetches))

    def _install(self, values) -> Snapshot:
        step = int(values[-1]) if self._global_step is not None else None
        arrays = {}
        for name, value in zip(self._names, values, strict=False):
            array = np.array(value, copy=True)
            array.flags.writeable = False
            arrays[name] = array
        version = 1 if self._current is None else self._current.version + 1
        self._current = Snapshot(version, step, arrays, time.monotonic())
        if self._changed is not None:
            self._changed.set()
            self._changed = asyncio.Event()
        return self._current

    async def wait_for_newer(self, version: int) -> Snapshot:
        """The first snapshot newer than `version` (awaiting its publication)."""
        while self._current is None or self._current.version <= version:
            if self._changed is None:
                self._changed = asyncio.Event()
            await self._changed.wait()
        return self._current

    def hook(self, every_n_steps: int) -> SessionRunHook:
        """A hook for a MonitoredSession publishing every `every_n_steps` runs."""
        return _PublishHook(self, every_n_steps)


def _has_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _PublishHook(SessionRunHook):
    def __init__(self, publisher: SnapshotPublisher, every_n_steps: int):
        self._publisher = publisher
        self._every = every_n_steps
        self._count = 0

    def after_create_session(self, session, coord) -> None:
        self._publisher.publish_blocking(session)

    def before_run(self, run_context):
        return SessionRunArgs(None)

    def after_run(self, run_context, run_values) -> None:
        self._count += 1
        if self._count % self._every == 0:
            self._publisher.publish_blocking(run_context.session)


def placeholders_for(variables, name_scope: str = "weights") -> dict:
    """{variable name: a placeholder of its dtype and shape} for an inference graph that
    takes its weights from snapshots."""
    out = {}
    with ops.name_scope(name_scope):
        for v in variables:
            out[v.op.name] = placeholder(v.dtype.base_dtype, v.shape,
                                         name=v.op.name.replace("/", "_"))
    return out
