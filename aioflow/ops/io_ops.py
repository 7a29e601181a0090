"""Builders of TF's file ops: read_file (a `ReadFile` op), matching_files
(`MatchingFiles`)."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.framework.op_def_library import apply_op


def read_file(filename, name: str | None = None) -> ops.Tensor:
    """The whole contents of the file `filename` names (a scalar string), as a scalar string;
    read on the device's thread pool."""
    return apply_op("ReadFile", name=name, filename=filename)


def matching_files(pattern, name: str | None = None) -> ops.Tensor:
    """The sorted names of the files matching the glob `pattern` (a string, or a vector of
    them), as a vector of strings; listed on the device's thread pool."""
    return apply_op("MatchingFiles", name=name, pattern=pattern)


__all__ = ["matching_files", "read_file"]
