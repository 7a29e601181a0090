"""Reading checkpoints from Python, as TF's py_checkpoint_reader and checkpoint_utils:
NewCheckpointReader / load_checkpoint (a CheckpointReader with get_tensor,
get_variable_to_shape_map, get_variable_to_dtype_map, has_tensor, debug_string),
load_variable and list_variables.

V2 checkpoints (tensor bundles) only; the index is read once, each get_tensor reads one
tensor from its data shard (checksum verified). Blocking, as TF's: from a coroutine use
`asyncio.to_thread`.
"""

from __future__ import annotations

import os

from aioflow.checkpoint.checkpoint_management import latest_checkpoint
from aioflow.framework import dtypes
from aioflow.lib import tensor_bundle
from aioflow.proto import types_pb2

__all__ = ["CheckpointReader", "NewCheckpointReader", "list_variables", "load_checkpoint",
           "load_variable"]


class CheckpointReader:
    """A checkpoint's tensors by name (TF's CheckpointReader over a V2 bundle)."""

    def __init__(self, filepattern):
        self._reader = tensor_bundle.BundleReader(os.fspath(filepattern))
        self._entries = {k: self._reader.entry(k) for k in self._reader.keys()}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self._reader.close()

    def has_tensor(self, name) -> bool:
        return _key(name) in self._entries

    def get_tensor(self, name):
        """The tensor's value: an ndarray, or a NumPy scalar for a 0-d tensor (as TF's).
        NotFoundError "Key <name> not found in checkpoint"."""
        value = self._reader.lookup(_key(name))
        return value[()] if value.ndim == 0 else value

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        return {_name(k): [d.size for d in e.shape.dim] for k, e in self._entries.items()}

    def get_variable_to_dtype_map(self) -> dict[str, dtypes.DType]:
        return {_name(k): dtypes.as_dtype(e.dtype) for k, e in self._entries.items()}

    def debug_string(self) -> bytes:
        """'name (DT_FLOAT) [2,3]' a line, as BundleReader::DebugString."""
        lines = []
        for k, e in self._entries.items():
            if e.slices:
                continue
            dims = ",".join(str(d.size) for d in e.shape.dim)
            lines.append(f"{_name(k)} ({types_pb2.DataType.Name(e.dtype)}) [{dims}]\n")
        return "".join(lines).encode("utf-8", "surrogateescape")


def _key(name) -> bytes:
    return name if isinstance(name, bytes) else str(name).encode("utf-8")


def _name(key: bytes) -> str:
    return key.decode("utf-8", "surrogateescape")


def NewCheckpointReader(filepattern) -> CheckpointReader:  # noqa: N802  (TF's name)
    """A CheckpointReader for a checkpoint prefix (NotFoundError when there is none)."""
    return CheckpointReader(filepattern)


def _checkpoint_filename(ckpt_dir_or_file) -> str | None:
    path = os.fspath(ckpt_dir_or_file)
    return latest_checkpoint(path) if os.path.isdir(path) else path


def load_checkpoint(ckpt_dir_or_file) -> CheckpointReader:
    """A reader for a checkpoint prefix, or for the latest checkpoint of a directory."""
    filename = _checkpoint_filename(ckpt_dir_or_file)
    if filename is None:
        raise ValueError("Couldn't find 'checkpoint' file or checkpoints in given directory "
                         f"{os.fspath(ckpt_dir_or_file)}")
    return NewCheckpointReader(filename)


def load_variable(ckpt_dir_or_file, name):
    """The value of one tensor of a checkpoint (a trailing ":0" is ignored)."""
    if name.endswith(":0"):
        name = name[:-2]
    with load_checkpoint(ckpt_dir_or_file) as reader:
        return reader.get_tensor(name)


def list_variables(ckpt_dir_or_file) -> list[tuple[str, list[int]]]:
    """(name, shape) of every tensor of a checkpoint, sorted by name."""
    with load_checkpoint(ckpt_dir_or_file) as reader:
        shapes = reader.get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


