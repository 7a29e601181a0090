"""TF's CheckValidPadding (tensorflow/core/util/padding.cc): whether a padding attr and
its explicit_paddings go together. One rule for the convolution and pooling kernels
(which raise its message) and the remapper (which leaves a node it fails unfused, so
that the node's own kernel names it)."""

from __future__ import annotations


def explicit_paddings_error(padding: str, paddings, num_dims: int,
                            channels_first: bool) -> str | None:
    """TF's message for `paddings` (the explicit_paddings attr, 2 values per dimension of
    a `num_dims`-D input) under `padding`, or None when they are valid."""
    p = list(paddings)
    if padding != "EXPLICIT":
        return None if not p else ("explicit_paddings attribute must be empty if the "
                                   "padding attribute is not EXPLICIT")
    if len(p) != 2 * num_dims:
        return f"explicit_paddings attribute must contain {2 * num_dims} values, but got: " \
               f"{len(p)}"
    if any(v < 0 for v in p):
        return "All elements of explicit_paddings must be nonnegative"
    c = 1 if channels_first else num_dims - 1
    if p[0] or p[1] or p[2 * c] or p[2 * c + 1]:
        return "Nonzero explicit padding in the batch or depth dimensions is not supported"
    return None
