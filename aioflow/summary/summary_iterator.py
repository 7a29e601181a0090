"""Reading an event file back (`tf.compat.v1.train.summary_iterator`): its Events, in
the order they were written."""

from __future__ import annotations

import os
from collections.abc import Iterator

from aioflow.lib.record_io import read_records
from aioflow.proto import event_pb2


def summary_iterator(path) -> Iterator[event_pb2.Event]:
    """Each Event of the event file at `path` (blocking file I/O)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        for data in read_records(f, path):
            yield event_pb2.Event.FromString(data)
