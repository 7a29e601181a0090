"""A loaded SavedModel signature (TF's signature ConcreteFunction): `await sig(**inputs)`
binds keyword inputs to the signature's TensorSpecs, converts them as TF converts NumPy
and Python values, runs the signature's feeds and fetches in the model's session and
returns {output key: ndarray}.

Binding follows TF 2.21's ConcreteFunction call: keyword-only inputs; a missing, extra or
positional input, a value that does not convert to the spec's dtype or a shape the spec
does not admit is a TypeError with TF's message (the structured binding's reason, then
the flat signature's). NumPy arrays are cast to the spec's dtype (as TF casts them);
Python floats are not narrowed to integers.
"""

from __future__ import annotations

import asyncio

import numpy as np

from aioflow.framework import dtypes
from aioflow.framework.tensor_spec import TensorSpec

__all__ = ["Signature"]


class _BindError(Exception):
    """Why the structured binding failed (the text TF quotes in backticks)."""


def _to_bytes(value):
    return value.encode("utf-8") if isinstance(value, str) else value


def _as_array(value, spec: TensorSpec) -> np.ndarray:
    """`value` as an array of the spec's dtype, as TF converts a non-Tensor argument."""
    if value is None or not isinstance(
            value, (np.ndarray, np.generic, list, tuple, int, float, bool, complex, str,
                    bytes)):
        raise _BindError(f"Attempt to convert a value ({value!r}) with an unsupported "
                         f"type ({type(value)}) to a Tensor.")
    dtype = spec.dtype
    is_numpy = isinstance(value, (np.ndarray, np.generic))
    try:
        arr = np.asarray(value)
    except ValueError as e:  # ragged nested lists
        raise _BindError(str(e)) from None
    if dtype == dtypes.string:
        if arr.dtype.kind not in "USO":
            raise _BindError(f"Cannot convert {value!r} to EagerTensor of dtype string")
        flat = [_to_bytes(v) for v in arr.reshape(-1).tolist()]
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(arr.shape)
    if not is_numpy and arr.dtype.kind in "fc" and (dtype.is_integer or dtype == dtypes.bool):
        raise _BindError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")
    if not is_numpy and arr.dtype.kind in "USO":
        raise _BindError(f"Cannot convert {value!r} to EagerTensor of dtype {dtype.name}")
    try:
        return arr.astype(dtype.as_numpy_dtype, copy=False)
    except (ValueError, TypeError) as e:
        raise _BindError(str(e)) from None


class Signature:
    """One signature of a loaded SavedModel: an async callable taking its inputs by
    keyword and returning {output key: ndarray}.

    `structured_input_signature` is `((), {key: TensorSpec})` and `structured_outputs`
    `{key: TensorSpec}`, as on TF's loaded signature.
    """

    def __init__(self, session, name: str, signature_def, *, keywords=None,
                 input_specs=None, output_specs=None, function_name: str | None = None,
                 allowed_positional: int = 0):
        self._session = session
        self.name = name
        self.signature_def = signature_def
        keys = list(keywords) if keywords else sorted(signature_def.inputs)
        specs = input_specs or {}
        self._keywords = keys
        self._inputs = {k: specs.get(k) or TensorSpec.from_tensor_info(
            signature_def.inputs[k], k) for k in keys}
        out_specs = output_specs or {k: TensorSpec.from_tensor_info(
            signature_def.outputs[k], k) for k in sorted(signature_def.outputs)}
        self._outputs = {k: out_specs[k] for k in out_specs if k in signature_def.outputs}
        self._function_name = function_name or name
        self._allowed_positional = allowed_positional
        self._feed_names = [signature_def.inputs[k].name for k in keys]
        self._fetch_names = [signature_def.outputs[k].name for k in self._outputs]
        self._callable = None
        self._build_lock = asyncio.Lock()
        composite = sorted(
            f"{kind} {key!r} ({info.WhichOneof('encoding')})"
            for kind, infos in (("input", signature_def.inputs),
                                ("output", signature_def.outputs))
            for key, info in infos.items() if info.WhichOneof("encoding") != "name")
        #: Why the signature cannot be called (sparse or composite tensors), or None.
        self.unsupported = None if not composite else (
            f"The signature {name!r} has sparse or composite tensors ("
            f"{', '.join(composite)}): aioflow feeds and fetches dense tensors only.")

    @property
    def structured_input_signature(self) -> tuple[tuple, dict[str, TensorSpec]]:
        return (), dict(self._inputs)

    @property
    def structured_outputs(self) -> dict[str, TensorSpec]:
        return dict(self._outputs)

    def pretty_printed_signature(self) -> str:
        """TF's rendering: `(*, x: TensorSpec(...)) -> Dict[['y', TensorSpec(...)]]`."""
        inputs = ", ".join(f"{k}: {spec!r}" for k, spec in self._inputs.items())
        outputs = ", ".join(f"[{k!r}, {spec!r}]" for k, spec in self._outputs.items())
        return f"(*, {inputs}) -> Dict[{outputs}]" if inputs else f"() -> Dict[{outputs}]"

    def __repr__(self) -> str:
        return f"<Signature {self.name} {self.pretty_printed_signature()}>"

    # -- binding ----------------------------------------------------------------------

    def _structured_bind(self, args, kwargs) -> list[np.ndarray]:
        if args:
            raise _BindError("too many positional arguments")
        for key in self._keywords:
            if key not in kwargs:
                raise _BindError(f"missing a required argument: {key!r}")
        for key in kwargs:
            if key not in self._inputs:
                raise _BindError(f"got an unexpected keyword argument {key!r}")
        values = []
        for key in self._keywords:
            spec = self._inputs[key]
            arr = _as_array(kwargs[key], spec)
            if not spec.shape.is_compatible_with(arr.shape):
                raise _BindError(f"Can not cast {TensorSpec(arr.shape, spec.dtype, spec.name)!r}"
                                 f" to {spec!r}")
            values.append(arr)
        return values

    def _flat_reason(self, args, kwargs) -> str:
        """Why TF's flat-signature fallback fails too (no argument is a Tensor here)."""
        summary = f"{self._function_name}({', '.join(self._keywords)})"
        if len(args) > self._allowed_positional:
            return (f"{summary} takes {self._allowed_positional} positional arguments, "
                    f"got {len(args)}.")
        flat = list(args)
        rest = dict(kwargs)
        for key in self._keywords[len(flat):]:
            if key not in rest:
                given = list(self._keywords[:len(flat)]) + list(rest)
                missing = sorted(set(self._keywords) - set(given))
                return f"{summary} missing required arguments: {', '.join(missing)}."
            flat.append(rest.pop(key))
        if rest:
            for key in rest:
                if key in self._keywords[:len(args)]:
                    return f"{summary} got two values for '{key}'."
            return f"{summary} got unexpected keyword arguments: {', '.join(sorted(rest))}."
        for i, arg in enumerate(flat):
            return (f"{summary}: expected argument #{i}(zero-based) to be a Tensor; got "
                    f"{type(arg).__name__} ({arg}).")
        return f"{summary}: no arguments."

    def bind(self, args, kwargs) -> list[np.ndarray]:
        """The feed values for `kwargs`, in feed order (TF's TypeError otherwise)."""
        try:
            return self._structured_bind(args, kwargs)
        except _BindError as e:
            raise TypeError(
                f"Binding inputs to tf.function failed due to `{e}`. Received args: {args} "
                f"and kwargs: {kwargs} for signature: {self.pretty_printed_signature()}.\n"
                f"Fallback to flat signature also failed due to: "
                f"{self._flat_reason(args, kwargs)}") from None

    # -- running ----------------------------------------------------------------------

    async def _get_callable(self):
        if self._callable is None:
            async with self._build_lock:
                if self._callable is None:
                    # builds the step (prune, partition, executors) off the loop
                    self._callable = await asyncio.to_thread(
                        self._session.make_callable, self._fetch_names, self._feed_names)
        return self._callable

    async def __call__(self, *args, **kwargs) -> dict[str, np.ndarray]:
        if self.unsupported:
            raise NotImplementedError(self.unsupported)
        values = self.bind(args, kwargs)
        call = self._callable or await self._get_callable()
        results = await call(*values)
        return dict(zip(self._outputs, results, strict=True))
