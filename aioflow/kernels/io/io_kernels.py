"""Kernels of the V2 checkpoint ops (tensorflow/core/kernels/save_restore_v2_ops.cc):
SaveV2, RestoreV2 and MergeV2Checkpoints, over aioflow/lib/tensor_bundle.py.

All three are pool kernels: their file I/O and checksums run on the device's thread
pool, never on the event loop. Inputs are checked as TF's kernels check them, with TF's
error classes and messages; the executor adds the node's name.

shape_and_slices: an empty string is the whole tensor; "10 4 0,5:-" is the full shape and
a slice (a part of a partitioned variable). SaveV2 stores a slice as TF's BundleWriter
AddSlice does (the full tensor's entry lists its slices; each slice is stored under its
encoded key), RestoreV2 reads any slice back from the stored ones that cover it, whatever
the partitioning they were saved with (aioflow/lib/tensor_slice.py).
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.gil import loop_keeps_gil
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str, tf_type_name
from aioflow.lib import crc32c, tensor_bundle, tensor_slice


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _strings(value) -> np.ndarray:
    """A string input as an array of bytes/str objects."""
    return np.asarray(value, dtype=object)


def _text(value) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _validate(prefix, names, specs, num_tensors: int | None) -> None:
    """ValidateInputs of SaveV2 / RestoreV2 (num_tensors: SaveV2's tensor count)."""
    if prefix.size != 1:
        raise _invalid(f"Input prefix should have a single element, got {prefix.size} "
                       "instead.")
    if names.ndim != 1 or specs.ndim != 1:
        raise _invalid("Input tensor_names and shape_and_slices should be an 1-D tensors, "
                       f"got {shape_str(names.shape)} and {shape_str(specs.shape)} instead.")
    if num_tensors is not None and num_tensors != names.size:
        raise _invalid(f"Got {names.size} tensor names but {num_tensors} tensors.")
    if names.size != specs.size:
        raise _invalid("tensor_names and shape_and_slices have different number of elements: "
                       f"{names.size} vs. {specs.size}")


def parse_shape_and_slice(spec: str, name: str):
    """(full shape, TensorSlice) of a non-empty spec; None for "" (TF's words for a
    malformed spec)."""
    del name
    if not spec:
        return None
    return tensor_slice.parse_shape_and_slice(spec)


@register_kernel("SaveV2", "CPU")
class SaveV2Op(OpKernel):
    """Writes the tensors to the bundle <prefix> (one data shard and the index)."""

    expensive = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtypes = [dtypes.as_dtype(t) for t in ctx.get_attr("dtypes")]

    def compute(self, ctx, inputs):
        prefix, names, specs = (_strings(v) for v in inputs[:3])
        tensors = inputs[3:]
        _validate(prefix, names, specs, len(tensors))
        save_tensors(_text(prefix.reshape(-1)[0]), [_text(n) for n in names],
                     [_text(s) for s in specs], tensors, self.dtypes)
        return []


def save_tensors(prefix: str, names, specs, tensors, types=None) -> None:
    """SaveTensors for V2: one bundle written through BundleWriter (removed on error);
    `types` are the tensors' TF dtypes (inferred from the values when None)."""
    types = types or [None] * len(tensors)
    checked = []
    for name, spec, value, dtype in zip(names, specs, tensors, types, strict=True):
        parsed = parse_shape_and_slice(spec, name)
        value = np.asarray(value)
        if parsed is not None and parsed[1].slice_shape(parsed[0]) != value.shape:
            raise _invalid(f"Slice in shape_and_slice specification does not match the shape "
                           f"of the tensor to  save: {spec}, tensor: "
                           f"{shape_str(value.shape)}")
        checked.append((name, parsed, value, dtype))
    writer = tensor_bundle.BundleWriter(prefix)
    try:
        for name, parsed, value, dtype in checked:
            if parsed is None:
                writer.add(name, value, dtype)
            else:
                writer.add_slice(name, parsed[0], parsed[1], value, dtype)
    except BaseException:
        writer.abort()
        raise
    writer.finish()


@register_kernel("RestoreV2", "CPU")
class RestoreV2Op(OpKernel):
    """Reads the named tensors of the bundle <prefix>, checking their dtypes."""

    expensive = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtypes = [dtypes.as_dtype(t) for t in ctx.get_attr("dtypes")]

    def compute(self, ctx, inputs):
        prefix, names, specs = (_strings(v) for v in inputs[:3])
        _validate(prefix, names, specs, None)
        if names.size != len(self.dtypes):
            raise _invalid(f"Got {names.size} tensor names, but {len(self.dtypes)} expected "
                           "dtypes.")
        with loop_keeps_gil():  # reading threads must not keep the loop from the GIL
            return restore_tensors(_text(prefix.reshape(-1)[0]), [_text(n) for n in names],
                                   [_text(s) for s in specs], self.dtypes)


def restore_tensors(prefix: str, names, specs, expected) -> list[np.ndarray]:
    """RestoreTensorsV2: every name checked (present, dtype, spec shape) before any is
    read, then read one by one into fresh arrays."""
    with tensor_bundle.BundleReader(prefix) as reader:
        entries = []
        for name, spec, dtype in zip(names, specs, expected, strict=True):
            entry = reader.entry(name)
            stored_dtype = dtypes.as_dtype(entry.dtype)
            if stored_dtype != dtype:
                raise _invalid(f"tensor_name = {name}; expected dtype {tf_type_name(dtype)} "
                               f"does not equal original dtype {tf_type_name(stored_dtype)}")
            parsed = parse_shape_and_slice(spec, name)
            stored_shape = tuple(d.size for d in entry.shape.dim)
            if parsed is not None and parsed[0] != stored_shape:
                raise _invalid(f"tensor_name = {name}; shape in shape_and_slice spec "
                               f"{shape_str(parsed[0])} does not match the shape stored in "
                               f"checkpoint: {shape_str(stored_shape)}")
            sl = None if parsed is None or parsed[1].is_full() else parsed[1]
            entries.append((name, entry, sl))
        return _read_all(reader, entries)


#: Tensors of at least this many bytes are read (and checksummed) on the restore pool,
#: several at once, as TF's RestoreV2 reads large tensors on its own pool. With the
#: NumPy CRC-32C, two threads: it holds the GIL part of the time, so more add little
#: (measured on 16 cores, 200 MB: 1 thread 0.6 s, 2: 0.45 s, 4 or 8: 0.42 s) and cost
#: the event loop's heartbeat (2 threads: max gap ~3 ms, 4: ~4.5 ms). With the compiled
#: one (google-crc32c, which releases the GIL), four.
PARALLEL_READ_BYTES = 1 << 20


@functools.cache
def _restore_pool() -> ThreadPoolExecutor:
    threads = 4 if crc32c.native_available() else 2
    return ThreadPoolExecutor(max_workers=min(threads, os.cpu_count() or 1),
                              thread_name_prefix="aioflow-restore")


def _read_one(reader, name: str, entry, sl) -> np.ndarray:
    """The tensor (or its slice `sl`), assembled from slices where it is stored so."""
    if sl is not None:
        return reader.lookup_slice(name, sl)
    if entry.slices:
        return reader.lookup(name)
    return reader.read_entry(name.encode("utf-8"), entry)


def _read_all(reader, entries) -> list[np.ndarray]:
    """Every entry's tensor, in order; large ones in parallel. The first error (in the
    names' order) is raised once every read has finished."""
    large = [i for i, (_, e, _) in enumerate(entries) if e.size >= PARALLEL_READ_BYTES]
    futures = {}
    if len(large) > 1:
        pool = _restore_pool()
        for i in sorted(large, key=lambda i: -entries[i][1].size):
            futures[i] = pool.submit(_read_one, reader, *entries[i])
    out, error = [], None
    for i, (name, entry, sl) in enumerate(entries):
        try:
            out.append(futures[i].result() if i in futures
                       else _read_one(reader, name, entry, sl))
        except Exception as e:  # noqa: BLE001  (re-raised below, after the other reads)
            error = error or e
            out.append(None)
    if error is not None:
        raise error
    return out


@register_kernel("MergeV2Checkpoints", "CPU")
class MergeV2CheckpointsOp(OpKernel):
    """Merges the bundles' indexes into <destination_prefix> and moves their data files."""

    expensive = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.delete_old_dirs = ctx.get_attr("delete_old_dirs", True)
        self.allow_missing_files = ctx.get_attr("allow_missing_files", False)

    def compute(self, ctx, inputs):
        prefixes, dest = _strings(inputs[0]), _strings(inputs[1])
        if prefixes.ndim != 1:
            raise _invalid("Input checkpoint_prefixes should be an 1-D tensor, got "
                           f"{shape_str(prefixes.shape)} instead.")
        if dest.ndim != 0:
            raise _invalid("Input destination_prefix should be a scalar tensor, got "
                           f"{shape_str(dest.shape)} instead.")
        sources = [_text(p) for p in prefixes]
        merged = _text(dest.item())
        tensor_bundle.merge_bundles(sources, merged, self.allow_missing_files)
        if self.delete_old_dirs:
            delete_old_dirs(sources, merged)
        return []


def delete_old_dirs(sources, merged: str) -> None:
    """Remove the sources' directories (other than the merged one's) if empty, ignoring
    errors, as TF's kernel does."""
    merged_dir = os.path.dirname(merged)
    for prefix in sources:
        dirname = os.path.dirname(prefix)
        if dirname == merged_dir:
            continue
        try:
            os.rmdir(dirname)
        except OSError:
            pass
