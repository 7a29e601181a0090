"""The v1 summary builders (`tf.compat.v1.summary.scalar/histogram/text/tensor_summary/
merge/merge_all`): each builds the node TF's builder builds, named and tagged as TF's
(`summary_scope`: a cleaned name, an optional family prefix), and adds it to the
collections TF adds it to (GraphKeys.SUMMARIES unless `collections` says otherwise)."""

from __future__ import annotations

import contextlib
import logging
import re

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.ops.variables import GraphKeys
from aioflow.proto import summary_pb2

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")
_log = logging.getLogger("aioflow.summary")


def clean_tag(name: str | None) -> str | None:
    """`name` with every character other than letters, digits, "_", "-", "/" and "."
    replaced by "_" and leading slashes removed (logged when it changes), as TF's."""
    if name is not None:
        new_name = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
        if new_name != name:
            _log.info("Summary name %s is illegal; using %s instead.", name, new_name)
            name = new_name
    return name


@contextlib.contextmanager
def summary_scope(name: str, family: str | None = None, default_name: str | None = None,
                  values=None):
    """A name scope for one summary; yields (tag, scope): the tag is the scope without its
    trailing "/", prefixed with `family` when given (so it shows in that tab)."""
    name = clean_tag(name)
    family = clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with ops.name_scope(base, default_name, values) as scope:
        tag = scope.rstrip("/")
        yield (tag if family is None else f"{family}/{tag}"), scope


def _collect(value, collections, default_collections) -> None:
    for key in default_collections if collections is None else collections:
        ops.add_to_collection(key, value)


def scalar(name: str, tensor, collections=None, family: str | None = None) -> ops.Tensor:
    """A ScalarSummary of the scalar `tensor`, tagged with the summary's scope name."""
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = apply_op("ScalarSummary", name=scope, tags=tag, values=tensor)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def histogram(name: str, values, collections=None, family: str | None = None) -> ops.Tensor:
    """A HistogramSummary of every element of `values` (NaN or Inf fails the run)."""
    with summary_scope(name, family, values=[values]) as (tag, scope):
        value = apply_op("HistogramSummary", name=scope, tag=tag, values=values)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def tensor_summary(name: str, tensor, summary_description: str | None = None,
                   collections=None, summary_metadata=None, family: str | None = None,
                   display_name: str | None = None) -> ops.Tensor:
    """A TensorSummaryV2 of the whole `tensor` with `summary_metadata` (a SummaryMetadata;
    the plugin that reads it)."""
    if summary_metadata is None:
        summary_metadata = summary_pb2.SummaryMetadata()
    if summary_description is not None:
        summary_metadata.summary_description = summary_description
    if display_name is not None:
        summary_metadata.display_name = display_name
    serialized = summary_metadata.SerializeToString()
    with summary_scope(name, family, values=[tensor]) as (tag, scope):
        value = apply_op("TensorSummaryV2", name=scope, tag=tag, tensor=tensor,
                         serialized_summary_metadata=serialized)
        _collect(value, collections, [GraphKeys.SUMMARIES])
    return value


def text(name: str, tensor, collections=None) -> ops.Tensor:
    """A text summary (TensorBoard's text plugin renders it as Markdown) of the string
    tensor `tensor`."""
    if not isinstance(tensor, ops.Tensor):
        raise TypeError(f"text summary {name!r} expects a string Tensor, got "
                        f"{type(tensor).__name__}")
    if tensor.dtype != dtypes.string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got "
                         f"{tensor.dtype}")
    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.plugin_name = "text"
    return tensor_summary(name, tensor, summary_metadata=metadata, collections=collections)


def merge(inputs, collections=None, name: str | None = None) -> ops.Tensor:
    """One MergeSummary of the serialized Summaries `inputs` (a repeated tag fails the run)."""
    name = clean_tag(name)
    with ops.name_scope(name, "Merge", inputs):
        value = apply_op("MergeSummary", name=name, inputs=list(inputs))
        _collect(value, collections, [])
    return value


def merge_all(key: str = GraphKeys.SUMMARIES, scope: str | None = None,
              name: str | None = None) -> ops.Tensor | None:
    """merge() of every summary in collection `key` (under `scope`); None when there is none."""
    summary_ops = ops.get_collection(key, scope=scope)
    if not summary_ops:
        return None
    return merge(summary_ops, name=name)
