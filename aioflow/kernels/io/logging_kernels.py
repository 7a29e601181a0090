"""Kernels of TF's printing ops: Print (TF 1: passes its input through and writes
message + [summary of each data tensor] to stderr, the first `first_n` times), PrintV2 (TF
2: writes one string to stdout, stderr, the `aioflow` logger, or appends it to a file) and
StringFormat (the string tf.print and tf.strings.format build: tensors summarized into a
template, aioflow/kernels/io/tensor_summary.py).

Text goes to Python's sys.stdout / sys.stderr (as bytes, through their buffer, so what
the user redirects or captures gets it), where TF writes to the process's descriptors;
"log(info)" and the other levels go to the `aioflow` logger where TF's C++ log has them.
Writes are side effects: these kernels are stateful and never compiled into segments."""

from __future__ import annotations

import logging
import sys
import threading
import time

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_defs.string_ops import template_pieces
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.io.tensor_summary import summarize_value

_STREAMS = ("stdout", "stderr", "log(info)", "log(warning)", "log(error)")
_LEVELS = {"log(info)": logging.INFO, "log(warning)": logging.WARNING,
           "log(error)": logging.ERROR}
_FILE_PREFIX = "file://"
logger = logging.getLogger("aioflow")


def _text(value) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def write(stream, data: bytes) -> None:
    """Write bytes to a text stream: through its buffer when it has one (keeping bytes
    that are not UTF-8), else as text."""
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        stream.flush()
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "replace"))
        stream.flush()


@register_kernel("Timestamp", "CPU")
class TimestampOp(OpKernel):
    """Seconds since the epoch, as a double (time.time(), as TF's Env::NowMicros)."""

    def compute(self, ctx, inputs):
        return (np.float64(time.time()),)


@register_kernel("Print", "CPU")
class PrintOp(OpKernel):
    """Identity of input 0; writes message[d1][d2]... to stderr the first first_n times
    (every time when first_n < 0)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.message = _text(ctx.get_attr("message", b""))
        self.first_n = int(ctx.get_attr("first_n", -1))
        self.summarize = int(ctx.get_attr("summarize", 3))
        self.calls = 0
        self.lock = threading.Lock()

    def compute(self, ctx, inputs):
        if self.first_n >= 0:
            with self.lock:
                if self.calls >= self.first_n:
                    return (inputs[0],)
                self.calls += 1
        parts = [self.message]
        parts.extend(f"[{summarize_value(x, self.summarize)}]" for x in inputs[1:])
        write(sys.stderr, _bytes("".join(parts) + "\n"))
        return (inputs[0],)


@register_kernel("PrintV2", "CPU")
class PrintV2Op(OpKernel):
    """Writes its scalar string input and `end` to `output_stream` (appending to a file on
    the pool, off the event loop)."""

    expensive = None

    def is_expensive(self, inputs) -> bool:
        return self.stream.startswith(_FILE_PREFIX)

    def __init__(self, ctx):
        super().__init__(ctx)
        stream = _text(ctx.get_attr("output_stream", b"stderr"))
        if not stream.startswith(_FILE_PREFIX) and stream not in _STREAMS:
            raise errors.InvalidArgumentError(
                ctx.node_def, None, f"Unknown output stream: {stream}, Valid streams are: "
                                    f"{' '.join(_STREAMS)}")
        self.stream = stream
        end = ctx.get_attr("end", b"\n")
        self.end = end if isinstance(end, bytes) else end.encode("utf-8")
        self.lock = threading.Lock()

    def compute(self, ctx, inputs):
        value = inputs[0]
        if np.ndim(value) != 0:
            raise errors.InvalidArgumentError(
                None, None, f"Input is expected to be scalar, but got "
                            f"[{','.join(str(d) for d in np.shape(value))}]")
        item = np.asarray(value).item()
        data = (item if isinstance(item, bytes) else str(item).encode("utf-8")) + self.end
        stream = self.stream
        if stream == "stdout":
            write(sys.stdout, data)
        elif stream == "stderr":
            write(sys.stderr, data)
        elif stream in _LEVELS:
            logger.log(_LEVELS[stream], "%s", _text(data))
        else:
            self._append(stream[len(_FILE_PREFIX):], data)
        return ()

    def _append(self, path: str, data: bytes) -> None:
        try:
            with self.lock, open(path, "ab") as f:
                f.write(data)
        except OSError as e:
            raise errors.InvalidArgumentError(
                None, None, f"Could not open file {path}: {e.strerror}") from None


@register_kernel("StringFormat", "CPU")
class StringFormatOp(OpKernel):
    """The template with each placeholder replaced by the summary (print_v2 style) of the
    matching input, `summarize` entries at each end of every dimension."""

    def __init__(self, ctx):
        super().__init__(ctx)
        template, placeholder = ctx.get_attr("template"), ctx.get_attr("placeholder")
        self.pieces = template_pieces(
            template if isinstance(template, bytes) else template.encode("utf-8"),
            placeholder if isinstance(placeholder, bytes) else placeholder.encode("utf-8"))
        self.summarize = int(ctx.get_attr("summarize", 3))

    def compute(self, ctx, inputs):
        if len(self.pieces) - 1 != len(inputs):
            raise errors.InvalidArgumentError(
                None, None, f"num placeholders in template and num inputs must match: "
                            f"{len(self.pieces) - 1} vs. {len(inputs)}")
        out = [self.pieces[0]]
        for value, piece in zip(inputs, self.pieces[1:], strict=True):
            out.append(_bytes(summarize_value(value, self.summarize, print_v2=True)))
            out.append(piece)
        result = np.empty((), dtype=object)
        result[()] = b"".join(out)
        return (result,)
