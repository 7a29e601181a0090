"""tf.train.write_graph / tf.io.write_graph (TF's graph_io): a Graph's or GraphDef's
protocol buffer written to `logdir/name`, as text (the default) or binary."""

from __future__ import annotations

import os

from google.protobuf import text_format

from aioflow.framework import ops


def write_graph(graph_or_graph_def, logdir, name, as_text: bool = True) -> str:
    """Write the GraphDef (a Graph's, or one given) to logdir/name; its path."""
    if isinstance(graph_or_graph_def, ops.Graph):
        graph_def = graph_or_graph_def.as_graph_def()
    else:
        graph_def = graph_or_graph_def
    logdir = os.fspath(logdir)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    tmp = f"{path}.tmp{os.getpid()}"
    if as_text:
        with open(tmp, "w") as f:
            f.write(text_format.MessageToString(graph_def))
    else:
        with open(tmp, "wb") as f:
            f.write(graph_def.SerializeToString(deterministic=True))
    os.replace(tmp, path)  # atomic, as TF's atomic_write_string_to_file
    return path


__all__ = ["write_graph"]
