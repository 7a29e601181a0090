"""Datasets whose elements come from Python: Dataset.from_generator (TF's: a
GeneratorDataset whose functions call py_func: the generator runs on the pool, one
`next()` per element) and aioflow's Dataset.from_async_generator (the same
GeneratorDataset whose functions call async_py_func: an async iterator, e.g. a
websocket, an asyncio.Queue, a message-bus consumer, is awaited on the event loop
without a thread).

Each iterator of the dataset (each initialization, each epoch of a repeat) calls the
generator function anew; its values are converted to the signature's dtypes and checked
against its shapes (InvalidArgumentError otherwise, as TF's)."""

from __future__ import annotations

import itertools
import threading

import numpy as np

from aioflow.framework import dtypes, errors, ops, tensor_shape
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.tensor_spec import TensorSpec
from aioflow.ops import script_ops

from . import structure
from .func_graph import trace

_ids = itertools.count(1)


class _Generators:
    """The live Python iterators of one dataset, by id (TF's _GeneratorState)."""

    def __init__(self, make):
        self.make = make
        self.live: dict[int, object] = {}
        self.lock = threading.Lock()

    def start(self, *args) -> np.int64:
        it = self.make(*args)
        with self.lock:
            key = next(_ids)
            self.live[key] = it
        return np.int64(key)

    def get(self, key):
        with self.lock:
            return self.live[int(key)]

    def drop(self, key) -> np.int64:
        with self.lock:
            self.live.pop(int(key), None)
        return np.int64(0)


def _signature(output_types, output_shapes, output_signature):
    if output_signature is not None:
        if output_types is not None or output_shapes is not None:
            raise TypeError("The `output_types` and `output_shapes` arguments can not be "
                            "used together with the `output_signature` argument.")
        return structure.map_structure(
            lambda s: s if isinstance(s, TensorSpec) else TensorSpec(None, s),
            output_signature)
    if output_types is None:
        raise TypeError("The `output_types` argument can not be None.")
    if output_shapes is None:
        output_shapes = structure.map_structure(lambda _: None, output_types)
    flat_types = structure.flatten(output_types)
    flat_shapes = _flatten_like(output_types, output_shapes)
    return structure.pack_sequence_as(output_types, [
        TensorSpec(tensor_shape.TensorShape(s), t)
        for t, s in zip(flat_types, flat_shapes, strict=True)])


def _flatten_like(types, shapes) -> list:
    if isinstance(types, dict):
        return [x for k in sorted(types) for x in _flatten_like(types[k], shapes[k])]
    if isinstance(types, tuple):
        return [x for t, s in zip(types, shapes, strict=True) for x in _flatten_like(t, s)]
    return [shapes]


def convert_element(value, spec) -> list:
    """A generator's value as the flat arrays of `spec` (TF's messages on a mismatch)."""
    try:
        flat = structure.flatten(value) if structure.is_nested(spec) else [value]
        specs = structure.flatten(spec)
        if len(flat) != len(specs):
            raise ValueError
    except (ValueError, TypeError, KeyError) as e:
        raise errors.InvalidArgumentError(
            None, None, f"`generator` yielded an element that did not match the expected "
                        f"structure. The expected structure was {spec}, but the yielded "
                        f"element was {value}.") from e
    out = []
    for v, s in zip(flat, specs, strict=True):
        np_type = object if s.dtype == dtypes.string else s.dtype.as_numpy_dtype
        try:
            arr = np.asarray(v, dtype=np_type)
        except (ValueError, TypeError) as e:
            raise errors.InvalidArgumentError(
                None, None, f"TypeError: `generator` yielded an element that could not be "
                            f"converted to the expected type. The expected type was "
                            f"{s.dtype.name}, but the yielded element was {v}.") from e
        if s.dtype == dtypes.string:
            arr = np.vectorize(lambda x: x.encode() if isinstance(x, str) else x,
                               otypes=[object])(arr) if arr.size else arr
        if not s.shape.is_compatible_with(tensor_shape.TensorShape(arr.shape)):
            raise errors.InvalidArgumentError(
                None, None, f"`generator` yielded an element of shape {arr.shape} where an "
                            f"element of shape {_shape_text(s.shape)} was expected.")
        out.append(arr)
    return out


def generator_dataset(init, next_, finalize, spec, init_args) -> ops.Tensor:
    """A GeneratorDataset whose three functions are `init(*init_args) -> id`,
    `next_(id) -> flat element`, `finalize(id) -> int64` (ops built by the callers)."""
    flat_specs = structure.flatten(spec)
    int64 = [TensorSpec([], dtypes.int64)]

    def call_init(fn, args):
        return [fn(*args)], None

    def call_next(fn, args):
        outs = fn(args[0])
        for t, s in zip(outs, flat_specs, strict=True):
            t.set_shape(s.shape)
        return list(outs), None

    def call_finalize(fn, args):
        return [fn(args[0])], None

    from_graph = ops.get_default_graph()
    init_specs = [TensorSpec(t.shape, t.dtype) for t in init_args]
    init_f, _, init_cap, _ = trace("Dataset_from_generator_get_iterator_id_fn", init,
                                   init_specs, call_init, from_graph)
    next_f, _, next_cap, _ = trace("Dataset_from_generator_generator_next_fn", next_,
                                   int64, call_next, from_graph)
    fin_f, _, fin_cap, _ = trace("Dataset_from_generator_finalize_fn", finalize, int64,
                                 call_finalize, from_graph)
    variant = apply_op("GeneratorDataset", init_func_other_args=list(init_args) + init_cap,
                       next_func_other_args=next_cap, finalize_func_other_args=fin_cap,
                       init_func=init_f, next_func=next_f, finalize_func=fin_f,
                       output_types=structure.flat_types(spec),
                       output_shapes=structure.flat_shapes(spec), metadata="")
    return variant


def from_generator(generator, output_types=None, output_shapes=None, args=None,
                   output_signature=None):
    """(variant, spec) of tf.data.Dataset.from_generator: `generator(*args)` is called
    per iterator; its next() runs in a py_func (on the pool)."""
    if not callable(generator):
        raise TypeError("`generator` must be a Python callable.")
    spec = _signature(output_types, output_shapes, output_signature)
    flat_types = structure.flat_types(spec)
    state = _Generators(lambda *a: iter(generator(*a)))
    init_args = [ops.convert_to_tensor(a) for a in (args or [])]

    def next_value(key):
        return convert_element(next(state.get(key)), spec)

    def init(*a):
        return script_ops.py_func(state.start, list(a), dtypes.int64)

    def next_(key):
        out = script_ops.py_func(next_value, [key], flat_types)
        return out if isinstance(out, list) else [out]

    def finalize(key):
        return script_ops.py_func(state.drop, [key], dtypes.int64)

    return generator_dataset(init, next_, finalize, spec, init_args), spec


def from_async_generator(agen_fn, output_signature, args=None):
    """(variant, spec) of af.data.Dataset.from_async_generator: `agen_fn(*args)` returns
    an async iterator, made per iterator of the dataset and awaited on the event loop
    (async_py_func: no thread); its end is the dataset's end."""
    if not callable(agen_fn):
        raise TypeError("`agen_fn` must be a callable returning an async iterator.")
    spec = _signature(None, None, output_signature)
    flat_types = structure.flat_types(spec)
    state = _Generators(lambda *a: agen_fn(*a).__aiter__())
    init_args = [ops.convert_to_tensor(a) for a in (args or [])]

    async def start(*a):
        return state.start(*a)

    async def next_value(key):
        try:
            value = await state.get(key).__anext__()
        except StopAsyncIteration:
            raise errors.OutOfRangeError(None, None, "End of sequence") from None
        return convert_element(value, spec)

    async def drop(key):
        agen = state.get(key)
        state.drop(key)
        aclose = getattr(agen, "aclose", None)
        if aclose is not None:
            await aclose()
        return np.int64(0)

    def init(*a):
        return script_ops.async_py_func(start, list(a), dtypes.int64)

    def next_(key):
        out = script_ops.async_py_func(next_value, [key], flat_types)
        return out if isinstance(out, list) else [out]

    def finalize(key):
        return script_ops.async_py_func(drop, [key], dtypes.int64)

    return generator_dataset(init, next_, finalize, spec, init_args), spec


def _shape_text(shape) -> str:
    return str(tuple(shape.as_list())) if shape.ndims is not None else "<unknown>"
