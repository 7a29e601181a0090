"""A checkpoint index is untrusted input (issue 30, 8 and 12): an entry's size, shape or
dtype edited in variables.index can never make the bundle reader allocate more than the
data file holds, nor raise a raw MemoryError / ValueError / TypeError: each is a
DataLossError naming the entry, raised before anything is allocated."""

from __future__ import annotations

import os
import tracemalloc

import numpy as np
import pytest

from aioflow.framework import errors
from aioflow.kernels import background_jit
from aioflow.lib import tensor_bundle
from aioflow.proto import tensor_bundle_pb2


@pytest.fixture
def prefix(tmp_path):
    p = str(tmp_path / "variables")
    writer = tensor_bundle.BundleWriter(p)
    writer.add("s", np.array([b"ab", b"", b"cde"], dtype=object))
    writer.add("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    writer.finish()
    return p


def _edit(prefix: str, key: bytes, edit) -> None:
    """Rewrite the index with `edit(entry)` applied to one entry."""
    index = prefix + ".index"
    with open(index, "rb") as f:
        table = tensor_bundle.read_table(f.read(), index)
    header = tensor_bundle_pb2.BundleHeaderProto.FromString(table[0][1])
    entries = []
    for name, value in table[1:]:
        entry = tensor_bundle_pb2.BundleEntryProto.FromString(value)
        if name == key:
            edit(entry)
        entries.append((name, entry))
    tensor_bundle.write_index(index, header, entries)


def _set_shape(dims):
    def edit(entry):
        del entry.shape.dim[:]
        for d in dims:
            entry.shape.dim.add(size=d)
    return edit


CASES = {
    "string size 1 GiB": (b"s", lambda e: setattr(e, "size", 1 << 30), "runs past"),
    "string size 2^40": (b"s", lambda e: setattr(e, "size", 1 << 40), "runs past"),
    "string shape 2^40": (b"s", _set_shape([1 << 40]), "Invalid size in bundle entry"),
    "string shape 2^62": (b"s", _set_shape([1 << 62]), "Invalid size in bundle entry"),
    "float size 2^40": (b"w", lambda e: setattr(e, "size", 1 << 40), "Invalid size"),
    "float shape 2^62": (b"w", _set_shape([1 << 62]), "Invalid size in bundle entry"),
    "float shape 2^31 x 2^31 x 4": (b"w", _set_shape([1 << 31, 1 << 31, 4]),
                                     "Invalid tensor shape"),
    "float shape and size 2^34 floats": (
        b"w", lambda e: (_set_shape([1 << 34])(e), setattr(e, "size", 1 << 36)),
        "runs past"),
    "offset past the file": (b"w", lambda e: setattr(e, "offset", 1 << 40), "runs past"),
    "dtype 0": (b"w", lambda e: setattr(e, "dtype", 0), "Invalid dtype 0"),
    "dtype 9999": (b"w", lambda e: setattr(e, "dtype", 9999), "Invalid dtype 9999"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_edited_index_entry_is_data_loss_before_any_allocation(prefix, case):
    key, edit, message = CASES[case]
    _edit(prefix, key, edit)
    background_jit.wait_for_started()  # (a compile on its thread allocates meanwhile)
    tracemalloc.start()
    try:
        with tensor_bundle.BundleReader(prefix) as reader:
            with pytest.raises(errors.DataLossError, match=message):
                reader.lookup(key)
            # (a dtype or shape no tensor can have: refused when the entry is read too)
            refused = "dtype" in case or message == "Invalid tensor shape"
            with pytest.raises(errors.DataLossError) if refused else _nothing():
                reader.dtype_and_shape(key)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_untouched_entries_still_read(prefix):
    _edit(prefix, b"s", lambda e: setattr(e, "size", 1 << 30))
    with tensor_bundle.BundleReader(prefix) as reader:
        np.testing.assert_array_equal(reader.lookup("w"),
                                      np.arange(6, dtype=np.float32).reshape(2, 3))
    assert os.path.getsize(prefix + ".data-00000-of-00001") < 100


@pytest.mark.parametrize("model", ["saved_model_v2/mlp", "saved_model_v1/main_op"])
async def test_a_saved_models_edited_variables_index_is_data_loss(tmp_path, model):
    """The same through a SavedModel's variables (TF 2's object graph loader and TF 1's
    restore op): the version fails to load with DataLossError, nothing allocated."""
    import shutil

    from aioflow.serving.loader import load_servable

    data = os.path.join(os.path.dirname(__file__), "data", model)
    shutil.copytree(data, tmp_path / "m")
    prefix = str(tmp_path / "m" / "variables" / "variables")
    with tensor_bundle.BundleReader(prefix) as reader:
        keys = [k for k in reader.keys() if reader.entry(k).size > 0
                and not k.startswith(b"_CHECKPOINTABLE_OBJECT_GRAPH")]
    for key in keys:  # (every variable: the loader restores under one of two names)
        _edit(prefix, key, lambda e: setattr(e, "size", 1 << 30))
    with pytest.raises(errors.DataLossError, match="Invalid size in bundle entry|runs past"):
        await load_servable(tmp_path / "m")
