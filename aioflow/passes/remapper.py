"""The remapper, as TF's grappler remapper does on CPU: a contraction, its bias (or
inference batch norm) and an activation become one fused node whose kernel computes the
chain in one call (aioflow/kernels/nn/fused_kernels.py).

Patterns, each intermediate the sole consumer of the node before it (no other consumer,
no control edge leaving it), all on one device:

* Conv2D (NHWC) + BiasAdd [+ Relu|Relu6|Elu|LeakyRelu]             -> _FusedConv2D
* DepthwiseConv2dNative (NHWC) + BiasAdd [+ activation]           -> _FusedDepthwiseConv2dNative
* MatMul + BiasAdd [+ activation]                                 -> _FusedMatMul
* Conv2D / DepthwiseConv2dNative + FusedBatchNorm* (inference, outputs other than y
  unused) [+ activation] -> fused_ops ["FusedBatchNorm", ...] with its four arguments
  (when fold_batch_norm.py could not fold it: a filter or statistics that are not Consts)
* Pad (zeros, spatial only, a Const padding) + Conv2D (NHWC): the Conv2D with those
  paddings as its explicit padding (TF's remapper folds the pad into its oneDNN
  convolution too; ResNet's stem), then fused as any Conv2D
* the same Pad + DepthwiseConv2dNative: its explicit padding (aioflow's own: TF runs
  the Pad; MobileNetV2's four stride-2 blocks, a padded copy of the input an image
  less); fused, the pads ride in the private attr FOLDED_PADDINGS with padding VALID
  (TF's _FusedDepthwiseConv2dNative has no explicit padding)
* the same Pad + MaxPool (NHWC, a spatial window), when the Pad's input is a Relu or
  Relu6 (or a fused node ending in one): the MaxPool with those paddings as its explicit
  padding (aioflow's own: TF runs the Pad; ResNet's pool1_pad, a padded copy of the stem's
  output a run less). Exact because the input is never below the Pad's zeros and every
  window holds an input element (each pad under the window's size, else left alone); a
  window of -0.0s only then reads -0.0 where the Pad's reads 0.0, and a zero-sized image
  is not padded to zeros
* the activation may also be swish, x * Sigmoid(x) (TF's Mul and Sigmoid, or Keras'
  with its Mul by 1.0 and the IdentityN around it: swish.py), its nodes the chain
  value's only consumers: fused_ops "_MklSwish", as TF's remapper names it
  (EfficientNet's every convolution)
* Conv2D (NHWC) + BiasAdd + Add|AddV2 (a residual connection) [+ activation]
  -> _FusedConv2D, fused_ops ["BiasAdd", "Add", ...] with the bias and the other addend
  (TF's remapper writes this one when oneDNN is on; the oneDNN kernel adds the addend as
  a sum post-op, the NumPy kernel after its convolution)

The fused node takes the name of the chain's last node (as TF's remapper does).
Then a batch norm left unfused (training) and its Relu become _FusedBatchNormEx
(batch_norm_activation.py).

Part of the graph optimizer (graph_optimizer.optimize_graph runs it on each partition,
after constant folding, so that frozen weights read through Identity are Consts by then):
on at OptimizerOptions L1 (the default) and off at L0, and RewriterConfig.remapping (the
session's graph_options.rewrite_options) turns it OFF or ON whatever the level. Batch
norms are folded first (fold_batch_norm.py), then the chains are fused.
"""

from __future__ import annotations

from aioflow.framework import dtypes, op_def_registry
from aioflow.framework.op_defs.fused_ops import FOLDED_PADDINGS
from aioflow.framework.padding import explicit_paddings_error
from aioflow.graph.graph import Graph, Node
from aioflow.passes.batch_norm_activation import fuse_batch_norm_relus
from aioflow.passes.fold_batch_norm import BATCH_NORMS, fold_batch_norms
from aioflow.passes.pattern_util import (
    FLOAT_TYPES,
    attr_b,
    attr_f,
    attr_s,
    const_value,
    input_node,
    make_node,
    sole_consumer,
    take_over,
    unique_name,
)
from aioflow.passes.swish import forward_identity_n, swish_of
from aioflow.proto import config_pb2, rewriter_config_pb2

FUSED_OPS = {"Conv2D": "_FusedConv2D", "DepthwiseConv2dNative": "_FusedDepthwiseConv2dNative",
             "MatMul": "_FusedMatMul"}
ACTIVATIONS = frozenset({"Relu", "Relu6", "Elu", "LeakyRelu"})
#: Convolutions a zero Pad before them folds into (as their explicit padding).
PADDED_OPS = frozenset({"Conv2D", "DepthwiseConv2dNative"})
#: Ops whose outputs are never negative (NaN aside), and the fused_ops ending a fused node
#: whose outputs are not: a zero Pad after them may fold into a MaxPool.
NON_NEGATIVE = frozenset({"Relu", "Relu6"})
#: Element types each fused op's kernel takes (its OpDef's T, less what the CPU lacks).
_TYPES = {"Conv2D": FLOAT_TYPES, "DepthwiseConv2dNative": FLOAT_TYPES,
          "MatMul": frozenset({dtypes.float16.as_datatype_enum,
                               dtypes.float32.as_datatype_enum})}


def remapping_enabled(optimizer_options: config_pb2.OptimizerOptions | None,
                      rewrite_options: rewriter_config_pb2.RewriterConfig | None) -> bool:
    """RewriterConfig.remapping ON/OFF decides; DEFAULT follows the optimizer level."""
    toggle = rewrite_options.remapping if rewrite_options is not None else 0
    if toggle == rewriter_config_pb2.RewriterConfig.OFF:
        return False
    if toggle == rewriter_config_pb2.RewriterConfig.ON:
        return True
    level = optimizer_options.opt_level if optimizer_options is not None else 0
    return level >= config_pb2.OptimizerOptions.L1


def _base_step(contraction: Node, nxt: Node):
    """('BiasAdd' or 'FusedBatchNorm', argument inputs, epsilon) when `nxt` can be fused
    after `contraction`, else None."""
    if input_node(nxt, 0) != (contraction, 0):
        return None
    op = nxt.type_string
    if op == "BiasAdd" and attr_s(nxt, "data_format", "NHWC") == "NHWC":
        return "BiasAdd", [input_node(nxt, 1)], 0.0001
    if op in BATCH_NORMS and contraction.type_string != "MatMul":
        if attr_b(nxt, "is_training", True) or attr_s(nxt, "data_format", "NHWC") != "NHWC":
            return None
        if nxt.attr("T").type != dtypes.float32.as_datatype_enum:
            return None
        if any(e.src_output != 0 and not e.dst.is_sink for e in nxt.out_edges):
            return None
        args = [input_node(nxt, i) for i in range(1, 5)]
        if any(a is None or a[0].output_types[a[1]] != nxt.attr("T").type for a in args):
            return None  # V2/V3 statistics of another type than x
        return "FusedBatchNorm", args, attr_f(nxt, "epsilon", 0.0001)
    return None


def _residual_add(bias_add: Node, device: str):
    """(the Add/AddV2 node, its other input) when the bias add's sole consumer adds it to
    another tensor, else None."""
    add = sole_consumer(bias_add)
    if add is None or add.type_string not in ("Add", "AddV2") or \
            add.assigned_device_name != device:
        return None
    ins = [input_node(add, 0), input_node(add, 1)]
    if ins.count((bias_add, 0)) != 1 or None in ins:
        return None
    return add, ins[1] if ins[0] == (bias_add, 0) else ins[0]


def _fusable(node: Node) -> bool:
    op = node.type_string
    if op not in FUSED_OPS:
        return False
    t = node.attr("T")
    if t is None or t.type not in _TYPES[op]:
        return False
    if op == "MatMul":
        return True
    return attr_s(node, "data_format", "NHWC") == "NHWC"


def _fuse(graph: Graph, node: Node, names: set[str]) -> bool:
    """Fuse the chain that starts at `node`, if there is one."""
    device = node.assigned_device_name
    nxt = sole_consumer(node)
    if nxt is None or nxt.assigned_device_name != device or not _valid_explicit(node):
        return False
    base = _base_step(node, nxt)
    if base is None:
        return False
    kind, args, epsilon = base
    chain = [nxt]
    fused_ops = [kind]
    alpha = 0.2
    if kind == "BiasAdd" and node.type_string == "Conv2D":
        addend = _residual_add(nxt, device)
        if addend is not None:
            chain.append(addend[0])
            fused_ops.append("Add")
            args = args + [addend[1]]
    act = sole_consumer(chain[-1])
    swish = None if act is not None or node.type_string == "MatMul" else swish_of(chain[-1])
    if act is not None and act.type_string in ACTIVATIONS and \
            act.assigned_device_name == device and input_node(act, 0) == (chain[-1], 0):
        chain.append(act)
        fused_ops.append(act.type_string)
        if act.type_string == "LeakyRelu":
            alpha = attr_f(act, "alpha", 0.2)
    elif swish is not None and all(n.assigned_device_name == device and n.attr("T") is not None
                                   and n.attr("T").type == node.attr("T").type for n in swish):
        chain += swish
        fused_ops.append("_MklSwish")
    fused_op = FUSED_OPS[node.type_string]
    op_def = op_def_registry.get(fused_op)
    wanted = {a.name for a in op_def.attr}
    attrs = {k: v for k, v in node.def_.attr.items() if k in wanted}
    if node.type_string == "DepthwiseConv2dNative" and attr_s(node, "padding") == "EXPLICIT":
        # TF's fused depthwise op has no explicit padding: VALID, and the pads privately
        pads = list(node.attr("explicit_paddings").list.i)
        attrs["padding"] = lambda a: setattr(a, "s", b"VALID")
        attrs[FOLDED_PADDINGS] = lambda a, pads=pads: a.list.i.extend(pads)
    t = node.attr("T").type
    attrs.update({
        "num_args": lambda a: setattr(a, "i", len(args)),
        "fused_ops": lambda a: a.list.s.extend(o.encode() for o in fused_ops),
        "epsilon": lambda a: setattr(a, "f", epsilon),
        "leakyrelu_alpha": lambda a: setattr(a, "f", alpha),
    })
    if "TArgs" in wanted:
        attrs["TArgs"] = lambda a: a.list.type.extend([t] * len(args))
    inputs = [input_node(node, 0), input_node(node, 1)] + args
    last = chain[-1]
    fused = make_node(graph, last, unique_name(names, last.name + "/fused"), fused_op, inputs,
                      attrs)
    take_over(graph, last, fused, [node] + chain)
    for n in [node] + chain:
        graph.remove_node(n)
    names.discard(fused.name)
    fused.def_.name = last.name
    return True


def _spatial_zero_pads(pad: Node) -> list[int] | None:
    """A Pad's paddings as Conv2D's explicit_paddings (NHWC, 8 values) when it pads the
    spatial dimensions only, with zeros, by a Const; else None."""
    if pad.type_string == "PadV2":
        value = input_node(pad, 2)
        v = const_value(value[0]) if value is not None and value[1] == 0 else None
        if v is None or v.size != 1 or float(v.reshape(())) != 0.0:
            return None
    elif pad.type_string != "Pad":
        return None
    src = input_node(pad, 1)
    paddings = const_value(src[0]) if src is not None and src[1] == 0 else None
    if paddings is None or paddings.shape != (4, 2) or (paddings < 0).any():
        return None
    if paddings[0].any() or paddings[3].any():
        return None
    return [int(v) for v in paddings.reshape(-1)]


def _sole_pad_input(node: Node) -> Node | None:
    """The node feeding `node`'s input 0 when `node` is its only consumer, on its device."""
    src = input_node(node, 0)
    if src is None or src[1] != 0 or sole_consumer(src[0]) is not node or \
            src[0].assigned_device_name != node.assigned_device_name:
        return None
    return src[0]


def _valid_explicit(node: Node) -> bool:
    """Whether `node`'s padding and explicit_paddings (4-D) are what its kernel accepts
    (framework/padding.py): a node the kernel would refuse is left as it is, so that its
    error names it."""
    if attr_s(node, "padding") != "EXPLICIT":
        return True
    return explicit_paddings_error("EXPLICIT", node.def_.attr["explicit_paddings"].list.i, 4,
                                   attr_s(node, "data_format", "NHWC") == "NCHW") is None


def _plus_explicit(node: Node, pads: list[int]) -> list[int] | None:
    """`pads` plus `node`'s own explicit paddings, where its padding is EXPLICIT; None
    when those are not valid (`_valid_explicit`)."""
    if attr_s(node, "padding") != "EXPLICIT":
        return pads
    if not _valid_explicit(node):
        return None
    return [a + b for a, b in zip(pads, node.def_.attr["explicit_paddings"].list.i,
                                  strict=True)]


def _fold_pad_into(graph: Graph, node: Node, pad: Node, pads: list[int], inputs: list,
                   names: set) -> None:
    """Replace `node` and the `pad` before it by `node` with EXPLICIT `pads`, reading
    `inputs`, under `node`'s name."""
    attrs = {k: v for k, v in node.def_.attr.items() if k != "explicit_paddings"}
    attrs["padding"] = lambda a: setattr(a, "s", b"EXPLICIT")
    attrs["explicit_paddings"] = lambda a, pads=pads: a.list.i.extend(pads)
    folded = make_node(graph, node, unique_name(names, node.name + "/padded"),
                       node.type_string, inputs, attrs)
    take_over(graph, node, folded, [pad, node])
    graph.remove_node(node)
    graph.remove_node(pad)
    names.discard(folded.name)
    folded.def_.name = node.name


def fold_pads(graph: Graph) -> bool:
    """Pad + Conv2D or DepthwiseConv2dNative -> the convolution with explicit padding;
    True on a change."""
    names = {n.name for n in graph.op_nodes()}
    changed = False
    for conv in list(graph.op_nodes()):
        if graph.nodes[conv.id] is None or conv.type_string not in PADDED_OPS or \
                not _fusable(conv) or attr_s(conv, "padding") not in ("VALID", "EXPLICIT"):
            continue
        pad = _sole_pad_input(conv)
        pads = None if pad is None else _spatial_zero_pads(pad)
        pads = None if pads is None else _plus_explicit(conv, pads)
        if pads is None:
            continue
        _fold_pad_into(graph, conv, pad, pads, [input_node(pad, 0), input_node(conv, 1)],
                       names)
        changed = True
    return changed


def _non_negative(src: tuple[Node, int]) -> bool:
    """Whether the tensor is a Relu's or Relu6's output (or a fused node's ending in one)."""
    node, slot = src
    if slot != 0:
        return False
    if node.type_string in NON_NEGATIVE:
        return True
    fused_ops = node.attr("fused_ops")
    return node.type_string in FUSED_OPS.values() and fused_ops is not None and \
        len(fused_ops.list.s) > 0 and fused_ops.list.s[-1].decode() in NON_NEGATIVE


def _max_pool_pads(pool: Node, pad: Node) -> list[int] | None:
    """The explicit paddings of `pool` with `pad`'s folded in, when that is exact: a zero
    spatial Pad of a non-negative tensor, a spatial window, each side's pad under the
    window's size (so every window holds an input element); else None."""
    pads = _spatial_zero_pads(pad)
    src = input_node(pad, 0)
    if pads is None or src is None or not _non_negative(src):
        return None
    ksize, strides = list(pool.attr("ksize").list.i), list(pool.attr("strides").list.i)
    if len(ksize) != 4 or len(strides) != 4 or ksize[0] != 1 or ksize[3] != 1 or \
            strides[0] != 1 or strides[3] != 1:
        return None
    pads = _plus_explicit(pool, pads)
    if pads is None or any(pads[i] >= ksize[i // 2] for i in range(2, 6)):
        return None
    return pads


def fold_max_pool_pads(graph: Graph) -> bool:
    """Pad (of a Relu's output) + MaxPool -> the MaxPool with explicit padding; True on a
    change."""
    names = {n.name for n in graph.op_nodes()}
    changed = False
    for pool in list(graph.op_nodes()):
        if graph.nodes[pool.id] is None or pool.type_string != "MaxPool" or \
                attr_s(pool, "data_format", "NHWC") != "NHWC" or \
                attr_s(pool, "padding") not in ("VALID", "EXPLICIT") or \
                pool.attr("T") is None or pool.attr("T").type not in FLOAT_TYPES:
            continue
        pad = _sole_pad_input(pool)
        pads = None if pad is None else _max_pool_pads(pool, pad)
        if pads is None:
            continue
        _fold_pad_into(graph, pool, pad, pads, [input_node(pad, 0)], names)
        changed = True
    return changed


def fuse_contractions(graph: Graph) -> bool:
    """Fuse every contraction + bias/batch norm (+ activation) chain; True on a change."""
    names = {n.name for n in graph.op_nodes()}
    changed = False
    for node in list(graph.op_nodes()):
        if graph.nodes[node.id] is not None and _fusable(node) and _fuse(graph, node, names):
            changed = True
    return changed


def remap(graph: Graph, optimizer_options: config_pb2.OptimizerOptions | None = None,
          rewrite_options: rewriter_config_pb2.RewriterConfig | None = None,
          device_type: str = "CPU") -> bool:
    """Fold batch norms, then fuse (contraction chains, then batch norm + Relu), on a CPU
    partition when the config asks for it."""
    if device_type != "CPU" or not remapping_enabled(optimizer_options, rewrite_options):
        return False
    changed = fold_batch_norms(graph)
    changed = fold_pads(graph) or changed
    changed = fold_max_pool_pads(graph) or changed
    changed = forward_identity_n(graph) or changed
    changed = fuse_contractions(graph) or changed
    return fuse_batch_norm_relus(graph) or changed
