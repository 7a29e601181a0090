"""TF 1.x's functional ops: `map_fn`, `scan`, `foldl` and `foldr`, built in graph mode as
TensorFlow builds them, so their GraphDefs are node for node TF's.

Each one unstacks its elements into TensorArrays, runs one v1 `while_loop` (with
`maximum_iterations=n`) that applies `fn` to one element per iteration, and, for map_fn
and scan, writes every result into a TensorArray that is stacked after the loop. Name
scopes are TF's ("map", "scan", "foldl", "foldr"); elems and results may be nested
structures (tuples, lists, dicts, namedtuples).
"""

from __future__ import annotations

from aioflow.framework import ops, tensor_shape
from aioflow.framework.nest import assert_same_structure, flatten, is_nested, pack_sequence_as
from aioflow.framework.tensor_spec import TensorSpec
from aioflow.ops import array_ops
from aioflow.ops.constant_op import constant
from aioflow.ops.control_flow_ops import while_loop
from aioflow.ops.tensor_array_ops import TensorArray

__all__ = ["map_fn", "scan", "foldl", "foldr"]


def _check_callable(fn, message: str) -> None:
    if not callable(fn):
        raise TypeError(message.format(name=getattr(fn, "__name__", repr(fn))))


def _check_not_scalar(what: str, elems, elems_flat) -> None:
    """scan/foldl/foldr need a first tensor with a dimension 0 (TF fails with a bare
    IndexError there; the class is kept, the message says why)."""
    if not elems_flat:
        raise IndexError(f"{what}: elems must hold at least one Tensor; got {elems}")
    if elems_flat[0].shape.ndims == 0:
        raise IndexError(f"{what}: elems must be 1+ dimensional Tensors; got "
                         f"{elems_flat[0]} (a scalar)")


def _leading_dim(elems_flat) -> tensor_shape.Dimension:
    """The static size of the elements' first dimension, checked to agree across them."""
    dims = [tensor_shape.Dimension(tensor_shape.dimension_value(
        t.shape.with_rank_at_least(1)[0])) for t in elems_flat]
    for d in dims[1:]:
        dims[0].assert_is_compatible_with(d)
    return dims[0]


def _unstacked(elems_flat, n, with_element_shape: bool = False,
               interleaved: bool = False) -> list:
    """One TensorArray of size n per tensor, holding its rows. TF's map_fn and scan make
    every TensorArray and then unstack each; its folds make and unstack them one by one
    (`interleaved`); the GraphDef's node order follows."""
    def make(t):
        return TensorArray(dtype=t.dtype, size=n, dynamic_size=False,
                           element_shape=t.shape[1:] if with_element_shape else None,
                           infer_shape=True)

    if interleaved:
        return [make(t).unstack(t) for t in elems_flat]
    tas = [make(t) for t in elems_flat]
    return [ta.unstack(t) for ta, t in zip(tas, elems_flat, strict=True)]


def _output_spec(signature) -> TensorSpec:
    """A TensorSpec for one leaf of map_fn's `dtype`/`fn_output_signature`."""
    if isinstance(signature, TensorSpec):
        return signature
    return TensorSpec(None, signature)


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None, fn_output_signature=None):
    """`fn` applied to each slice of `elems` along dimension 0, the results stacked, as TF
    1.x's tf.map_fn in graph mode.

    `elems` is a tensor or a nested structure of tensors sharing their first dimension;
    `fn` receives one slice of each in that structure. `dtype` (or
    `fn_output_signature`: dtypes or TensorSpecs) states the structure and dtypes of
    `fn`'s result when they differ from `elems`'.
    """
    if fn_output_signature is None:
        fn_output_signature = dtype
    _check_callable(fn, "The provided function {name} is not callable.fn must be callable.")
    if not parallel_iterations:
        parallel_iterations = 10

    elems_flat = flatten(elems)
    if not elems_flat:
        raise ValueError("elems must be a Tensor or (possibly nested) sequence of Tensors. "
                         f"Got {elems}, which does not contain any Tensors.")
    if fn_output_signature is None:
        result_specs = None  # the elems' dtypes, shapes unknown until fn runs
        result_structure = elems
    else:
        result_specs = [_output_spec(s) for s in flatten(fn_output_signature)]
        result_structure = fn_output_signature
    # TF checks fn's result against `fn_output_signature or elems`.
    expected_structure = fn_output_signature if fn_output_signature else elems

    with ops.name_scope(name, "map", elems_flat):
        elems_flat = [ops.convert_to_tensor(t, name="elem") for t in elems_flat]
        first_shape = elems_flat[0].shape
        if first_shape.ndims is not None and first_shape.ndims < 1:
            raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
        n_static = _leading_dim(elems_flat)
        n = n_static.value or array_ops.shape(elems_flat[0])[0]

        elems_ta = _unstacked(elems_flat, n)
        i = constant(0)
        if result_specs is None:
            result_specs = [TensorSpec(None, t.dtype) for t in elems_flat]
        results_ta = [TensorArray(dtype=spec.dtype, size=n, dynamic_size=False,
                                  infer_shape=infer_shape, element_shape=spec.shape)
                      for spec in result_specs]

        def compute(i, tas):
            value = pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])
            result = fn(value)
            assert_same_structure(expected_structure, result)
            tas = [ta.write(i, v) for ta, v in zip(tas, flatten(result), strict=True)]
            return (i + 1, tas)

        _, results_ta = while_loop(lambda i, _: i < n, compute, (i, results_ta),
                                   parallel_iterations=parallel_iterations,
                                   back_prop=back_prop, swap_memory=swap_memory,
                                   maximum_iterations=n)
        results = [ta.stack() for ta in results_ta]
        for r in results:
            r.set_shape(tensor_shape.TensorShape([n_static]).concatenate(r.shape[1:]))
        return pack_sequence_as(result_structure, results)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """The running accumulations `a = fn(a, x)` over the slices x of `elems` along
    dimension 0, stacked, as TF 1.x's tf.scan.

    Without `initializer` the first slice (the last, with `reverse`) is the initial
    accumulator and is the first (last) row of the output; accumulators have the
    structure of `initializer` (else of `elems`).
    """
    _check_callable(fn, "{name} is not callable. Please provide a callable function.")
    input_is_sequence = is_nested(elems)

    def input_pack(flat):
        return pack_sequence_as(elems, flat) if input_is_sequence else flat[0]

    if initializer is None:
        output_is_sequence, output_structure = input_is_sequence, elems
    else:
        output_is_sequence, output_structure = is_nested(initializer), initializer

    def output_flatten(x):
        return flatten(x) if output_is_sequence else [x]

    def output_pack(flat):
        return pack_sequence_as(output_structure, flat) if output_is_sequence else flat[0]

    elems_flat = flatten(elems) if input_is_sequence else [elems]
    with ops.name_scope(name, "scan", elems_flat):
        elems_flat = [ops.convert_to_tensor(t, name="elem") for t in elems_flat]
        _check_not_scalar("scan", elems, elems_flat)
        n = tensor_shape.dimension_value(elems_flat[0].shape[0])
        if n is None:
            n = array_ops.shape(elems_flat[0])[0]
        elems_ta = _unstacked(elems_flat, n, with_element_shape=True)

        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            i = 1
        else:
            a_flat = [ops.convert_to_tensor(x) for x in output_flatten(initializer)]
            i = 0
        accs_ta = [TensorArray(dtype=a.dtype, size=n,
                               element_shape=a.shape if infer_shape else None,
                               dynamic_size=False, infer_shape=infer_shape)
                   for a in a_flat]
        if initializer is None:
            accs_ta = [ta.write(n - 1 if reverse else 0, a)
                       for ta, a in zip(accs_ta, a_flat, strict=True)]

        def compute(i, a_flat, tas):
            packed_elems = input_pack([ta.read(i) for ta in elems_ta])
            a_out = fn(output_pack(a_flat), packed_elems)
            assert_same_structure(output_structure, a_out)
            flat_a_out = output_flatten(a_out)
            tas = [ta.write(i, v) for ta, v in zip(tas, flat_a_out, strict=True)]
            next_i = i - 1 if reverse else i + 1
            return (next_i, flat_a_out, tas)

        if reverse:
            initial_i = n - 1 - i

            def condition(i, _1, _2):
                return i >= 0
        else:
            initial_i = i

            def condition(i, _1, _2):
                return i < n
        _, _, accs_ta = while_loop(condition, compute, (initial_i, a_flat, accs_ta),
                                   parallel_iterations=parallel_iterations,
                                   back_prop=back_prop, swap_memory=swap_memory,
                                   maximum_iterations=n)
        results_flat = [ta.stack() for ta in accs_ta]
        n_static = _leading_dim(elems_flat)
        for r in results_flat:
            r.set_shape(tensor_shape.TensorShape([n_static]).concatenate(r.shape[1:]))
        return output_pack(results_flat)


def _fold(kind: str, fn, elems, initializer, parallel_iterations, back_prop, swap_memory,
          name):
    """foldl (left to right) or foldr (right to left): the accumulator `a = fn(a, x)`
    after the last slice, carried through a while_loop over TensorArray reads."""
    _check_callable(fn, "{name} is not callable. Please provide a callable function.")
    with ops.name_scope(name, kind, flatten(elems)):
        elems_flat = [ops.convert_to_tensor(t, name="elem") for t in flatten(elems)]
        _check_not_scalar(kind, elems, elems_flat)
        n = (tensor_shape.dimension_value(elems_flat[0].shape[0])
             or array_ops.shape(elems_flat[0])[0])
        elems_ta = _unstacked(elems_flat, n, interleaved=True)

        def read(i):
            return pack_sequence_as(elems, [ta.read(i) for ta in elems_ta])

        if kind == "foldl":
            if initializer is None:
                a, i = read(0), constant(1)
            else:
                a, i = initializer, constant(0)

            def compute(i, a):
                a = fn(a, read(i))  # before i + 1, as TF (the node names follow)
                return [i + 1, a]

            def condition(i, a):
                return i < n
        else:
            if initializer is None:
                i = n - 1
                a = read(i)
            else:
                i, a = n, initializer

            def compute(i, a):
                i -= 1
                return [i, fn(a, read(i))]

            def condition(i, a):
                return i > 0
        _, result = while_loop(condition, compute, [i, a],
                               parallel_iterations=parallel_iterations,
                               back_prop=back_prop, swap_memory=swap_memory,
                               maximum_iterations=n)
        return result


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """`fn(...fn(fn(initializer, x0), x1)..., x_{n-1})` over the slices of `elems` along
    dimension 0, as TF 1.x's tf.foldl (without `initializer`, x0 starts the fold)."""
    return _fold("foldl", fn, elems, initializer, parallel_iterations, back_prop,
                 swap_memory, name)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """The fold of foldl taken from the last slice to the first, as TF 1.x's tf.foldr
    (without `initializer`, the last slice starts the fold)."""
    return _fold("foldr", fn, elems, initializer, parallel_iterations, back_prop,
                 swap_memory, name)
