"""ReadFile (tensorflow/core/kernels/whole_file_read_ops.cc): a file's whole contents as a
scalar string; MatchingFiles (matching_files_op.cc): the file names a glob pattern finds.
Pool kernels: the file system is never touched on the event loop. Errors as TF's file
system reports them (NotFoundError for a missing file, FailedPreconditionError for a
directory); the executor adds the node's name."""

from __future__ import annotations

import glob

import numpy as np

from aioflow.framework import errors
from aioflow.framework.io_errors import io_error
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str


@register_kernel("ReadFile", "CPU")
class ReadFileOp(OpKernel):
    """contents = the bytes of the file named by a scalar string."""

    expensive = True

    def compute(self, ctx, inputs):
        filename = np.asarray(inputs[0])
        if filename.ndim != 0:
            raise errors.InvalidArgumentError(
                None, None, "Input filename tensor must be scalar, but had shape: "
                f"{shape_str(filename.shape)}")
        path = filename.item()
        path = path if isinstance(path, bytes) else str(path).encode()
        try:
            with open(path, "rb") as f:
                contents = f.read()
        except OSError as e:
            raise io_error(e, path) from None
        return (np.array(contents, dtype=object),)


@register_kernel("MatchingFiles", "CPU")
class MatchingFilesOp(OpKernel):
    """filenames = the paths matching any of the patterns (a scalar or a vector), all
    sorted together. A pool kernel (it lists directories). As TF's matcher, `*` also
    matches names starting with '.', and a pattern that matches nothing (a missing
    directory included) adds no name."""

    expensive = True

    def compute(self, ctx, inputs):
        patterns = np.asarray(inputs[0])
        if patterns.ndim > 1:
            raise errors.InvalidArgumentError(
                None, None, "Input patterns tensor must be scalar or vector, but had shape: "
                f"{shape_str(patterns.shape)}")
        names = []
        for pattern in patterns.reshape(-1).tolist():
            pattern = pattern if isinstance(pattern, bytes) else str(pattern).encode()
            names.extend(glob.glob(pattern, include_hidden=True))
        names.sort()
        return (np.array(names, dtype=object).reshape(len(names)),)
