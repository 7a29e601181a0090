"""FileWriter (`tf.compat.v1.summary.FileWriter`): writes the graph, summaries, run
metadata and session logs as Events to an event file in a log directory, for TensorBoard.

As TF's: the graph given at construction is written as a GraphDef (with `_output_shapes`)
and as a MetaGraphDef; `add_summary` strips a value's SummaryMetadata once its tag has been
written with it; `add_run_metadata` refuses a tag it has seen; each event gets the wall
time it was added at and, when given, its step. Events reach the file from a writer thread
(`flush_secs`, `flush()`, `close()`; see event_file_writer.py).
"""

from __future__ import annotations

import time

import numpy as np

from aioflow.checkpoint.meta_graph import build_meta_graph_def
from aioflow.framework import ops
from aioflow.lib.event_file_writer import EventFileWriter
from aioflow.proto import config_pb2, event_pb2, graph_pb2, meta_graph_pb2, summary_pb2


def _as_message(value, cls, what: str):
    """`value` as a `cls` message: itself, or parsed from bytes or from another protobuf
    library's message of the same name (TensorFlow's own Summary, say)."""
    if isinstance(value, cls):
        return value
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype == object:
        value = value.item()
    if isinstance(value, (bytes, bytearray)):
        return cls.FromString(bytes(value))
    if type(value).__name__ == cls.__name__ and hasattr(value, "SerializeToString"):
        return cls.FromString(value.SerializeToString())
    raise TypeError(f"{what} must be a {cls.__name__} proto or its serialized bytes, not "
                    f"{type(value).__name__}")


class FileWriter:
    """Writes Event protos to a new event file in `logdir` (created if missing)."""

    def __init__(self, logdir, graph=None, max_queue: int = 10, flush_secs: float = 120,
                 graph_def=None, filename_suffix: str | None = None, session=None):
        if session is not None:
            raise NotImplementedError(
                "FileWriter(session=...) writes through summary-writer ops in the graph, "
                "which aioflow does not have; create the FileWriter without a session")
        self._logdir = logdir
        self._args = (max_queue, flush_secs, filename_suffix)
        self.event_writer = EventFileWriter(logdir, max_queue, flush_secs, filename_suffix)
        self._closed = False
        self._session_run_tags: set[str] = set()
        self._seen_summary_tags: set[str] = set()
        if graph is not None or graph_def is not None:
            self.add_graph(graph=graph, graph_def=graph_def)
            as_def = graph.as_graph_def(add_shapes=True) if isinstance(graph, ops.Graph) \
                else graph
            self.add_meta_graph(build_meta_graph_def(
                graph=graph if isinstance(graph, ops.Graph) else None,
                graph_def=_as_message(graph_def or as_def, graph_pb2.GraphDef, "graph_def")))

    # -- context manager ---------------------------------------------------------------
    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- events ------------------------------------------------------------------------
    def add_summary(self, summary, global_step: int | None = None) -> None:
        """Write a Summary (a proto or the bytes a summary op returned) at `global_step`."""
        summary = _as_message(summary, summary_pb2.Summary, "summary")
        # A tag's metadata is written once, with its first value (TF's space saving).
        repeated = []
        for i, value in enumerate(summary.value):
            if value.tag in self._seen_summary_tags:
                repeated.append(i)
            else:
                self._seen_summary_tags.add(value.tag)
        if repeated:
            summary = summary_pb2.Summary.FromString(summary.SerializeToString())  # a copy
            for i in repeated:
                summary.value[i].ClearField("metadata")
        self._add_event(event_pb2.Event(summary=summary), global_step)

    def add_session_log(self, session_log, global_step: int | None = None) -> None:
        """Write a SessionLog (START, STOP, CHECKPOINT) at `global_step`."""
        session_log = _as_message(session_log, event_pb2.SessionLog, "session_log")
        self._add_event(event_pb2.Event(session_log=session_log), global_step)

    def add_graph(self, graph, global_step: int | None = None, graph_def=None) -> None:
        """Write a Graph (as its GraphDef with `_output_shapes`) or a GraphDef."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        if isinstance(graph_def, ops.Graph):
            graph, graph_def = graph_def, None
        if isinstance(graph, ops.Graph):
            true_graph_def = graph.as_graph_def(add_shapes=True)
        elif graph is not None or graph_def is not None:
            try:
                true_graph_def = _as_message(graph if graph is not None else graph_def,
                                             graph_pb2.GraphDef, "graph")
            except TypeError:
                true_graph_def = None
        else:
            true_graph_def = None
        if true_graph_def is None:
            raise TypeError("The passed graph must be an instance of `Graph` or the "
                            "deprecated `GraphDef`")
        self._add_event(event_pb2.Event(graph_def=true_graph_def.SerializeToString()),
                        global_step)

    def add_meta_graph(self, meta_graph_def, global_step: int | None = None) -> None:
        """Write a MetaGraphDef."""
        if not isinstance(meta_graph_def, meta_graph_pb2.MetaGraphDef):
            raise TypeError("meta_graph_def must be type MetaGraphDef, saw type: "
                            f"{type(meta_graph_def)}")
        self._add_event(event_pb2.Event(meta_graph_def=meta_graph_def.SerializeToString()),
                        global_step)

    def add_run_metadata(self, run_metadata, tag: str, global_step: int | None = None) -> None:
        """Write a traced run's RunMetadata (step stats, partition graphs) under `tag`:
        TensorBoard's graph dashboard shows its compute times and memory per node."""
        if tag in self._session_run_tags:
            raise ValueError("The provided tag was already used for this event type")
        run_metadata = _as_message(run_metadata, config_pb2.RunMetadata, "run_metadata")
        self._session_run_tags.add(tag)
        tagged = event_pb2.TaggedRunMetadata(tag=tag,
                                             run_metadata=run_metadata.SerializeToString())
        self._add_event(event_pb2.Event(tagged_run_metadata=tagged), global_step)

    def add_event(self, event) -> None:
        """Write an Event as it is (ignored once closed)."""
        if not self._closed:
            self.event_writer.add_event(_as_message(event, event_pb2.Event, "event"))

    def _add_event(self, event: event_pb2.Event, step: int | None) -> None:
        event.wall_time = time.time()
        if step is not None:
            event.step = int(step)
        self.add_event(event)

    # -- the file ----------------------------------------------------------------------
    def get_logdir(self):
        """The log directory."""
        return self._logdir

    def flush(self) -> None:
        """Write every pending event to disk (blocks on the file I/O)."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file; later events are ignored until reopen()."""
        self.event_writer.close()
        self._closed = True

    def reopen(self) -> None:
        """After close(): start a new event file in the same directory."""
        if self._closed:
            self.event_writer = EventFileWriter(self._logdir, *self._args)
            self._closed = False
