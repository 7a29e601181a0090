"""The loader interface: a version directory becomes a `Servable`, a set of named
`Signature`s that each take arrays by input key and give arrays by output key.

Formats behind the one interface (`load_servable` picks by what the directory holds):
- a v1 SavedModel (saved_model.pb/.pbtxt, graph-mode): af.saved_model.loader.load into
  a Session, its SignatureDefs served as they are;
- a TF 2 SavedModel (its graph calls functions): the object `await
  af.saved_model.load(dir, tags=..., config=...)` returns, whose `.signatures[name]` are
  async callables taking keyword arrays and returning dicts of arrays, their specs in
  `structured_input_signature`/`structured_outputs` (used when aioflow's TF 2 loader is
  present; its `close()` releases it);
- a frozen GraphDef (a .pb or .pbtxt file) with its signature given by the --inputs and
  --outputs flags (KEY=TENSOR or TENSOR, KEY then the op name).

Everything that blocks (file reads, graph import, building executors) runs on a thread
with its own event loop, so the serving loop never waits on a load; the executors of
every signature are built there, so the first request runs as fast as the next.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from dataclasses import dataclass, field

import numpy as np

from aioflow.client import kernel_compiles
from aioflow.framework import dtypes, errors
from aioflow.proto import config_pb2, meta_graph_pb2, tensor_shape_pb2

#: The signature served when a request names none (TF's DEFAULT_SERVING_SIGNATURE_DEF_KEY).
DEFAULT_SIGNATURE = "serving_default"
PREDICT_METHOD = "tensorflow/serving/predict"


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a signature: its key, graph tensor name, dtype, and dims
    (a tuple with None for unknown sizes; None for unknown rank)."""

    key: str
    name: str
    dtype: dtypes.DType
    dims: tuple | None

    def to_tensor_info(self) -> meta_graph_pb2.TensorInfo:
        shape = tensor_shape_pb2.TensorShapeProto()
        if self.dims is None:
            shape.unknown_rank = True
        else:
            for d in self.dims:
                shape.dim.add(size=-1 if d is None else d)
        return meta_graph_pb2.TensorInfo(name=self.name, dtype=self.dtype.as_datatype_enum,
                                         tensor_shape=shape)


@dataclass
class Signature:
    """A named computation of a servable; `run` is the format's."""

    name: str
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec]
    method_name: str = PREDICT_METHOD

    async def run(self, inputs: dict[str, np.ndarray], output_keys: tuple[str, ...],
                  timeout_ms: int = 0) -> dict[str, np.ndarray]:
        """The outputs `output_keys` for `inputs` (every input key, arrays of the
        inputs' dtypes); `timeout_ms` > 0 bounds the run (DeadlineExceededError)."""
        raise NotImplementedError

    def check_shapes(self, inputs: dict[str, np.ndarray]) -> None:
        """InvalidArgumentError for an input of a shape the signature does not admit,
        when `run` would not say it in terms of the request itself (a graph's feed check
        does: "Cannot feed value of shape ...")."""

    def to_signature_def(self) -> meta_graph_pb2.SignatureDef:
        sig = meta_graph_pb2.SignatureDef(method_name=self.method_name)
        for key, spec in self.inputs.items():
            sig.inputs[key].CopyFrom(spec.to_tensor_info())
        for key, spec in self.outputs.items():
            sig.outputs[key].CopyFrom(spec.to_tensor_info())
        return sig


@dataclass
class Servable:
    """A loaded model version: its signatures and how to release what it holds."""

    signatures: dict[str, Signature]
    closers: list = field(default_factory=list)

    async def close(self) -> None:
        for close in self.closers:
            await close()


class GraphSignature(Signature):
    """A signature over a Session's graph: feeds by tensor name, fetches by name."""

    def __init__(self, name, inputs, outputs, method_name, session):
        super().__init__(name, inputs, outputs, method_name or PREDICT_METHOD)
        self._session = session
        self._feed_names = [spec.name for spec in inputs.values()]
        self._all_keys = tuple(outputs)
        self._call_all = None

    def build(self) -> None:
        """Build the executors of the whole signature (on the loading thread)."""
        fetches = [self.outputs[k].name for k in self._all_keys]
        self._call_all = self._session.make_callable(fetches, self._feed_names,
                                                     accept_options=True)

    async def run(self, inputs, output_keys, timeout_ms=0):
        options = config_pb2.RunOptions(timeout_in_ms=timeout_ms) if timeout_ms > 0 else None
        values = [inputs[k] for k in self.inputs]
        if output_keys == self._all_keys and self._call_all is not None:
            results = await self._call_all(*values, options=options)
        else:
            feeds = dict(zip(self._feed_names, values, strict=True))
            results = await self._session.run([self.outputs[k].name for k in output_keys],
                                              feed_dict=feeds, options=options)
        return dict(zip(output_keys, results, strict=True))


def _spec_from_info(key: str, info, graph) -> TensorSpec:
    """A TensorSpec from a SignatureDef's TensorInfo (dense tensors only)."""
    if info.WhichOneof("encoding") != "name":
        raise errors.UnimplementedError(
            None, None, f"signature tensor {key!r} is {info.WhichOneof('encoding')}: only "
                        "dense tensors are served")
    tensor = graph.get_tensor_by_name(info.name)
    shape = info.tensor_shape if info.HasField("tensor_shape") else None
    if shape is None or shape.unknown_rank:
        dims = None if tensor.shape.rank is None else tuple(tensor.shape.as_list())
    else:
        dims = tuple(None if d.size < 0 else d.size for d in shape.dim)
    dtype = dtypes.as_dtype(info.dtype) if info.dtype else tensor.dtype
    return TensorSpec(key, info.name, dtype, dims)


#: How long a version's load waits for the kernels its build compiles.
KERNEL_COMPILE_TIMEOUT_S = 120.0


def graph_servable(session, signature_defs: dict) -> Servable:
    """A Servable of `session`'s graph with these SignatureDefs; builds their executors
    (blocking: call it on a loading thread, or before serving)."""
    graph = session.graph
    signatures = {}
    for name, sig in signature_defs.items():
        if name.startswith("__"):  # __saved_model_init_op and the like are not served
            continue
        inputs = {k: _spec_from_info(k, sig.inputs[k], graph) for k in sorted(sig.inputs)}
        outputs = {k: _spec_from_info(k, sig.outputs[k], graph) for k in sorted(sig.outputs)}
        signature = GraphSignature(name, inputs, outputs, sig.method_name, session)
        signature.build()
        signatures[name] = signature
    # The kernels the builds compile (numba's loops: the fused ops' epilogue) are ready
    # before the version serves: its first request never compiles or opens a cache file.
    kernel_compiles.wait_for_started_compiles(KERNEL_COMPILE_TIMEOUT_S)
    return Servable(signatures, [session.close])


def parse_tensor_flags(items: list[str] | None) -> list[tuple[str, str]]:
    """--inputs/--outputs values (comma-separated, repeatable) -> [(key, tensor name)]:
    `KEY=TENSOR` or `TENSOR` (the key is then its op name); `:0` is added when absent."""
    pairs = []
    for item in items or []:
        for part in filter(None, (p.strip() for p in item.split(","))):
            key, _, name = part.rpartition("=")
            name = name if ":" in name else f"{name}:0"
            pairs.append((key or name.split(":")[0], name))
    return pairs


def frozen_signature_def(graph, inputs, outputs) -> meta_graph_pb2.SignatureDef:
    """The predict SignatureDef of a frozen graph from (key, tensor name) pairs."""
    if not inputs or not outputs:
        raise ValueError("a frozen GraphDef needs its signature: give --inputs and --outputs "
                         "(KEY=TENSOR or TENSOR, comma-separated)")
    sig = meta_graph_pb2.SignatureDef(method_name=PREDICT_METHOD)
    for target, pairs in ((sig.inputs, inputs), (sig.outputs, outputs)):
        for key, name in pairs:
            try:
                tensor = graph.get_tensor_by_name(name)
            except (KeyError, ValueError) as e:
                raise ValueError(f"signature tensor {key}={name}: {e}") from None
            target[key].CopyFrom(TensorSpec(key, name, tensor.dtype, None if tensor.shape.rank
                                            is None else tuple(tensor.shape.as_list())
                                            ).to_tensor_info())
    return sig


@dataclass(frozen=True)
class LoadOptions:
    """How a version directory is loaded: the SavedModel tags, and a frozen graph's file
    name (any single .pb/.pbtxt when empty) and signature flags."""

    tags: tuple[str, ...] = ("serve",)
    graph_file: str = ""
    inputs: tuple[tuple[str, str], ...] = ()
    outputs: tuple[tuple[str, str], ...] = ()
    session_config: object = None


def _graph_file(path: str, options: LoadOptions) -> str:
    if options.graph_file:
        return os.path.join(path, options.graph_file)
    found = sorted(n for n in os.listdir(path) if n.endswith((".pb", ".pbtxt")))
    if len(found) != 1:
        raise ValueError(f"{path}: expected a SavedModel or exactly one GraphDef file (.pb, "
                         f".pbtxt), found {found or 'none'}; name one with --graph_file")
    return os.path.join(path, found[0])


def read_graph_def(path: str):
    """A GraphDef file: protobuf text format for .pbtxt/.txt, binary otherwise."""
    from aioflow.framework.importer import parse_graph_def
    from aioflow.proto import graph_pb2

    with open(path, "rb") as f:
        data = f.read()
    if path.endswith((".pbtxt", ".txt")):
        from google.protobuf import text_format

        return text_format.Parse(data.decode(), graph_pb2.GraphDef())
    return parse_graph_def(data)


async def _load_frozen(path: str, options: LoadOptions) -> Servable:
    import aioflow as af

    graph_def = read_graph_def(path if os.path.isfile(path) else _graph_file(path, options))
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(graph_def, name="")
    sig = frozen_signature_def(graph, list(options.inputs), list(options.outputs))
    session = af.Session(graph=graph, config=options.session_config)
    return graph_servable(session, {DEFAULT_SIGNATURE: sig})


def _tf2_loader():
    """aioflow's TF 2 SavedModel loader (`load(export_dir)`), when there is one."""
    from aioflow import saved_model

    load = getattr(saved_model, "load", None)
    try:
        params = list(inspect.signature(load).parameters) if load else []
    except (TypeError, ValueError):
        return None
    return load if params and params[0] in ("export_dir", "path") else None


def _calls_functions(meta) -> bool:
    """Whether a MetaGraphDef's graph calls library functions (TF 2's tf.saved_model.save
    writes its computation so: StatefulPartitionedCall nodes)."""
    graph_def = meta.graph_def
    functions = {f.signature.name for f in graph_def.library.function}
    return any(n.op in ("PartitionedCall", "StatefulPartitionedCall") or n.op in functions
               for n in graph_def.node)


async def _load_saved_model(path: str, options: LoadOptions) -> Servable:
    import aioflow as af
    from aioflow.saved_model import loader

    saved = loader.parse_saved_model(path)
    meta = loader.get_meta_graph_def_from_tags(saved, list(options.tags))
    if _calls_functions(meta):
        load_tf2 = _tf2_loader()
        if load_tf2 is None:
            raise NotImplementedError(
                f"The SavedModel at {path} calls graph functions, as those written by TF "
                "2's tf.saved_model.save do, and this aioflow has no TF 2 SavedModel loader "
                "(af.saved_model.load(export_dir)). Export it with "
                "tf.compat.v1.saved_model.Builder or freeze it to a GraphDef.")
        params = inspect.signature(load_tf2).parameters
        kwargs = {}
        if "tags" in params:
            kwargs["tags"] = list(options.tags)
        if "config" in params and options.session_config is not None:
            kwargs["config"] = options.session_config
        obj = load_tf2(path, **kwargs)
        if inspect.isawaitable(obj):
            obj = await obj
        servable = function_servable(obj.signatures)
        if hasattr(obj, "close"):  # the model's session
            servable.closers.append(obj.close)
        return servable
    session = af.Session(graph=af.Graph(), config=options.session_config)
    meta = await loader.load(session, list(options.tags), path)
    return graph_servable(session, dict(meta.signature_def))


async def _load(path: str, options: LoadOptions) -> Servable:
    from aioflow.saved_model import loader

    if os.path.isdir(path) and loader.maybe_saved_model_directory(path):
        return await _load_saved_model(path, options)
    return await _load_frozen(path, options)


async def load_servable(path: str, options: LoadOptions = LoadOptions()) -> Servable:
    """Load the model version at `path` on a loading thread (its own event loop)."""
    return await asyncio.to_thread(asyncio.run, _load(os.fspath(path), options))


# -- TF 2 SavedModels: signatures as async callables ------------------------------------

def _spec_of(key: str, spec) -> TensorSpec:
    """A TensorSpec from a TF 2-style TensorSpec-like object (dtype, shape, name)."""
    dtype = dtypes.as_dtype(getattr(spec, "dtype", dtypes.float32))
    shape = getattr(spec, "shape", None)
    if isinstance(shape, (tuple, list)):
        dims = tuple(shape)
    elif shape is None or getattr(shape, "rank", None) is None:
        dims = None  # unknown rank
    else:
        dims = tuple(shape.as_list())
    return TensorSpec(key, getattr(spec, "name", None) or key, dtype, dims)


def _dims_text(dims) -> str:
    """[2,3] / [?,3]: a shape as the error messages write it."""
    return "[" + ",".join("?" if d is None or d < 0 else str(d) for d in dims) + "]"


class FunctionSignature(Signature):
    """A TF 2 signature function: `await fn(**inputs)` -> {output key: array}."""

    def __init__(self, name: str, fn):
        args_kwargs = getattr(fn, "structured_input_signature", ((), {}))
        inputs = {k: _spec_of(k, s) for k, s in sorted(args_kwargs[1].items())}
        outputs = {k: _spec_of(k, s)
                   for k, s in sorted(getattr(fn, "structured_outputs", {}).items())}
        super().__init__(name, inputs, outputs, PREDICT_METHOD)
        self._fn = fn

    def check_shapes(self, inputs: dict[str, np.ndarray]) -> None:
        """A shape the function's TensorSpec does not admit, said of the request (the
        function's own TypeError quotes the binding, the arrays and the function)."""
        for key, spec in self.inputs.items():
            dims = spec.dims
            shape = inputs[key].shape
            if dims is not None and (len(shape) != len(dims) or any(
                    d is not None and d >= 0 and d != n
                    for d, n in zip(dims, shape, strict=True))):
                raise errors.InvalidArgumentError(
                    None, None, f"input {key!r} has shape {_dims_text(shape)}, which the "
                                f"signature's {_dims_text(dims)} does not admit")

    async def run(self, inputs, output_keys, timeout_ms=0):
        call = self._fn(**inputs)
        try:
            result = await (asyncio.wait_for(call, timeout_ms / 1000) if timeout_ms > 0
                            else call)
        except TimeoutError:
            raise errors.DeadlineExceededError(None, None, "Deadline Exceeded") from None
        return {k: np.asarray(result[k]) for k in output_keys}


def function_servable(signatures) -> Servable:
    """A Servable of TF 2 signature functions ({name: async callable})."""
    return Servable({name: FunctionSignature(name, fn) for name, fn in signatures.items()})
