"""The rendezvous of one step on one task, reaching across tasks (TF's
BaseRemoteRendezvous / RpcRemoteRendezvous), and the task's RendezvousMgr.

A step's _Send always puts its value into the rendezvous of its own task; a _Recv
whose key names a sending device on another task pulls the value from that task with a
RecvTensor call, started when the receiver first waits for it, and hands it to the
waiting receiver as a local send would. A peer's RecvTensor waits here, as any local
receiver. Keys are TF's ("send_device;incarnation;recv_device;tensor_name;frame:iter";
inside a loop the executor's (prefix, frame_id, iter)), so every task agrees on them.
"""

from __future__ import annotations

import asyncio

from aioflow.framework import errors
from aioflow.runtime.rendezvous import Rendezvous


def key_text(key) -> str:
    """A key as TF writes it (a loop's transfer is keyed by its parts)."""
    return key if isinstance(key, str) else f"{key[0]}{key[1]}:{key[2]}"


def parse_key(text: str):
    """The rendezvous key a RecvTensor names, in the form the executor uses: the string
    itself for the root frame, (prefix, frame_id, iter) inside a loop."""
    prefix, _, frame_iter = text.rpartition(";")
    frame, _, it = frame_iter.partition(":")
    if frame == "0" and it == "0":
        return text
    return (prefix + ";", int(frame), int(it))


def _send_task(key) -> str:
    """The task of the key's sending device."""
    text = key if isinstance(key, str) else key[0]
    device = text[:text.index(";")]
    return device[:device.index("/device:")] if "/device:" in device else device


class RemoteRendezvous(Rendezvous):
    """A Rendezvous that fetches values sent on other tasks (`peer_of(task)` gives the
    WorkerInterface of a task)."""

    __slots__ = ("step_id", "task", "peer_of", "_fetches", "_remote_tasks")

    def __init__(self, step_id: int, task: str, peer_of):
        super().__init__()
        self.step_id = step_id
        self.task = task
        self.peer_of = peer_of
        self._fetches: set[asyncio.Task] = set()
        self._remote_tasks: dict[str, str | None] = {}  # key prefix -> remote task or None

    def _remote_task(self, key) -> str | None:
        prefix = key if isinstance(key, str) else key[0]
        known = self._remote_tasks.get(prefix, False)
        if known is False:
            task = _send_task(key)
            known = self._remote_tasks[prefix] = None if task == self.task else task
        return known

    def recv_or_wait(self, key, arrived, token):
        got = super().recv_or_wait(key, arrived, token)
        if got is None:
            self._maybe_fetch(key)
        return got

    def park(self, key, arrived, token) -> bool:
        parked = super().park(key, arrived, token)
        if parked:
            self._maybe_fetch(key)
        return parked

    def _maybe_fetch(self, key) -> None:
        task = self._remote_task(key)
        if task is None:
            return
        fetch = asyncio.get_running_loop().create_task(self._fetch(task, key))
        self._fetches.add(fetch)
        fetch.add_done_callback(self._fetches.discard)

    async def _fetch(self, task: str, key) -> None:
        """RecvTensor from the sending task, then deliver as a local send."""
        try:
            value, is_dead = await self.peer_of(task).recv_tensor(self.step_id, key_text(key))
        except asyncio.CancelledError:
            return
        except errors.OpError as e:
            self.abort(e)
            return
        except Exception as e:  # noqa: BLE001 - a transport's failure fails the step
            self.abort(errors.UnavailableError(None, None, f"{type(e).__name__}: {e}"))
            return
        if self._error is None:
            self.send(key, value, is_dead)

    def abort(self, err: errors.OpError) -> None:
        super().abort(err)
        for fetch in list(self._fetches):
            fetch.cancel()


class RendezvousMgr:
    """The rendezvous of every step in flight on one task, by step id (TF's
    RendezvousMgr: a peer's RecvTensor may arrive before the step's RunGraph)."""

    def __init__(self, task: str, peer_of):
        self.task = task
        self.peer_of = peer_of
        self._steps: dict[int, RemoteRendezvous] = {}

    def find(self, step_id: int) -> RemoteRendezvous:
        rendezvous = self._steps.get(step_id)
        if rendezvous is None:
            rendezvous = self._steps[step_id] = RemoteRendezvous(step_id, self.task,
                                                                 self.peer_of)
        return rendezvous

    def cleanup(self, step_id: int) -> None:
        """Forget a step; receivers still waiting fail (TF's Cleanup)."""
        rendezvous = self._steps.pop(step_id, None)
        if rendezvous is not None:
            rendezvous.abort(errors.AbortedError(
                None, None, f"Cleanup {step_id}"))

    def forget_if_done(self, step_id: int) -> None:
        """Drop a step's rendezvous once nothing is left in it (no value unclaimed, no
        receiver waiting): a step that succeeded everywhere needs no CleanupGraph."""
        rendezvous = self._steps.get(step_id)
        if rendezvous is not None and not len(rendezvous):
            del self._steps[step_id]

    def abort_all(self, err: errors.OpError) -> None:
        for step_id in list(self._steps):
            self._steps.pop(step_id).abort(err)

    def __len__(self) -> int:
        return len(self._steps)
