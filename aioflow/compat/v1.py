"""TF 1.x's module layout over aioflow's objects: `import aioflow.compat.v1 as tf`.

Every name aioflow implements is at TF's path (tf.nn.relu, tf.train.Saver, tf.errors.
NotFoundError, tf.saved_model.loader.load, ...), so a TF 1.x program runs once its import
line is changed. Here `tf.Session` and `tf.InteractiveSession` are blocking (aioflow's
SyncSession, plus TF's default session: `with tf.Session() as sess` makes it and its
graph the defaults, so `t.eval()` works); the awaitable session stays `af.Session`.
`docs/api_coverage.md` lists, per module, which of TF 2.21's tf.compat.v1 names exist here.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import sys
import types

import aioflow as _af
from aioflow.client.sync_session import SyncSession as _SyncSession
from aioflow.compat import gfile as _gfile
from aioflow.framework import dtypes as _dtypes
from aioflow.framework import errors as _errors
from aioflow.framework import ops as _ops
from aioflow.lib import tf_record as _tf_record
from aioflow.proto import cluster_pb2 as _cluster_pb2
from aioflow.proto import tensorflow_server_pb2 as _tensorflow_server_pb2
from aioflow.train import monitored_session as _monitored


class Session(_SyncSession):
    """tf.compat.v1.Session: `run` blocks. `with tf.Session() as sess:` makes it the default
    session and its graph the default graph inside the block, then closes it (TF 1.x)."""

    def __init__(self, target: str = "", graph=None, config=None, **kwargs):
        super().__init__(target, graph, config, **kwargs)
        self._entered: list[contextlib.ExitStack] = []

    def as_default(self):
        """A context in which this session is the default (t.eval(), op.run())."""
        return _ops.default_session(self)

    def __enter__(self) -> Session:
        stack = contextlib.ExitStack()
        stack.enter_context(self.graph.as_default())
        stack.enter_context(self.as_default())
        self._entered.append(stack)
        return self

    def __exit__(self, *exc) -> None:
        self._entered.pop().close()
        self.close()


class InteractiveSession(Session):
    """tf.compat.v1.InteractiveSession: the default session (and its graph the default
    graph) from creation until close, for shells and notebooks."""

    def __init__(self, target: str = "", graph=None, config=None, **kwargs):
        super().__init__(target, graph, config, **kwargs)
        self._interactive = contextlib.ExitStack()
        self._interactive.enter_context(self.graph.as_default())
        self._interactive.enter_context(self.as_default())

    def close(self) -> None:
        stack, self._interactive = getattr(self, "_interactive", None), None
        if stack is not None:
            with contextlib.suppress(ValueError):  # closed from another context
                stack.close()
        super().close()


def _blocking(sess, coro):
    """Run `coro` (a coroutine of aioflow's awaitable API, given `sess`' awaitable session)
    to its end on the blocking session's loop."""
    return sess._call(coro)


def _awaitable(sess):
    """The awaitable Session behind a blocking one (or `sess` itself)."""
    return sess._session if isinstance(sess, _SyncSession) else sess


class Saver(_af.train.Saver):
    """tf.compat.v1.train.Saver: with a blocking session, save and restore block (TF 1.x);
    given an awaitable af.Session they return coroutines, as af.train.Saver's."""

    def save(self, sess, save_path, *args, **kwargs):
        coro = super().save(_awaitable(sess), save_path, *args, **kwargs)
        return _blocking(sess, coro) if isinstance(sess, _SyncSession) else coro

    def restore(self, sess, save_path):
        coro = super().restore(_awaitable(sess), save_path)
        return _blocking(sess, coro) if isinstance(sess, _SyncSession) else coro


def import_meta_graph(meta_graph_or_file, *args, **kwargs):
    """tf.compat.v1.train.import_meta_graph: the Saver it returns blocks with a blocking
    session, as this module's Saver."""
    saver = _af.train.import_meta_graph(meta_graph_or_file, *args, **kwargs)
    if saver is not None and type(saver) is _af.train.Saver:
        saver.__class__ = Saver
    return saver


def _load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """tf.compat.v1.saved_model.loader.load: blocks with a blocking session."""
    coro = _af.saved_model.loader.load(_awaitable(sess), tags, export_dir, import_scope,
                                       **saver_kwargs)
    return _blocking(sess, coro) if isinstance(sess, _SyncSession) else coro


class SavedModelBuilder(_af.saved_model.Builder):
    """tf.compat.v1.saved_model.Builder: add_meta_graph_and_variables and save block."""

    def add_meta_graph_and_variables(self, sess, tags, *args, **kwargs):
        coro = super().add_meta_graph_and_variables(_awaitable(sess), tags, *args, **kwargs)
        return _blocking(sess, coro) if isinstance(sess, _SyncSession) else coro

    def save(self, as_text=False) -> str:
        return asyncio.run(super().save(as_text))


def get_default_session():
    """The default session of this context (a `with tf.Session()` block), else None."""
    return _ops.get_default_session()


def disable_eager_execution() -> None:
    """A no-op: aioflow always builds graphs (TF 1.x programs call it first)."""


def disable_v2_behavior() -> None:
    """A no-op: aioflow's behaviour is TF 1.x's."""


def executing_eagerly() -> bool:
    return False


def _public(module) -> dict:
    """A module's public names: its __all__, else every name not starting with "_" that is
    not a module or a `from __future__` feature."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")
                 and not isinstance(getattr(module, n), types.ModuleType)
                 and type(getattr(module, n)).__name__ != "_Feature"]
    return {n: getattr(module, n) for n in names if hasattr(module, n)}


def _namespace(path: str, names: dict) -> types.ModuleType:
    """A module object `aioflow.compat.v1.<path>` holding `names`, importable by name."""
    module = types.ModuleType(f"{__name__}.{path}", f"tf.{path} of TF 1.x, over aioflow.")
    module.__dict__.update(names)
    module.__all__ = sorted(n for n in names if not isinstance(names[n], types.ModuleType))
    sys.modules[module.__name__] = module
    return module


def _optional(module_name: str):
    """An aioflow module that may not exist on this branch or install (None then)."""
    try:
        return importlib.import_module(module_name)
    except ImportError:
        return None


def _from(source, names) -> dict:
    """Those of `names` that `source` (a module, or a dict) has."""
    get = source.get if isinstance(source, dict) else (lambda n: getattr(source, n, None))
    return {n: get(n) for n in names if get(n) is not None}


# TF's top-level names that aioflow keeps in a submodule only (the same function in TF).
_TOP_LEVEL_FROM = {
    "math": ["segment_max", "segment_mean", "segment_min", "segment_prod", "segment_sum",
             "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
             "unsorted_segment_sum", "sparse_segment_mean", "sparse_segment_sqrt_n",
             "sparse_segment_sum"],
    "strings": ["as_string", "reduce_join", "regex_replace", "substr", "decode_base64",
                "encode_base64"],
    "initializers": ["glorot_normal_initializer", "glorot_uniform_initializer",
                     "orthogonal_initializer", "random_normal_initializer",
                     "random_uniform_initializer", "truncated_normal_initializer",
                     "variance_scaling_initializer"],
    "dtypes": ["QUANTIZED_DTYPES"],
}
# TF 1.x modules that gather names aioflow has at the top level (TF's names for them).
_GATHERED = {
    "io": ["FixedLenFeature", "FixedLenSequenceFeature", "PaddingFIFOQueue", "PriorityQueue",
           "QueueBase", "RandomShuffleQueue", "SparseFeature", "VarLenFeature",
           "decode_base64", "decode_compressed", "decode_csv", "decode_json_example",
           "decode_raw", "encode_base64", "matching_files", "parse_example",
           "parse_single_example", "parse_tensor", "read_file", "serialize_tensor",
           "write_file", "write_graph"],
    "debugging": ["Assert", "assert_equal", "assert_greater", "assert_greater_equal",
                  "assert_less", "assert_less_equal", "assert_non_negative", "assert_rank",
                  "assert_rank_in", "assert_type",
                  "check_numerics", "is_finite", "is_inf", "is_nan",
                  "is_non_decreasing", "is_numeric_tensor", "is_strictly_increasing"],
    "graph_util": ["import_graph_def"],
    "manip": ["batch_to_space_nd", "gather_nd", "reshape", "reverse", "roll", "scatter_nd",
              "space_to_batch_nd", "tile"],
}
_IO_GFILE = {"GFile": _gfile.GFile, "copy": _gfile.Copy, "exists": _gfile.Exists,
             "glob": _gfile.Glob, "isdir": _gfile.IsDirectory, "listdir": _gfile.ListDirectory,
             "makedirs": _gfile.MakeDirs, "mkdir": _gfile.MkDir, "remove": _gfile.Remove,
             "rename": _gfile.Rename, "rmtree": _gfile.DeleteRecursively, "walk": _gfile.Walk}


_BLOCKING_TRAINING_SESSIONS = {  # TF 1's training sessions block
    "MonitoredSession": _monitored.BlockingMonitoredSession,
    "SingularMonitoredSession": _monitored.BlockingSingularMonitoredSession,
    "MonitoredTrainingSession": _monitored.BlockingMonitoredTrainingSession,
}


def _build() -> dict:
    """The tf namespace: aioflow's top-level names, its modules at TF's paths, and the
    blocking sessions."""
    top = dict(_public(_af))
    for module_name, names in _TOP_LEVEL_FROM.items():
        source = _dtypes if module_name == "dtypes" else getattr(_af, module_name)
        top.update(_from(source, names))
    for name in ("Session", "SyncSession", "Timeline", "py_func", "async_py_func"):
        top.pop(name, None)
    top.update(py_func=_af.py_func, async_py_func=_af.async_py_func, Session=Session,
               InteractiveSession=InteractiveSession, get_default_session=get_default_session,
               disable_eager_execution=disable_eager_execution,
               disable_v2_behavior=disable_v2_behavior, executing_eagerly=executing_eagerly,
               OpError=_errors.OpError)
    for path in ("nn", "math", "strings", "image", "sparse", "random", "bitwise",
                 "initializers", "lookup", "queue", "data", "layers", "losses",
                 "metrics", "sets"):
        top[path] = _namespace(path, _public(getattr(_af, path)))
    top["linalg"] = _namespace("linalg", {**_public(_af.linalg), "transpose": _af.matrix_transpose,
                                          "matrix_transpose": _af.matrix_transpose})
    top["train"] = _namespace("train", {
        **_public(_af.train), "Saver": Saver, "Server": _af.distributed.Server,
        "ClusterDef": _cluster_pb2.ClusterDef, "JobDef": _cluster_pb2.JobDef,
        "ServerDef": _tensorflow_server_pb2.ServerDef,
        "import_meta_graph": import_meta_graph, "summary_iterator": _af.summary.summary_iterator,
        **_BLOCKING_TRAINING_SESSIONS})
    top["distribute"] = _namespace("distribute", {  # (clusters: issue 27)
        "Server": _af.distributed.Server,
        "cluster_resolver": _namespace("distribute.cluster_resolver", {
            "TFConfigClusterResolver": _af.distributed.TFConfigClusterResolver})})
    dtype_names = dict(_public(_dtypes))
    dtype_names.update({n: v for n, v in vars(_dtypes).items() if isinstance(v, _dtypes.DType)
                        and not n.startswith("_") and not n.endswith("_ref")})
    dtype_names.update(_from(_af, ["cast", "saturate_cast", "complex"]))
    dtype_names.update(_from(_af.strings, ["as_string"]))
    top["dtypes"] = _namespace("dtypes", dtype_names)
    top["errors"] = _namespace("errors", _public(_errors))
    blocking = {"load": _load, "Builder": SavedModelBuilder,
                "SavedModelBuilder": SavedModelBuilder}
    saved_model = {**_public(_af.saved_model), **blocking}
    for sub in ("builder", "constants", "loader", "signature_constants", "signature_def_utils",
                "tag_constants", "utils"):
        names = _public(getattr(_af.saved_model, sub))
        if sub == "builder":
            names["SavedModelBuilder"] = SavedModelBuilder
        saved_model[sub] = _namespace(f"saved_model.{sub}",
                                      {**names, **_from(blocking, list(names))})
    top["saved_model"] = _namespace("saved_model", saved_model)
    for path, names in _GATHERED.items():
        top[path] = _namespace(path, _from(top, names))
    top["gfile"] = _namespace("gfile", _public(_gfile))
    top["io"].gfile = _namespace("io.gfile", _IO_GFILE)
    for name, value in _public(_tf_record).items():  # tf.io's and python_io's TFRecords
        setattr(top["io"], name, value)
    top["python_io"] = _namespace("python_io", _public(_tf_record))
    summary = _optional("aioflow.summary")  # TensorBoard event files, where built
    if summary is not None:
        top["summary"] = _namespace("summary", _public(summary))
    return top


globals().update(_build())
