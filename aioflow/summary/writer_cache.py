"""FileWriterCache (`tf.compat.v1.summary.FileWriterCache`): one FileWriter per log
directory, shared by the code that asks for it (created with the default graph)."""

from __future__ import annotations

import threading

from aioflow.framework import ops
from aioflow.summary.writer import FileWriter


class FileWriterCache:
    """The process's FileWriters by log directory."""

    _cache: dict = {}
    _lock = threading.RLock()

    @staticmethod
    def get(logdir) -> FileWriter:
        """The FileWriter of `logdir`, made (with the default graph) on first use."""
        with FileWriterCache._lock:
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(logdir,
                                                            graph=ops.get_default_graph())
            return FileWriterCache._cache[logdir]

    @staticmethod
    def clear() -> None:
        """Close every cached FileWriter and forget them."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache = {}
