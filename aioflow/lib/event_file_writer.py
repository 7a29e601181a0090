"""Writing one event file (TF's EventsWriter behind a Python EventFileWriter): the file
`events.out.tfevents.<seconds>.<hostname><suffix>` in the log directory, opened with the
"brain.Event:2" version event, then one TFRecord per Event.

Events go through a bounded queue to a writer thread, which writes them and flushes the
file every `flush_secs` (TensorBoard sees them then) or when `flush()` asks; so adding an
event from a coroutine never waits on the disk unless `max_queue` events are pending.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time

from aioflow.lib.record_io import encode_record
from aioflow.proto import event_pb2

FILE_VERSION = "brain.Event:2"
SOURCE_WRITER = "aioflow"
_CLOSE = object()
_FLUSH = object()


class EventFileWriter:
    """Writes Events to a new event file in `logdir` from a writer thread."""

    def __init__(self, logdir, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str | None = None):
        self._logdir = os.fspath(logdir)
        os.makedirs(self._logdir, exist_ok=True)
        now = int(time.time())
        self._path = os.path.join(self._logdir, f"events.out.tfevents.{now:010d}."
                                  f"{socket.gethostname()}{filename_suffix or ''}")
        self._file = open(self._path, "wb")  # noqa: SIM115  (closed by close())
        first = event_pb2.Event(wall_time=float(now), file_version=FILE_VERSION)
        first.source_metadata.writer = SOURCE_WRITER
        self._file.write(encode_record(first.SerializeToString()))
        self._file.flush()
        self._flush_secs = flush_secs
        self._queue: queue.Queue = queue.Queue(max(1, max_queue))
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._worker, name="aioflow-event-writer",
                                        daemon=True)
        self._thread.start()

    @property
    def path(self) -> str:
        """The event file's path."""
        return self._path

    def get_logdir(self) -> str:
        return self._logdir

    def add_event(self, event: event_pb2.Event) -> None:
        """Queue one Event (ignored once closed, as TF's)."""
        if not self._closed:
            self._raise_error()
            self._queue.put(event.SerializeToString())

    def flush(self) -> None:
        """Write every queued event and flush the file to the OS."""
        if self._closed:
            return
        self._queue.put(_FLUSH)
        self._queue.join()
        self._raise_error()

    def close(self) -> None:
        """Flush and close the file; later events are ignored."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_CLOSE)
        self._thread.join()
        self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise OSError(f"writing the event file {self._path} failed: {error}") from error

    def _worker(self) -> None:
        """The writer thread: the only code that touches the file after __init__."""
        next_flush = time.monotonic() + self._flush_secs
        while True:
            timeout = max(0.0, next_flush - time.monotonic())
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:  # time to flush
                item = None
            try:
                if item is _CLOSE:
                    self._file.flush()
                    self._file.close()
                    return
                if item is not None and item is not _FLUSH:
                    self._file.write(encode_record(item))
                if item is _FLUSH or time.monotonic() >= next_flush:
                    self._file.flush()
                    next_flush = time.monotonic() + self._flush_secs
            except OSError as e:  # reported by the next add_event / flush / close
                self._error = e
            finally:
                if item is not None:
                    self._queue.task_done()
