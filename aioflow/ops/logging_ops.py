"""Printing builders with TF's names and node layouts: TF 1's `tf.Print` (a Print node
that passes its input through), TF 2's `tf.print` (StringFormat + PrintV2, or PrintV2 alone
for one scalar string) and `tf.strings.format` (StringFormat).

As in TF graphs, a print node runs only when the step needs it: fetch it, or make
something the step runs depend on it (`af.control_dependencies([af.print(...)])`).
`af.print` builds its template as TF's does: strings and other Python values go into it
as text, nested structures (lists, tuples, dicts by sorted key) as pprint writes them,
with each tensor a placeholder."""

from __future__ import annotations

import logging
import os
import pprint
import random
import sys

from aioflow.framework import dtypes, ops
from aioflow.framework.nest import flatten, pack_sequence_as
from aioflow.framework.op_def_library import apply_op

_LOG_STREAMS = {logging.INFO: "log(info)", logging.WARNING: "log(warning)",
                logging.ERROR: "log(error)", logging.info: "log(info)",
                logging.warning: "log(warning)", logging.error: "log(error)"}


def Print(input_, data, message=None, first_n=None, summarize=None,  # noqa: N802 - TF's name
          name: str | None = None) -> ops.Tensor:
    """TF 1's tf.Print: `input_` passed through; each run writes `message` and the
    summary of each tensor of `data` to stderr (the first `first_n` runs)."""
    attrs = {}
    if message is not None:
        attrs["message"] = message
    if first_n is not None:
        attrs["first_n"] = first_n
    if summarize is not None:
        attrs["summarize"] = summarize
    return apply_op("Print", name=name, input=input_, data=list(data), **attrs)


def string_format(template: str, inputs, placeholder: str = "{}", summarize: int = 3,
                  name: str | None = None) -> ops.Tensor:
    """tf.strings.format: `template` with each `placeholder` replaced by the summary of
    the matching tensor of `inputs` (`summarize` entries at each end of every dimension;
    -1 for all)."""
    if isinstance(inputs, ops.Tensor):
        inputs = [inputs]
    count = template.count(placeholder)
    if count != len(inputs):
        raise ValueError(f"The template expects {count} tensors, but the inputs only has "
                         f"{len(inputs)}. Please ensure the number of placeholders in "
                         f"template matches inputs length.")
    return apply_op("StringFormat", name=name, inputs=list(inputs), template=template,
                    placeholder=placeholder, summarize=summarize)


def _stream_name(output_stream) -> str:
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        return output_stream
    if output_stream is None or output_stream in (sys.stderr, sys.__stderr__):
        return "stderr"
    if output_stream in (sys.stdout, sys.__stdout__):
        return "stdout"
    try:
        name = _LOG_STREAMS.get(output_stream)
    except TypeError:  # (unhashable)
        name = None
    if name is None:
        raise ValueError(f"Unsupported output stream, logging level, or file."
                         f"{output_stream}. Supported streams are sys.stdout, sys.stderr, "
                         f"tf.logging.info, tf.logging.warning, tf.logging.error. File "
                         f"needs to be in the form of 'file://<filepath>'.")
    return name


def _placeholder_for(text: str) -> str:
    """TF's _generate_placeholder_string: "{}", lengthened with seeded random digits
    until it does not occur in `text`."""
    placeholder = "{}"
    rng = random.Random(5)
    while placeholder in text:
        placeholder += str(rng.randint(0, 9))
    return placeholder


def _is_tensor(x) -> bool:
    return isinstance(x, ops.Tensor)


def print_v2(*inputs, output_stream=None, summarize: int = 3, sep: str = " ",
             end: str = os.linesep, name: str | None = None) -> ops.Operation:
    """tf.print: a PrintV2 op writing the inputs (tensors summarized, anything else as
    text) joined by `sep`, then `end`, to `output_stream` (sys.stderr, the default;
    sys.stdout; logging.info / warning / error; or "file://<path>" to append to a
    file)."""
    stream = _stream_name(output_stream)
    format_name = name + "_format" if name else None
    if (len(inputs) == 1 and _is_tensor(inputs[0]) and inputs[0].shape.rank == 0
            and inputs[0].dtype == dtypes.string):
        formatted = inputs[0]
    else:
        free = [pack_sequence_as(x, ["" if _is_tensor(v) else v for v in flatten(x)])
                for x in inputs]
        placeholder = _placeholder_for(" ".join(pprint.pformat(x) for x in free))
        templates, tensors = [], []
        for x in inputs:
            parts = []
            for v in flatten(x):
                if _is_tensor(v):
                    tensors.append(v)
                    parts.append(placeholder)
                else:
                    parts.append(v)
            templates.append(x if isinstance(x, str)
                             else pprint.pformat(pack_sequence_as(x, parts)))
        template = sep.join(templates).replace(f"'{placeholder}'", placeholder)
        formatted = apply_op("StringFormat", name=format_name, inputs=tensors,
                             template=template, placeholder=placeholder,
                             summarize=summarize)
    return apply_op("PrintV2", name=name, input=formatted, output_stream=stream, end=end)


def timestamp(name=None) -> ops.Tensor:
    """Seconds since the epoch when the node runs (float64)."""
    return apply_op("Timestamp", name=name)


__all__ = ["Print", "print_v2", "string_format", "timestamp"]
