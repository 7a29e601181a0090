"""The `checkpoint` state file of a checkpoint directory and finding checkpoints in it, as
tensorflow/python/checkpoint/checkpoint_management.py (tf.compat.v1.train's
latest_checkpoint, get_checkpoint_state, update_checkpoint_state, checkpoint_exists,
remove_checkpoint).

The state file is a CheckpointState in protobuf text format, written atomically (a
temporary file renamed into place). These are plain blocking functions, as TF's: from a
coroutine, call them through `asyncio.to_thread` when the file system may be slow.
"""

from __future__ import annotations

import glob
import logging
import os
import tempfile

from google.protobuf import text_format

from aioflow.lib import tensor_bundle
from aioflow.proto.checkpoint_state_pb2 import CheckpointState

_log = logging.getLogger(__name__)

__all__ = [
    "CheckpointState", "checkpoint_exists", "generate_checkpoint_state_proto",
    "get_checkpoint_state", "latest_checkpoint", "remove_checkpoint",
    "update_checkpoint_state", "update_checkpoint_state_internal",
]


def _state_filename(checkpoint_dir: str, latest_filename: str | None) -> str:
    return os.path.join(checkpoint_dir, latest_filename or "checkpoint")


def generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                    all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None,
                                    last_preserved_timestamp=None) -> CheckpointState:
    """A CheckpointState whose last path is model_checkpoint_path (added when missing);
    with a relative save_dir, relative paths are made relative to it."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if all_model_checkpoint_timestamps and (
            len(all_model_checkpoint_timestamps) != len(paths)):
        raise ValueError(
            f"Checkpoint timestamps, if provided, must match checkpoint paths (got "
            f"paths {paths} and timestamps {all_model_checkpoint_timestamps})")
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    return CheckpointState(model_checkpoint_path=model_checkpoint_path,
                           all_model_checkpoint_paths=paths,
                           all_model_checkpoint_timestamps=all_model_checkpoint_timestamps,
                           last_preserved_timestamp=last_preserved_timestamp)


def update_checkpoint_state(save_dir, model_checkpoint_path,
                            all_model_checkpoint_paths=None, latest_filename=None,
                            all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None) -> None:
    """Write the `checkpoint` file of save_dir (absolute paths kept as given)."""
    update_checkpoint_state_internal(
        save_dir, model_checkpoint_path, all_model_checkpoint_paths, latest_filename,
        save_relative_paths=False,
        all_model_checkpoint_timestamps=all_model_checkpoint_timestamps,
        last_preserved_timestamp=last_preserved_timestamp)


def update_checkpoint_state_internal(save_dir, model_checkpoint_path,
                                     all_model_checkpoint_paths=None, latest_filename=None,
                                     save_relative_paths=False,
                                     all_model_checkpoint_timestamps=None,
                                     last_preserved_timestamp=None) -> None:
    """update_checkpoint_state with save_relative_paths (paths stored relative to
    save_dir, as a Saver with save_relative_paths=True writes them)."""
    state_file = _state_filename(save_dir, latest_filename)
    paths = list(all_model_checkpoint_paths or [])
    if save_relative_paths:
        model_checkpoint_path = _relative(model_checkpoint_path, save_dir)
        paths = [_relative(p, save_dir) for p in paths]
    ckpt = generate_checkpoint_state_proto(
        save_dir, model_checkpoint_path, paths,
        all_model_checkpoint_timestamps=all_model_checkpoint_timestamps,
        last_preserved_timestamp=last_preserved_timestamp)
    if state_file == ckpt.model_checkpoint_path:
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for "
                           "checkpoint state.  Please use a different save path.")
    atomic_write(state_file, text_format.MessageToString(ckpt))


def _relative(path: str, save_dir: str) -> str:
    return os.path.relpath(path, save_dir) if os.path.isabs(path) else path


def atomic_write(path: str, contents: str) -> None:
    """Write a text file through a temporary file renamed into place."""
    dirname = os.path.dirname(path) or "."
    os.makedirs(dirname, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp", dir=dirname)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(contents)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def get_checkpoint_state(checkpoint_dir, latest_filename=None) -> CheckpointState | None:
    """The directory's CheckpointState (relative paths joined to checkpoint_dir), or None
    when there is no readable state file. ValueError when it names no checkpoint."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    state_file = _state_filename(checkpoint_dir, latest_filename)
    try:
        if not os.path.exists(state_file):
            return None
        with open(state_file, encoding="utf-8") as f:
            ckpt = text_format.Merge(f.read(), CheckpointState())
    except (OSError, UnicodeDecodeError, text_format.ParseError) as e:
        _log.warning("%s: %s", type(e).__name__, e)
        _log.warning("%s: Checkpoint ignored", state_file)
        return None
    if not ckpt.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    if not os.path.isabs(ckpt.model_checkpoint_path):
        ckpt.model_checkpoint_path = os.path.join(checkpoint_dir, ckpt.model_checkpoint_path)
    for i, p in enumerate(ckpt.all_model_checkpoint_paths):
        if not os.path.isabs(p):
            ckpt.all_model_checkpoint_paths[i] = os.path.join(checkpoint_dir, p)
    return ckpt


def checkpoint_exists(checkpoint_prefix) -> bool:
    """Whether a V2 checkpoint (its .index) or a V1 file matches the prefix (a glob)."""
    prefix = os.fspath(checkpoint_prefix)
    return bool(glob.glob(tensor_bundle.meta_filename(prefix)) or glob.glob(prefix))


def latest_checkpoint(checkpoint_dir, latest_filename=None) -> str | None:
    """The prefix of the newest checkpoint the directory's state file names, if its files
    exist; else None."""
    ckpt = get_checkpoint_state(checkpoint_dir, latest_filename)
    if ckpt and ckpt.model_checkpoint_path:
        if checkpoint_exists(ckpt.model_checkpoint_path):
            return ckpt.model_checkpoint_path
        _log.error("Couldn't match files for checkpoint %s", ckpt.model_checkpoint_path)
    return None


def remove_checkpoint(checkpoint_prefix, meta_graph_suffix="meta") -> None:
    """Delete a V2 checkpoint's files (.index, data shards, .meta), ignoring missing ones."""
    prefix = os.fspath(checkpoint_prefix)
    paths = [tensor_bundle.meta_filename(prefix), f"{prefix}.{meta_graph_suffix}"]
    paths += glob.glob(glob.escape(prefix) + ".data-?????-of-?????")
    for path in paths:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
