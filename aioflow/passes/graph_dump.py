"""Graph dumps for debugging, as TF's TF_DUMP_GRAPH_PREFIX: with AIOFLOW_DUMP_GRAPH_PREFIX
set to a folder, the pass registry writes the graph as a text GraphDef after each
grouping runs, one file per dump, named for the grouping (and the partition's device
after POST_PARTITIONING) with a counter when the name repeats: pre_placement.pbtxt,
pre_placement_1.pbtxt, ... The value "-" writes them to the log instead (as TF)."""

from __future__ import annotations

import logging
import os
import re
import threading

from google.protobuf import text_format

ENV = "AIOFLOW_DUMP_GRAPH_PREFIX"
_log = logging.getLogger("aioflow.graph_dump")
_lock = threading.Lock()
_counts: dict[tuple[str, str], int] = {}


def enabled() -> bool:
    """Whether graphs are being dumped (the variable is set and not empty)."""
    return bool(os.environ.get(ENV))


def _sanitize(name: str) -> str:
    """TF's: characters that do not belong in a file name become '_'."""
    return re.sub(r"[/\[\]*?\\:]", "_", name)


def _unique_path(folder: str, name: str) -> str:
    """folder/name.pbtxt, or name_<n>.pbtxt for the n-th repeat of `name` in that folder
    (counted by this process, as TF's; a file already there is never overwritten)."""
    key = (os.path.abspath(folder), name)
    with _lock:
        while True:
            count = _counts.get(key, 0)
            _counts[key] = count + 1
            stem = name if count == 0 else f"{name}_{count}"
            path = os.path.join(folder, stem + ".pbtxt")
            if not os.path.exists(path):
                return path


def dump_graph_def(name: str, graph_def) -> str | None:
    """Write `graph_def` as text under the prefix folder; returns the file's path (None
    when dumping is off or it went to the log). A failure to write is logged, never
    raised: a dump must not fail the session."""
    prefix = os.environ.get(ENV)
    if not prefix:
        return None
    text = text_format.MessageToString(graph_def)
    if prefix == "-":
        _log.info("%s:\n%s", name, text)
        return None
    try:
        os.makedirs(prefix, exist_ok=True)
        path = _unique_path(prefix, _sanitize(name))
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        _log.warning("Failed to dump %s: %s", name, e)
        return None
    _log.info("Dumped graph %s to %s", name, path)
    return path


def dump_grouping(grouping_name: str, options) -> None:
    """The dump after a grouping: the graph, or after POST_PARTITIONING each partition."""
    if options.graph is not None and not options.partition_graphs:
        dump_graph_def(grouping_name, options.graph.to_graph_def())
        return
    for device, graph in options.partition_graphs.items():
        dump_graph_def(f"{grouping_name}_partition_{device}", graph.to_graph_def())
