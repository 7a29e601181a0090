"""af.saved_model.Builder: writes a v1 SavedModel as tf.compat.v1.saved_model.Builder does
(variables through a sharded V2 Saver into variables/, the graph's MetaGraphDef tagged
and with its signatures into saved_model.pb), so that TF 1.x's loader and aioflow's load
it. Assets (`assets_collection`: constant string tensors naming files) are recorded in the
MetaGraphDef's `saved_model_assets` collection as TF's v1 builder records them, and their
files copied into assets/ when the SavedModel is saved (off the event loop)."""

from __future__ import annotations

import asyncio
import filecmp
import os
import shutil

import numpy as np
from google.protobuf import any_pb2, text_format

from aioflow.framework import dtypes
from aioflow.framework import ops as ops_mod
from aioflow.proto import meta_graph_pb2, saved_model_pb2
from aioflow.saved_model import constants


class Builder:
    """One SavedModel under `export_dir` (new, or an empty directory), built by
    add_meta_graph_and_variables (once) and add_meta_graph, then written by save."""

    def __init__(self, export_dir):
        export_dir = os.fspath(export_dir)
        if os.path.exists(export_dir):
            if os.listdir(export_dir):
                raise AssertionError(
                    f"Export directory already exists, and isn't empty. Please choose a "
                    f"different export directory, or delete all the contents of the "
                    f"specified directory: {export_dir}")
        else:
            os.makedirs(export_dir)
        self._export_dir = export_dir
        self._saved_model = saved_model_pb2.SavedModel(
            saved_model_schema_version=constants.SAVED_MODEL_SCHEMA_VERSION)
        self._has_saved_variables = False
        self._asset_files: dict[bytes, bytes] = {}  # filename under assets/ -> source path

    async def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None,
                                           assets_collection=None, legacy_init_op=None,
                                           clear_devices=False, main_op=None,
                                           strip_default_attrs=False, saver=None):
        """Save the session's variables into variables/ and add the graph's MetaGraphDef
        with `tags` and `signature_def_map`; main_op (or legacy_init_op) is what the
        loader runs after restoring."""
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already "
                                 "been saved. Please invoke `add_meta_graph()` instead.")
        graph = sess.graph
        with graph.as_default():
            self._add_main_op(graph, main_op if main_op is not None else legacy_init_op)
            self._add_assets(graph, assets_collection)
            saver = saver or self._saver()
            variables_dir = os.path.join(self._export_dir, constants.VARIABLES_DIRECTORY)
            await asyncio.to_thread(os.makedirs, variables_dir, exist_ok=True)
            await saver.save(sess, os.path.join(variables_dir, constants.VARIABLES_FILENAME),
                             write_meta_graph=False, write_state=False)
            meta = saver.export_meta_graph(clear_devices=clear_devices,
                                           strip_default_attrs=strip_default_attrs)
        self._tag_and_add(meta, tags, signature_def_map)
        self._has_saved_variables = True

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None,
                       legacy_init_op=None, clear_devices=False, main_op=None,
                       strip_default_attrs=False, saver=None):
        """Add another MetaGraphDef of the default graph (its variables already saved)."""
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been "
                                 "saved yet. Please invoke `add_meta_graph_and_variables()` "
                                 "first.")
        graph = ops_mod.get_default_graph()
        with graph.as_default():
            self._add_main_op(graph, main_op if main_op is not None else legacy_init_op)
            self._add_assets(graph, assets_collection)
            saver = saver or self._saver()
            meta = saver.export_meta_graph(clear_devices=clear_devices,
                                           strip_default_attrs=strip_default_attrs)
        self._tag_and_add(meta, tags, signature_def_map)

    async def save(self, as_text=False) -> str:
        """Write saved_model.pb (or .pbtxt); returns its path."""
        name = (constants.SAVED_MODEL_FILENAME_PBTXT if as_text
                else constants.SAVED_MODEL_FILENAME_PB)
        path = os.path.join(self._export_dir, name)
        data = (text_format.MessageToString(self._saved_model).encode() if as_text
                else self._saved_model.SerializeToString(deterministic=True))
        await asyncio.to_thread(_copy_assets, self._asset_files, self._export_dir)
        await asyncio.to_thread(_write, path, data)
        return path

    # -- parts -------------------------------------------------------------------------------
    @staticmethod
    def _add_main_op(graph, main_op) -> None:
        if main_op is None:
            return
        if not isinstance(main_op, ops_mod.Operation):
            raise TypeError(f"main_op needs to be an Operation: {main_op!r}")
        graph.add_to_collection(constants.MAIN_OP_KEY, main_op)

    def _add_assets(self, graph, assets_collection) -> None:
        """Record each asset tensor in the graph's assets collection (an AssetFileDef packed
        in an Any, under TF's type URL so that TF's loader unpacks it), with a file name
        unique among this SavedModel's assets, as TF's builder does."""
        for tensor in assets_collection or ():
            source = _asset_path_from_tensor(tensor)
            if not source:
                raise ValueError(f"Asset filepath tensor {tensor} in is invalid.")
            filename = _asset_filename_to_add(source, self._asset_files)
            asset = meta_graph_pb2.AssetFileDef(filename=filename.decode("utf-8"))
            asset.tensor_info.name = tensor.name
            graph.add_to_collection(constants.ASSETS_KEY, any_pb2.Any(
                type_url=_ASSET_TYPE_URL, value=asset.SerializeToString()))
            self._asset_files[filename] = source

    @staticmethod
    def _saver():
        from aioflow.checkpoint.saver import Saver

        return Saver(sharded=True, allow_empty=True)

    def _tag_and_add(self, meta, tags, signature_def_map) -> None:
        for key, signature in (signature_def_map or {}).items():
            if not signature.method_name:
                raise AssertionError(f"Signature {key!r} has no method_name")
            meta.signature_def[key].CopyFrom(signature)
        meta.meta_info_def.tags.extend(list(tags))
        self._saved_model.meta_graphs.add().CopyFrom(meta)


_ASSET_TYPE_URL = "type.googleapis.com/tensorflow.AssetFileDef"


def _asset_path_from_tensor(tensor) -> bytes:
    """The path a constant scalar string tensor holds (TF's checks and messages)."""
    if not isinstance(tensor, ops_mod.Tensor):
        raise TypeError(f"Asset path tensor {tensor} must be a Tensor.")
    if tensor.op.type != "Const":
        raise TypeError(f"Asset path tensor {tensor} must be of type constant."
                        f"Has type {tensor.op.type} instead.")
    if tensor.dtype != dtypes.string:
        raise TypeError(f"Asset path tensor {tensor}` must be of dtype string."
                        f"Has type {tensor.dtype} instead.")
    values = np.asarray(tensor.op.get_attr("value")).reshape(-1)
    if values.size != 1:
        raise TypeError(f"Asset path tensor {tensor} must be a scalar.")
    value = values[0]
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def _asset_filename_to_add(source: bytes, files: dict) -> bytes:
    """The source's base name, suffixed _1, _2, ... when another file of that name but
    other contents is already an asset (TF's get_asset_filename_to_add)."""
    name = os.path.basename(source)
    other = files.get(name)
    if other is None or other == source or filecmp.cmp(source, other, shallow=False):
        return name
    i, unique = 1, name
    while unique in files:
        unique = name + b"_" + str(i).encode()
        i += 1
    return unique


def _copy_assets(files: dict, export_dir: str) -> None:
    """Copy each asset into export_dir/assets (sources that do not exist are skipped, as
    TF's builder skips them)."""
    if not files:
        return
    assets_dir = os.path.join(os.fsencode(export_dir), constants.ASSETS_DIRECTORY.encode())
    os.makedirs(assets_dir, exist_ok=True)
    for filename, source in files.items():
        destination = os.path.join(assets_dir, filename)
        if os.path.exists(source) and source != destination:
            shutil.copyfile(source, destination)


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
