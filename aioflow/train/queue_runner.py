"""af.train.QueueRunner and af.train.Coordinator, shaped for asyncio: TF 1 ran each of a
QueueRunner's enqueue ops in a thread of its own (tf.train.start_queue_runners), looping
`sess.run(enqueue_op)` until the queue closed. Here each enqueue op loops in an asyncio
task on the session's loop (`await sess.run(enqueue_op)`); an enqueue on a full queue
waits on the loop as any queue wait does, so N runners cost N tasks, no threads.

The graph side is TF's: a QueueRunner builds the queue's close op and its
close(cancel_pending_enqueues=True) op, and add_queue_runner puts it in the
GraphKeys.QUEUE_RUNNERS collection. The mapping: `create_threads` -> `create_tasks`,
`start_queue_runners` returns tasks, `Coordinator.join` is awaited; a Coordinator's stop
runs the cancel op, which wakes blocked enqueues with CancelledError, as in TF."""

from __future__ import annotations

import asyncio

from aioflow.framework import errors, ops

QUEUE_RUNNERS = "queue_runners"  # TF's GraphKeys.QUEUE_RUNNERS


class Coordinator:
    """Stops a set of tasks together (TF's tf.train.Coordinator): any of them may
    request_stop(), the others see should_stop(); `await join(tasks)` waits for them and
    re-raises the first error reported (OutOfRangeError counts as a clean stop)."""

    def __init__(self, clean_stop_exception_types=None):
        self._clean = tuple(clean_stop_exception_types if clean_stop_exception_types is not None
                            else (errors.OutOfRangeError,))
        self._stop = asyncio.Event()
        self._exception: BaseException | None = None
        self._tasks: set = set()

    def request_stop(self, ex: BaseException | None = None) -> None:
        """Ask every task to stop; `ex` (unless a clean-stop type) is re-raised by join.
        Only the first request counts: errors of tasks stopping after it (a blocked
        enqueue cancelled by the stop) are not reported, as TF's."""
        if self._stop.is_set():
            return
        if ex is not None and not isinstance(ex, self._clean):
            self._exception = ex
        self._stop.set()

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def clear_stop(self) -> None:
        self._stop.clear()
        self._exception = None

    async def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Wait until a stop is requested (True), or `timeout` seconds pass (False)."""
        try:
            await asyncio.wait_for(self._stop.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def register_task(self, task: asyncio.Task) -> None:
        """Have join() wait for `task` too (TF's register_thread)."""
        self._tasks.add(task)

    def raise_requested_exception(self) -> None:
        if self._exception is not None:
            raise self._exception

    async def join(self, tasks=None, stop_grace_period_secs: float = 120,
                   ignore_live_threads: bool = False) -> None:
        """Wait for `tasks` and the registered tasks to end: until a stop is requested (or
        all end), then `stop_grace_period_secs` more; RuntimeError naming those still
        running, unless `ignore_live_threads`. Then re-raise the requested exception."""
        tasks = set(tasks or ()) | self._tasks
        pending = {t for t in tasks if not t.done()}
        if pending:
            stopping = asyncio.ensure_future(self._stop.wait())
            await asyncio.wait(pending | {stopping}, return_when=asyncio.FIRST_COMPLETED)
            while pending and not self._stop.is_set():
                pending = {t for t in pending if not t.done()}
                if pending:
                    await asyncio.wait(pending | {stopping},
                                       return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            pending = {t for t in pending if not t.done()}
            if pending:
                _, pending = await asyncio.wait(pending, timeout=stop_grace_period_secs)
        for task in tasks:  # (their errors went to request_stop; seen here)
            if task.done() and not task.cancelled():
                task.exception()
        if pending and not ignore_live_threads:
            names = ", ".join(sorted(t.get_name() for t in pending))
            raise RuntimeError(f"Coordinator stopped with threads still running: {names}")
        self.raise_requested_exception()


class QueueRunner:
    """Runs enqueue ops in a loop, each in its own asyncio task, until the queue closes;
    the last to finish closes the queue (TF's QueueRunner)."""

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None):
        if queue is None or not enqueue_ops:
            raise ValueError("Must provide queue and enqueue_ops.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._closed_types = tuple(queue_closed_exception_types or (errors.OutOfRangeError,))
        # Close when no more will be produced (pending enqueues kept); cancel on an error
        # (pending enqueues cancelled, so that everything blocked wakes up).
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (cancel_op if cancel_op is not None
                           else queue.close(cancel_pending_enqueues=True))
        self._runs: dict = {}
        self._exceptions_raised: list = []

    @property
    def queue(self):
        return self._queue

    @property
    def enqueue_ops(self) -> list:
        return self._enqueue_ops

    @property
    def close_op(self):
        return self._close_op

    @property
    def cancel_op(self):
        return self._cancel_op

    @property
    def name(self) -> str:
        return self._queue.name

    @property
    def exceptions_raised(self) -> list:
        """The errors the runner's tasks ended with, when no Coordinator took them."""
        return self._exceptions_raised

    def create_tasks(self, sess, coord: Coordinator | None = None) -> list[asyncio.Task]:
        """Start one task per enqueue op (plus, with `coord`, one that runs the cancel op
        when a stop is requested) on the running loop; call from inside it."""
        if self._runs.get(sess, 0) > 0:
            return []  # already running for this session (TF's)
        self._runs[sess] = len(self._enqueue_ops)
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self._run(sess, op, coord), name=f"{self.name}/{op.name}")
                 for op in self._enqueue_ops]
        if coord is not None:
            tasks.append(loop.create_task(self._cancel_on_stop(sess, coord),
                                          name=f"{self.name}/cancel_on_stop"))
            for task in tasks:
                coord.register_task(task)
        return tasks

    async def _run(self, sess, enqueue_op, coord) -> None:
        decremented = False
        try:
            while not (coord is not None and coord.should_stop()):
                try:
                    await sess.run(enqueue_op)
                except self._closed_types:
                    self._runs[sess] -= 1
                    decremented = True
                    if self._runs[sess] == 0:
                        try:
                            await sess.run(self._close_op)
                        except errors.OpError:
                            pass  # (closed already: TF ignores it too)
                    return
                await asyncio.sleep(0)  # a run that never waited must still yield
        except asyncio.CancelledError:
            raise
        except Exception as e:
            if coord is not None:
                coord.request_stop(e)
            else:
                self._exceptions_raised.append(e)
            raise
        finally:
            if not decremented:
                self._runs[sess] -= 1

    async def _cancel_on_stop(self, sess, coord: Coordinator) -> None:
        await coord.wait_for_stop()
        try:
            await sess.run(self._cancel_op)
        except errors.OpError:
            pass


def add_queue_runner(qr: QueueRunner, collection: str = QUEUE_RUNNERS) -> None:
    """Add `qr` to the default graph's collection (TF's tf.train.add_queue_runner)."""
    ops.add_to_collection(collection, qr)


def start_queue_runners(sess, coord: Coordinator | None = None, daemon: bool = True,
                        start: bool = True, collection: str = QUEUE_RUNNERS
                        ) -> list[asyncio.Task]:
    """Start the tasks of every QueueRunner in the session graph's collection; returns
    them (TF returns threads). Call from inside the session's event loop."""
    del daemon, start  # (tasks always start; none keeps the loop alive)
    if sess is None:
        raise ValueError("Cannot start queue runners: No default session is registered. "
                         "Pass an explicit session to start_queue_runners(sess=sess)")
    tasks = []
    with sess.graph.as_default():
        for qr in ops.get_collection(collection):
            tasks.extend(qr.create_tasks(sess, coord=coord))
    return tasks
