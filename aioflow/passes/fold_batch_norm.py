"""Fold inference batch norms into the weights of the convolution or matmul before them,
as TF's graph transforms fold_batch_norms / fold_old_batch_norms do.

A Conv2D, DepthwiseConv2dNative (both NHWC) or MatMul whose filter is a Const, followed by
a chain of per-output-channel affine ops on constants, each the sole consumer of the one
before, becomes the same op on a new constant filter followed by one BiasAdd:

* FusedBatchNorm/V2/V3 with is_training false and constant scale, offset, mean and
  variance: y = x * m + (offset - mean * m), m = scale / sqrt(variance + epsilon);
* Mul by a constant (how Keras 3 writes an inference batch norm: x * m + (beta - mean * m));
* BiasAdd, Add/AddV2 or Sub of a constant.

Multipliers go into the filter (its output-channel axis), offsets into the bias; the
arithmetic is done in float64 and rounded once to the filter's type. Nothing is folded
when an intermediate tensor has another consumer (or a control edge leaves it), when the
batch norm is in training mode or uses its other outputs, or when the filter is not a
Const. The BiasAdd takes the name of the chain's last node, so the step's trace and the
partition graphs read as the original graph's names.
"""

from __future__ import annotations

import numpy as np

from aioflow.graph.graph import Graph, Node
from aioflow.passes.pattern_util import (
    FLOAT_TYPES,
    attr_b,
    attr_f,
    attr_s,
    const_value,
    input_node,
    make_const,
    make_node,
    remove_dead,
    sole_consumer,
    take_over,
    unique_name,
)

BATCH_NORMS = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
_ADDS = frozenset({"Add", "AddV2", "BiasAdd", "BiasAddV1", "Sub"})


class _Contraction:
    """A Conv2D / DepthwiseConv2dNative / MatMul with a constant filter: what folding
    needs to know of it."""

    def __init__(self, node: Node, filter_node: Node, weights: np.ndarray):
        self.node = node
        self.filter_node = filter_node
        self.weights = weights
        op = node.type_string
        if op == "MatMul":
            self.rank = 2
            self.channels = weights.shape[0 if attr_b(node, "transpose_b") else 1]
        elif op == "DepthwiseConv2dNative":
            self.rank = 4
            self.channels = weights.shape[2] * weights.shape[3]
        else:
            self.rank = 4
            self.channels = weights.shape[3]

    def scaled_weights(self, scale: np.ndarray) -> np.ndarray:
        """The filter with output channel k multiplied by scale[k]."""
        w = self.weights.astype(np.float64)
        if self.node.type_string == "MatMul":
            w = w * (scale[:, None] if attr_b(self.node, "transpose_b") else scale[None, :])
        elif self.node.type_string == "DepthwiseConv2dNative":
            kh, kw, c, m = w.shape
            w = (w.reshape(kh, kw, c * m) * scale).reshape(kh, kw, c, m)
        else:
            w = w * scale
        return w.astype(self.weights.dtype)


def _contraction(node: Node) -> _Contraction | None:
    """The node as a foldable contraction, or None."""
    op = node.type_string
    if op not in ("Conv2D", "DepthwiseConv2dNative", "MatMul"):
        return None
    t = node.attr("T")
    if t is None or t.type not in FLOAT_TYPES:
        return None
    if op != "MatMul" and attr_s(node, "data_format", "NHWC") != "NHWC":
        return None
    src = input_node(node, 1)
    if src is None or src[1] != 0:
        return None
    weights = const_value(src[0])
    need_rank = 2 if op == "MatMul" else 4
    if weights is None or weights.ndim != need_rank or weights.size == 0:
        return None
    return _Contraction(node, src[0], weights)


def channel_vector(value: np.ndarray | None, channels: int, rank: int) -> np.ndarray | None:
    """`value` as a vector over the last axis (`channels` long), when broadcasting it
    against a rank-`rank` tensor only scales or shifts whole channels (and changes
    neither the shape nor the rank); else None."""
    if value is None or value.ndim > rank or value.dtype.kind != "f":
        return None
    if value.size == 1:
        return np.full(channels, value.reshape(()), np.float64)
    if value.shape[-1] != channels or any(d != 1 for d in value.shape[:-1]):
        return None
    return value.reshape(channels).astype(np.float64)


def _batch_norm_step(bn: Node, c: _Contraction):
    """(multiplier, offset) of an inference FusedBatchNorm* on constants, or None."""
    if c.rank != 4 or attr_b(bn, "is_training", True) or \
            attr_s(bn, "data_format", "NHWC") != "NHWC":
        return None
    if any(e.src_output != 0 and not e.dst.is_sink for e in bn.out_edges):
        return None  # batch_mean / batch_variance / reserve spaces are used
    params = []
    for i in range(1, 5):
        src = input_node(bn, i)
        vec = None if src is None or src[1] != 0 else const_value(src[0])
        if vec is None or vec.shape != (c.channels,):
            return None
        params.append(vec.astype(np.float64))
    scale, offset, mean, variance = params
    epsilon = np.float64(np.float32(attr_f(bn, "epsilon", 0.0001)))
    mult = scale / np.sqrt(variance + epsilon)
    return mult, offset - mean * mult


def _affine_step(node: Node, prev: Node, c: _Contraction):
    """(multiplier or None, offset or None) of one op of the chain after `prev`, or None
    when `node` is not a per-channel affine op of `prev` and a constant."""
    op = node.type_string
    if op in BATCH_NORMS:
        first = input_node(node, 0)
        return _batch_norm_step(node, c) if first == (prev, 0) else None
    if op != "Mul" and op not in _ADDS:
        return None
    a, b = input_node(node, 0), input_node(node, 1)
    if a is None or b is None:
        return None
    if op in ("BiasAdd", "BiasAddV1", "Sub"):
        if a != (prev, 0) or attr_s(node, "data_format", "NHWC") != "NHWC":
            return None
        other = b[0]
    elif a == (prev, 0) and b[0] is not prev:
        other = b[0]
    elif b == (prev, 0) and a[0] is not prev:
        other = a[0]
    else:
        return None
    vec = channel_vector(const_value(other), c.channels, c.rank)
    if vec is None:
        return None
    if op == "Mul":
        return vec, None
    return None, -vec if op == "Sub" else vec


def _fold_chain(graph: Graph, c: _Contraction, names: set[str]) -> bool:
    """Fold the affine chain after `c` (if any); True when the graph changed."""
    scale = bias = None
    chain: list[Node] = []
    prev = c.node
    while True:
        nxt = sole_consumer(prev)
        if nxt is None or nxt.assigned_device_name != c.node.assigned_device_name:
            break
        step = _affine_step(nxt, prev, c)
        if step is None:
            break
        mult, add = step
        if mult is not None:
            scale = mult if scale is None else scale * mult
            bias = None if bias is None else bias * mult
        if add is not None:
            bias = add if bias is None else bias + add
        chain.append(nxt)
        prev = nxt
    if not chain or (len(chain) == 1 and chain[0].type_string in ("BiasAdd", "BiasAddV1")):
        return False  # nothing to fold: a plain BiasAdd is the remapper's
    dtype = c.weights.dtype
    dead = [e.src for n in chain for e in n.in_edges if e.src.type_string == "Const"]
    if scale is not None:
        w = make_const(graph, c.filter_node, unique_name(names, c.filter_node.name + "_folded"),
                       c.scaled_weights(scale))
        old = next(e for e in c.node.in_edges if e.dst_input == 1)
        graph.remove_edge(old)
        graph.add_edge(w, 0, c.node, 1)
        dead.append(c.filter_node)
    last = chain[-1]
    if bias is None:
        bias = np.zeros(c.channels)
    b = make_const(graph, last, unique_name(names, last.name + "/folded_bias"),
                   bias.astype(dtype))
    bias_add = make_node(graph, last, unique_name(names, last.name + "/folded"), "BiasAdd",
                         [(c.node, 0), (b, 0)],
                         {"T": c.node.attr("T"),
                          "data_format": lambda a: setattr(a, "s", b"NHWC")})
    take_over(graph, last, bias_add, chain)
    for node in chain:
        graph.remove_node(node)
    names.discard(bias_add.name)
    bias_add.def_.name = last.name
    remove_dead(graph, dead)
    return True


def fold_batch_norms(graph: Graph) -> bool:
    """Fold every foldable chain of the graph in place; True when anything changed."""
    names = {n.name for n in graph.op_nodes()}
    changed = False
    for node in list(graph.op_nodes()):
        if graph.nodes[node.id] is None:
            continue
        c = _contraction(node)
        if c is not None and _fold_chain(graph, c, names):
            changed = True
    return changed
