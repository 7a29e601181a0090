"""Event files TensorBoard reads, without TensorFlow (`tf.compat.v1.summary`): summary
builders (scalar, histogram, text, tensor_summary, merge, merge_all) whose kernels write
TF's Summary protos, and FileWriter (and FileWriterCache), which writes graphs, summaries
and run metadata."""

from aioflow.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from aioflow.proto.summary_pb2 import Summary, SummaryDescription, SummaryMetadata
from aioflow.summary.summary_iterator import summary_iterator
from aioflow.summary.summary_ops import (
    histogram,
    merge,
    merge_all,
    scalar,
    tensor_summary,
    text,
)
from aioflow.summary.writer import FileWriter
from aioflow.summary.writer_cache import FileWriterCache

__all__ = [
    "Event", "FileWriter", "FileWriterCache", "SessionLog", "Summary", "SummaryDescription",
    "SummaryMetadata", "TaggedRunMetadata", "histogram", "merge", "merge_all", "scalar",
    "summary_iterator", "tensor_summary", "text",
]
