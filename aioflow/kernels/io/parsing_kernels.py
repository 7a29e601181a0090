"""Kernels of the tf.Example parsing ops: ParseExampleV2 (tf.io.parse_example), and the
older ParseExample and ParseSingleExample, with TF's semantics and error messages.

Each serialized Example is read with the protobuf runtime (aioflow/proto/example.proto,
TF's wire format). A dense feature takes its values (exactly its shape's element count;
for a variable-length one, whole rows of it, padded to the longest example with the
default), or its default when the example lacks it (an empty default: the feature is
required); a feature with no list set counts as missing. A sparse (VarLen) feature's
values are concatenated with their [example, position] indices; a ragged one's with row
splits. Errors name the example (its name when `names` is given, else "<unknown>"),
the key and the example's index, as TF's fast parser words them."""

from __future__ import annotations

import math
import operator

import numpy as np
from google.protobuf.message import DecodeError

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.io import parsing_jit
from aioflow.proto import example_pb2

_KIND = {dtypes.float32: "float_list", dtypes.int64: "int64_list", dtypes.string: "bytes_list"}
_KIND_NAME = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}
_NUMPY = {dtypes.float32: np.float32, dtypes.int64: np.int64, dtypes.string: object}
_FAST_KIND = {dtypes.float32: parsing_jit.FLOAT, dtypes.int64: parsing_jit.INT64,
              dtypes.string: parsing_jit.BYTES}
_SCANNED = object()  # _lane_parse's answer when the compiled scan did not answer
#: Batches of more examples than this parse on the thread pool (about 6 µs an example by
#: the protobuf runtime; under 1 µs by the compiled scan, once it is compiled).
POOL_ABOVE = 32
POOL_ABOVE_SCANNED = 512


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _array(values: list, dtype) -> np.ndarray:
    if dtype == dtypes.string:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return np.array(values, dtype=_NUMPY[dtype])


def _shape_text(shape) -> str:
    """A dense shape as TF prints it; a variable first dimension as "?"."""
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


class _Dense:
    """One dense feature: its key, type, shape (first dim None: variable length) and
    default (an empty default: required)."""

    def __init__(self, key: str, dtype, shape: list, default: np.ndarray):
        self.key, self.dtype, self.shape = key, dtype, shape
        self.kind = _KIND[dtype]
        self.variable = bool(shape) and shape[0] is None
        self.stride = math.prod(shape[1:]) if self.variable else math.prod(shape)
        self.default = default

    def check_default(self, index: int) -> None:
        size = np.size(self.default)
        if self.variable:
            if size != 1:
                raise _invalid(f"dense_defaults[{index}] must be a scalar (the padding "
                               f"value) for a variable-length dense_shapes[{index}] = "
                               f"{_shape_text(self.shape)}, got {size} values")
        elif size not in (0, self.stride):
            raise _invalid(f"dense_defaults[{index}] has {size} values but dense_shapes"
                           f"[{index}] = {_shape_text(self.shape)} needs {self.stride}")


class _Sparse:
    def __init__(self, key: str, dtype):
        self.key, self.dtype, self.kind = key, dtype, _KIND[dtype]


def _example_name(names, i: int) -> str:
    return names[i] if names is not None else "<unknown>"


def _parse(serialized: bytes) -> example_pb2.Example:
    try:
        return example_pb2.Example.FromString(serialized)
    except DecodeError:
        text = serialized.decode("utf-8", "replace")
        if "\0" in text:  # TF's message is a C string: it ends at the first NUL (and the
            # whitespace before it is stripped by the time it reaches Python)
            text = text.split("\0", 1)[0].rstrip()
            raise _invalid(f"Could not parse example input, value: '{text}") from None
        raise _invalid(f"Could not parse example input, value: '{text}'") from None


def _feature(features, key: str):
    """The feature's (kind, values), or None when the example lacks it (or its list)."""
    if key not in features:
        return None
    feature = features[key]
    kind = feature.WhichOneof("kind")
    return None if kind is None else (kind, getattr(feature, kind).value)


def parse_examples(serialized: list, names, dense: list, sparse: list, ragged: list):
    """Per feature the values of every example: dense [rows per example] lists,
    sparse/ragged [values per example] lists."""
    dense_rows = [[] for _ in dense]
    sparse_values = [[] for _ in sparse]
    ragged_values = [[] for _ in ragged]
    for i, data in enumerate(serialized):
        features = _parse(data).features.feature
        for spec, rows in zip(dense, dense_rows, strict=True):
            rows.append(_dense_values(spec, _feature(features, spec.key), names, i))
        for group, out in ((sparse, sparse_values), (ragged, ragged_values)):
            for spec, values in zip(group, out, strict=True):
                found = _feature(features, spec.key)
                if found is None:
                    values.append([])
                    continue
                kind, items = found
                if kind != spec.kind:
                    raise _invalid(
                        f"Name: {_example_name(names, i)}, Key: {spec.key}, Index: {i}.  "
                        f"Data types don't match. Expected type: {_KIND_NAME[spec.kind]}, "
                        f"Actual type: {_KIND_NAME[kind]}")
                values.append(list(items))
    return dense_rows, sparse_values, ragged_values


def _dense_values(spec: _Dense, found, names, i: int, single: bool = False):
    """The example's values for a dense feature (None: use the default). `single`: one
    scalar Example, whose errors TF words without the example's name and index."""
    name = _example_name(names, i)
    if found is None:
        if spec.variable:
            return []
        if np.size(spec.default) == 0 and spec.stride:
            where = "" if single else f"Name: {name}, "
            raise _invalid(f"{where}Feature: {spec.key} (data type: "
                           f"{_KIND_NAME[spec.kind]}) is required but could not be found.")
        return None
    kind, items = found
    if kind != spec.kind:
        where = f"Key: {spec.key}." if single else f"Name: {name}, Key: {spec.key}, Index: {i}."
        raise _invalid(f"{where}  Data types don't match. "
                       f"Data type: {_KIND_NAME[kind]} but expected type: "
                       f"{_KIND_NAME[spec.kind]}")
    count = len(items)
    what = _KIND_NAME[spec.kind]
    if spec.variable:
        if spec.stride == 0 or count % spec.stride:
            raise _invalid(f"Name: {name}, Key: {spec.key}, Index: {i}.  Number of {what} "
                           f"values is not a multiple of stride length. Saw {count} values "
                           f"but output shape is: {_shape_text(spec.shape)}")
    elif count != spec.stride and single:  # TF's single-Example parser fills a slice
        raise _invalid(f"Key: {spec.key}.  Can't parse serialized Example: Some {spec.kind} "
                       f"slice was not parsed.")
    elif count != spec.stride:
        raise _invalid(f"Name: {name}, Key: {spec.key}, Index: {i}.  Number of {what} values "
                       f"!= expected.  Values size: {count} but output shape: "
                       f"{_shape_text(spec.shape)}")
    return list(items)


def dense_output(spec: _Dense, rows: list, batch_shape: tuple) -> np.ndarray:
    """The dense feature of every example, as batch_shape + its shape."""
    inner = list(spec.shape[1:]) if spec.variable else list(spec.shape)
    if spec.variable:
        longest = max((len(r) // spec.stride for r in rows if r), default=0)
        pad = np.asarray(spec.default).reshape(())
        out = np.full((len(rows), longest * spec.stride), pad,
                      dtype=_NUMPY[spec.dtype])
        for b, r in enumerate(rows):
            if r:
                out[b, :len(r)] = _array(r, spec.dtype)
        return out.reshape(batch_shape + (longest, *inner))
    out = np.empty((len(rows), spec.stride), dtype=_NUMPY[spec.dtype])
    default = np.asarray(spec.default, dtype=_NUMPY[spec.dtype]).reshape(-1)
    for b, r in enumerate(rows):
        out[b] = default if r is None else _array(r, spec.dtype)
    return out.reshape(batch_shape + tuple(inner))


def _one_example(data: bytes, dense: list) -> list[np.ndarray]:
    """The dense features of one serialized Example (a scalar input, no sparse or ragged
    features: a tf.data map of parse_single_example), as parse_examples + dense_output
    give them, without their per-batch bookkeeping."""
    features = _parse(data).features.feature
    out = []
    for spec in dense:
        values = _dense_values(spec, _feature(features, spec.key), None, 0, single=True)
        inner = tuple(spec.shape[1:]) if spec.variable else tuple(spec.shape)
        if values is None:
            arr = np.asarray(spec.default, dtype=_NUMPY[spec.dtype]).reshape(inner)
        elif spec.variable:
            arr = _array(values, spec.dtype).reshape((len(values) // spec.stride, *inner))
        else:
            arr = _array(values, spec.dtype).reshape(inner)
        out.append(arr)
    return out


def _plan(dense: list[_Dense]):
    """The fast path's plan for these dense features (fixed shapes only), or None."""
    if any(spec.variable for spec in dense):
        return None
    features = []
    for spec in dense:
        default = None
        if np.size(spec.default):
            default = np.asarray(spec.default, dtype=_NUMPY[spec.dtype]).reshape(spec.shape)
        features.append(parsing_jit.Feature(spec.key, _FAST_KIND[spec.dtype], spec.shape,
                                            default))
    return parsing_jit.Plan.build(features)


def sparse_output(spec: _Sparse, per_example: list, batch: bool) -> list[np.ndarray]:
    """[indices, values, dense shape] of a sparse feature."""
    counts = [len(v) for v in per_example]
    total = sum(counts)
    longest = max(counts, default=0)
    values = _array([x for v in per_example for x in v], spec.dtype)
    positions = np.concatenate([np.arange(c, dtype=np.int64) for c in counts]) \
        if total else np.zeros(0, np.int64)
    if not batch:
        return [positions.reshape(-1, 1), values, np.array([longest], np.int64)]
    rows = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    indices = np.stack([rows, positions], axis=1) if total else np.zeros((0, 2), np.int64)
    return [indices, values, np.array([len(counts), longest], np.int64)]


def _strings(value) -> list:
    """A string tensor's elements as bytes, flattened."""
    return [v if isinstance(v, bytes) else str(v).encode() for v in np.ravel(value).tolist()]


class _ParseBase(OpKernel):
    """What the three ops share: the dense attrs, the size rule, the outputs."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dense_shapes = ctx.get_attr("dense_shapes")
        self.dense_types = [dtypes.as_dtype(t) for t in ctx.get_attr("Tdense")]

    def is_expensive(self, inputs) -> bool:
        x = inputs[0]  # (called before every compute: a scalar answers quickly)
        size = x.size if type(x) is np.ndarray else np.size(x)
        return size > POOL_ABOVE and (size > POOL_ABOVE_SCANNED or not parsing_jit.ready())

    _specs_cache = None  # (keys, defaults, specs) of the last call

    def _dense_specs(self, keys: list, defaults: list) -> list[_Dense]:
        """The dense features' specs, checked; the last call's when its keys and default
        arrays are the same objects (a Const's value every run: a tf.data map calls the
        kernel once per element)."""
        cached = self._specs_cache
        if cached is not None and cached[0] == keys and len(cached[1]) == len(defaults) \
                and all(a is b for a, b in zip(cached[1], defaults, strict=True)):
            return cached[2]
        specs = self._make_dense_specs(keys, defaults)
        self._specs_cache = (list(keys), list(defaults), specs)
        return specs

    def _make_dense_specs(self, keys: list, defaults: list) -> list[_Dense]:
        shapes, types = self.dense_shapes, self.dense_types
        if not (len(keys) == len(shapes) == len(types) == len(defaults)):
            raise _invalid(f"Expected len(dense_keys) == len(dense_shapes) == "
                           f"len(dense_defaults) but got: {len(keys)}, {len(shapes)}, "
                           f"{len(defaults)}")
        specs = []
        for j, (key, shape, dtype, default) in enumerate(
                zip(keys, shapes, types, defaults, strict=True)):
            dims = shape.as_list() if shape.rank is not None else None
            if dims is None or any(d is None for d in dims[1:]):
                raise _invalid(f"dense_shapes[{j}] must be fully defined but for its first "
                               f"dimension, got {shape}")
            spec = _Dense(key, dtype, dims, default)
            spec.check_default(j)
            specs.append(spec)
        return specs

    _plan_cache = None  # (dense specs, their parsing_jit.Plan or None) of the last call

    def _fast(self, serialized, batch: bool, dense: list[_Dense]):
        """The dense features by the compiled wire-format scan (parsing_jit), or None:
        the slow path parses (the scan is not compiled yet, does not apply to these
        features, or met anything but plain well-formed Examples of the wanted types
        and counts: the slow path then gives TF's error)."""
        if not parsing_jit.ready():
            parsing_jit.compile_in_background()
            return None
        cached = self._plan_cache
        if cached is None or cached[0] is not dense:
            cached = (dense, _plan(dense))
            self._plan_cache = cached
        plan = cached[1]
        if plan is None:
            return None
        if batch:
            data = _strings(serialized)
            return plan.parse_batch(data) if data else None
        item = serialized[()] if isinstance(serialized, np.ndarray) else serialized
        return plan.parse_one(item) if type(item) is bytes else None

    _lane = None  # (the other inputs of the last fast-parsed scalar call, its plan)

    def _lane_parse(self, inputs):
        """A scalar Example's dense features, by the last call's plan, when every input
        but `serialized` is the same object as that call's (Consts: a tf.data map calls
        the kernel once per element; the checks and specs of that call hold); else None,
        or _SCANNED when the scan did not answer (the slow path need not scan again)."""
        lane = self._lane
        if lane is None:
            return None
        others, plan = lane
        serialized = inputs[0]
        if len(inputs) != len(others) + 1 or type(serialized) is not np.ndarray or \
                serialized.ndim or not all(map(operator.is_, inputs[1:], others)):
            return None
        item = serialized[()]
        if type(item) is not bytes:
            return None
        out = plan.parse_one(item)
        return _SCANNED if out is None else out

    def _keep_lane(self, inputs, dense: list[_Dense]) -> None:
        """After a call that parsed a scalar with the fast path, without sparse or
        ragged features or names: let the next calls take _lane_parse."""
        cached = self._plan_cache
        if cached is not None and cached[0] is dense and cached[1] is not None and \
                np.ndim(inputs[0]) == 0:
            self._lane = (list(inputs[1:]), cached[1])

    def _run(self, serialized, names, dense, sparse, ragged=(), scan=True):
        batch = np.ndim(serialized) == 1
        if scan and not sparse and not ragged and (names is None or not np.size(names)):
            out = self._fast(serialized, batch, dense)
            if out is not None:
                return out, []
        data = _strings(serialized)
        if not batch and not sparse and not ragged and (names is None or not np.size(names)):
            return _one_example(data[0], dense), [[] for _ in ragged]
        name_list = _strings(names) if names is not None and np.size(names) else None
        if name_list is not None:
            if len(name_list) != len(data):
                raise _invalid(f"Expected len(names) == len(serialized) but got: "
                               f"{len(name_list)} vs. {len(data)}")
            name_list = [n.decode("utf-8", "replace") for n in name_list]
        dense_rows, sparse_values, ragged_values = parse_examples(
            data, name_list, dense, sparse, ragged)
        batch_shape = (len(data),) if batch else ()
        sparse_out = [sparse_output(s, v, batch) for s, v in zip(sparse, sparse_values,
                                                                   strict=True)]
        out = [s[0] for s in sparse_out] + [s[1] for s in sparse_out]
        out += [s[2] for s in sparse_out]
        out += [dense_output(s, r, batch_shape) for s, r in zip(dense, dense_rows,
                                                                strict=True)]
        return out, ragged_values


@register_kernel("ParseExampleV2", "CPU")
class ParseExampleV2Op(_ParseBase):
    """tf.io.parse_example's op: a scalar or a vector of serialized Examples."""

    # Pure, every output produced: a function body around it (a tf.data map of
    # parse_single_example) compiles to a plain call instead of a sub-step per element.
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.sparse_types = [dtypes.as_dtype(t) for t in ctx.get_attr("sparse_types")]
        self.ragged_types = [dtypes.as_dtype(t) for t in ctx.get_attr("ragged_value_types")]
        self.split_types = [dtypes.as_dtype(t) for t in ctx.get_attr("ragged_split_types")]
        if ctx.get_attr("num_sparse") != len(self.sparse_types):
            raise _invalid(f"len(sparse_types) != num_sparse: {len(self.sparse_types)} vs. "
                           f"{ctx.get_attr('num_sparse')}")
        if len(self.ragged_types) != len(self.split_types):
            raise _invalid("len(ragged_value_types) != len(ragged_split_types)")

    _keys_cache = None  # ((the three key inputs), their decoded names) of the last call

    def _keys(self, sparse_keys, dense_keys, ragged_keys):
        """The keys' names, checked; the last call's when the inputs are the same arrays
        (Consts: a tf.data map calls the kernel once per element)."""
        cached = self._keys_cache
        if cached is not None and cached[0][0] is sparse_keys and \
                cached[0][1] is dense_keys and cached[0][2] is ragged_keys:
            return cached[1]
        keys = [k.decode("utf-8", "replace") for k in _strings(sparse_keys)]
        if len(keys) != len(self.sparse_types):
            raise _invalid(f"Expected len(sparse_keys) == len(sparse_types) but got: "
                           f"{len(keys)} vs. {len(self.sparse_types)}")
        ragged_names = [k.decode("utf-8", "replace") for k in _strings(ragged_keys)]
        if len(ragged_names) != len(self.ragged_types):
            raise _invalid(f"Expected len(ragged_keys) == len(ragged_value_types) but got: "
                           f"{len(ragged_names)} vs. {len(self.ragged_types)}")
        dense_names = [k.decode("utf-8", "replace") for k in _strings(dense_keys)]
        names = (keys, ragged_names, dense_names)
        self._keys_cache = ((sparse_keys, dense_keys, ragged_keys), names)
        return names

    def compute(self, ctx, inputs):
        fast = self._lane_parse(inputs)
        if fast is not None and fast is not _SCANNED:
            return fast  # dense features only: the op's outputs are theirs
        serialized, names, sparse_keys, dense_keys, ragged_keys = inputs[:5]
        if np.ndim(serialized) > 1:
            raise _invalid(f"Expected serialized to be a scalar or vector, got shape: "
                           f"[{','.join(str(d) for d in np.shape(serialized))}]")
        keys, ragged_names, dense_names = self._keys(sparse_keys, dense_keys, ragged_keys)
        dense = self._dense_specs(dense_names, list(inputs[5:]))
        sparse = [_Sparse(k, t) for k, t in zip(keys, self.sparse_types, strict=True)]
        ragged = [_Sparse(k, t) for k, t in zip(ragged_names, self.ragged_types, strict=True)]
        out, ragged_values = self._run(serialized, names, dense, sparse, ragged,
                                       scan=fast is None)
        if not sparse and not ragged and not np.size(names):
            self._keep_lane(inputs, dense)
        values, splits = [], []
        for spec, per_example, split_type in zip(ragged, ragged_values, self.split_types,
                                                 strict=True):
            values.append(_array([x for v in per_example for x in v], spec.dtype))
            ends = np.cumsum([0] + [len(v) for v in per_example])
            splits.append(ends.astype(split_type.as_numpy_dtype))
        return out + values + splits


def _scalar_key(key, what: str, i: int) -> str:
    """ParseExample's key input `what`[i], which must be a scalar (TF's words)."""
    if np.ndim(key) != 0:
        raise _invalid(f"Expected {what}[{i}] to be a scalar, got shape: "
                       f"[{','.join(str(d) for d in np.shape(key))}]")
    return _strings(key)[0].decode("utf-8", "replace")


@register_kernel("ParseExample", "CPU")
class ParseExampleOp(_ParseBase):
    """The TF 1 op: a vector of serialized Examples, keys as scalar inputs."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.num_sparse = ctx.get_attr("Nsparse")
        self.num_dense = ctx.get_attr("Ndense")
        self.sparse_types = [dtypes.as_dtype(t) for t in ctx.get_attr("sparse_types")]
        # TF's ParseExampleAttrs::FinishInit
        if self.num_sparse != len(self.sparse_types):
            raise _invalid("len(sparse_keys) != len(sparse_types)")
        if self.num_dense != len(self.dense_types):
            raise _invalid("len(dense_keys) != len(dense_types)")
        if self.num_dense != len(self.dense_shapes):
            raise _invalid("len(dense_keys) != len(dense_shapes)")

    def compute(self, ctx, inputs):
        serialized, names = inputs[0], inputs[1]
        if np.ndim(serialized) != 1:
            raise _invalid(f"Expected serialized to be a vector, got shape: "
                           f"[{','.join(str(d) for d in np.shape(serialized))}]")
        ns, nd = self.num_sparse, self.num_dense
        sparse_keys = [_scalar_key(k, "sparse_keys", i)
                       for i, k in enumerate(inputs[2:2 + ns])]
        dense_keys = [_scalar_key(k, "dense_keys", i)
                      for i, k in enumerate(inputs[2 + ns:2 + ns + nd])]
        dense = self._dense_specs(dense_keys, list(inputs[2 + ns + nd:]))
        sparse = [_Sparse(k, t) for k, t in zip(sparse_keys, self.sparse_types, strict=True)]
        return self._run(serialized, names, dense, sparse)[0]


@register_kernel("ParseSingleExample", "CPU")
class ParseSingleExampleOp(_ParseBase):
    """One serialized Example (a scalar), keys as attrs."""

    # Pure, every output produced: a function body around it (a tf.data map of
    # parse_single_example) compiles to a plain call instead of a sub-step per element.
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.sparse_keys = [k.decode("utf-8", "replace") if isinstance(k, bytes) else k
                            for k in ctx.get_attr("sparse_keys")]
        self.dense_keys = [k.decode("utf-8", "replace") if isinstance(k, bytes) else k
                           for k in ctx.get_attr("dense_keys")]
        self.sparse_types = [dtypes.as_dtype(t) for t in ctx.get_attr("sparse_types")]
        # TF's ParseSingleExampleAttrs::FinishInit, and the op's num_sparse
        if len(self.sparse_keys) != len(self.sparse_types):
            raise _invalid("len(sparse_keys) != len(sparse_types)")
        if len(self.dense_keys) != len(self.dense_types):
            raise _invalid("len(dense_keys) != len(dense_types)")
        if len(self.dense_keys) != len(self.dense_shapes):
            raise _invalid("len(dense_keys) != len(dense_shapes)")
        if ctx.get_attr("num_sparse") != len(self.sparse_keys):
            raise _invalid("len(sparse_keys) != num_sparse")

    def compute(self, ctx, inputs):
        fast = self._lane_parse(inputs)
        if fast is not None and fast is not _SCANNED:
            return fast
        serialized = inputs[0]
        if np.ndim(serialized) != 0:
            raise _invalid(f"Expected serialized to be a scalar, got shape: "
                           f"[{','.join(str(d) for d in np.shape(serialized))}]")
        dense = self._dense_specs(self.dense_keys, list(inputs[1:]))
        sparse = [_Sparse(k, t) for k, t in zip(self.sparse_keys, self.sparse_types,
                                                strict=True)]
        out = self._run(serialized, None, dense, sparse, scan=fast is None)[0]
        if not sparse:
            self._keep_lane(inputs, dense)
        return out
