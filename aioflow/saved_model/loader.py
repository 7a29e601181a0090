"""Loading v1 SavedModels (tf.compat.v1.saved_model.loader): `await load(sess, tags,
export_dir)` reads saved_model.pbtxt or saved_model.pb (on a thread), picks the
MetaGraphDef whose tag set equals `tags`, imports it into sess.graph, restores its
variables from variables/variables through its SaverDef, and runs its init op (the
`__saved_model_init_op` signature, else the main_op, else the legacy_init_op collection)
with every asset tensor fed the asset's path under assets/.

SavedModels written by TF 2's tf.saved_model.save load here too, as in TF: their graph
calls functions of its library ((Stateful)PartitionedCall), and their SaverDef's restore
op is a call of the traced restore function; the SavedObjectGraph is not read (TF 2's
loader, loader_v2.py, reads it).
"""

from __future__ import annotations

import asyncio
import logging
import os

from google.protobuf import message, text_format

from aioflow.checkpoint import saver as saver_mod
from aioflow.framework import ops as ops_mod
from aioflow.proto import meta_graph_pb2, saved_model_pb2
from aioflow.saved_model import constants

__all__ = ["load", "maybe_saved_model_directory", "parse_saved_model",
           "get_asset_tensors", "get_init_op"]

_log = logging.getLogger(__name__)


def maybe_saved_model_directory(export_dir) -> bool:
    """Whether `export_dir` holds a saved_model.pbtxt, .pb or .cpb (blocking)."""
    export_dir = os.fspath(export_dir)
    return any(os.path.exists(os.path.join(export_dir, name)) for name in (
        constants.SAVED_MODEL_FILENAME_PBTXT, constants.SAVED_MODEL_FILENAME_PB,
        constants.SAVED_MODEL_FILENAME_CPB))


def _parse(path: str, text: bool) -> saved_model_pb2.SavedModel:
    """One SavedModel file (TF's IOError for one that does not parse)."""
    saved_model = saved_model_pb2.SavedModel()
    with open(path, "rb") as f:
        data = f.read()
    try:
        if text:
            text_format.Merge(data.decode("utf-8"), saved_model)
        else:
            saved_model.ParseFromString(data)
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError) as e:
        raise OSError(f"Cannot parse file {path}: {e}.") from None
    return saved_model


def parse_saved_model(export_dir) -> saved_model_pb2.SavedModel:
    """The SavedModel proto in `export_dir`, text format first (blocking)."""
    export_dir = os.fspath(export_dir)
    pbtxt = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
    pb = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PB)
    if os.path.exists(pbtxt):
        return _parse(pbtxt, text=True)
    if os.path.exists(pb):
        return _parse(pb, text=False)
    raise OSError(f"SavedModel file does not exist at: {export_dir}{os.sep}"
                  f"{{{constants.SAVED_MODEL_FILENAME_PBTXT}|"
                  f"{constants.SAVED_MODEL_FILENAME_PB}}}")


def get_meta_graph_def_from_tags(saved_model, tags) -> meta_graph_pb2.MetaGraphDef:
    """The MetaGraphDef whose tag set equals `tags` (TF's RuntimeError otherwise)."""
    found = None
    available = []
    for meta in saved_model.meta_graphs:
        available.append(set(meta.meta_info_def.tags))
        if set(meta.meta_info_def.tags) == set(tags):
            found = meta
    if found is None:
        raise RuntimeError(
            f"MetaGraphDef associated with tags {str(tags).strip('[]')} could not be "
            f"found in SavedModel, with available tags '{available}'. To inspect "
            "available tag-sets in the SavedModel, please use the SavedModel CLI: "
            "`saved_model_cli`.")
    return found


def _asset_protos(meta) -> list:
    """The AssetFileDefs of a MetaGraphDef (its field, else the assets collection)."""
    if meta.asset_file_def:
        return list(meta.asset_file_def)
    protos = []
    if constants.ASSETS_KEY in meta.collection_def:
        for any_proto in meta.collection_def[constants.ASSETS_KEY].any_list.value:
            asset = meta_graph_pb2.AssetFileDef()
            asset.ParseFromString(any_proto.value)  # type URL names TF's package
            protos.append(asset)
    return protos


def get_asset_tensors(export_dir, meta, import_scope=None) -> dict:
    """{asset tensor name: path of its file under export_dir/assets} (bytes paths)."""
    assets_dir = os.path.join(os.fsencode(export_dir),
                              constants.ASSETS_DIRECTORY.encode())
    out = {}
    for asset in _asset_protos(meta):
        name = asset.tensor_info.name
        if import_scope:
            name = f"{import_scope}/{name}"
        out[name] = os.path.join(assets_dir, asset.filename.encode("utf-8"))
    return out


def get_init_op(meta, import_scope=None, graph=None):
    """The op the loader runs after restoring, or None: the init-op signature's output,
    else the single op of the main_op or legacy_init_op collection."""
    graph = graph or ops_mod.get_default_graph()
    sig = meta.signature_def.get(constants.INIT_OP_SIGNATURE_KEY)
    if sig is not None and constants.INIT_OP_SIGNATURE_KEY in sig.outputs:
        name = sig.outputs[constants.INIT_OP_SIGNATURE_KEY].name
        return graph.as_graph_element(f"{import_scope}/{name}" if import_scope else name)
    for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
        if key in meta.collection_def:
            names = list(meta.collection_def[key].node_list.value)
            if len(names) != 1:
                raise RuntimeError(
                    f"Expected exactly one SavedModel init op. Found: {names}")
            name = f"{import_scope}/{names[0]}" if import_scope else names[0]
            return graph.as_graph_element(name)
    return None


def _has_variables(graph) -> bool:
    return bool(graph.get_collection("variables")
                or graph.get_collection("saveable_objects"))


async def _restore_variables(sess, saver, export_dir) -> None:
    """Restore variables/variables through the meta graph's Saver (TF's rules)."""
    if saver is None and not _has_variables(sess.graph):
        _log.info("The specified SavedModel has no variables; no checkpoints were "
                  "restored.")
        return
    if saver is None:
        raise ValueError(
            "No tf.train.Saver object was passed to the function "
            "`SavedModelLoader.restore_variables`. Since there are variables in the "
            "graph, a saver is required.")
    path = os.path.join(os.fspath(export_dir), constants.VARIABLES_DIRECTORY,
                        constants.VARIABLES_FILENAME)
    await saver.restore(sess, path)


async def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Load the MetaGraphDef tagged `tags` from `export_dir` into sess.graph, restore
    its variables and run its init op; returns the MetaGraphDef."""
    if saver_kwargs:
        raise TypeError("unexpected arguments: " + ", ".join(sorted(saver_kwargs)))
    saved_model = await asyncio.to_thread(parse_saved_model, export_dir)
    meta = get_meta_graph_def_from_tags(saved_model, tags)
    with sess.graph.as_default():
        saver = saver_mod.import_meta_graph(meta, import_scope=import_scope)
        await _restore_variables(sess, saver, export_dir)
        init_op = get_init_op(meta, import_scope, sess.graph)
    if init_op is not None:
        await sess.run(fetches=[init_op],
                       feed_dict=get_asset_tensors(export_dir, meta, import_scope))
    return meta
