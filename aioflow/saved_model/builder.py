"""af.saved_model.Builder: writes a v1 SavedModel as tf.compat.v1.saved_model.Builder does
(variables through a sharded V2 Saver into variables/, the graph's MetaGraphDef tagged
and with its signatures into saved_model.pb), so that TF 1.x's loader and aioflow's load
it. Assets are not written yet (assets_collection is refused)."""

from __future__ import annotations

import asyncio
import os

from google.protobuf import text_format

from aioflow.framework import ops as ops_mod
from aioflow.proto import saved_model_pb2
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
            _refuse_assets(assets_collection)
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
            _refuse_assets(assets_collection)
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

    @staticmethod
    def _saver():
        from aioflow.train.saver import Saver

        return Saver(sharded=True, allow_empty=True)

    def _tag_and_add(self, meta, tags, signature_def_map) -> None:
        for key, signature in (signature_def_map or {}).items():
            if not signature.method_name:
                raise AssertionError(f"Signature {key!r} has no method_name")
            meta.signature_def[key].CopyFrom(signature)
        meta.meta_info_def.tags.extend(list(tags))
        self._saved_model.meta_graphs.add().CopyFrom(meta)


def _refuse_assets(assets_collection) -> None:
    if assets_collection:
        raise NotImplementedError("af.saved_model.Builder does not write assets yet")


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
