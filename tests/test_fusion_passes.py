"""The remapper's passes (aioflow/passes/fold_batch_norm.py, remapper.py) and the fused
kernels (aioflow/kernels/nn/fused_kernels.py): graphs run with and without the fusions give the same
values (and NumPy's), the passes rewrite exactly the patterns they should, the session's
config switches them, and the partition graphs show the fused ops."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format

import aioflow as af
from aioflow.framework import errors, op_def_registry
from aioflow.framework.op_defs.fused_ops import FOLDED_PADDINGS
from aioflow.proto import config_pb2, graph_pb2, op_def_pb2, rewriter_config_pb2

TF_OPDEFS = [
    (
        'name: "_FusedConv2D" input_arg { name: "input" type_attr: "T" } input_arg { name: '
        '"filter" type_attr: "T" } input_arg { name: "args" type_list_attr: "TArgs" } input_arg'
        ' { name: "host_args" type: DT_FLOAT number_attr: "num_host_args" } output_arg { name: '
        '"output" type_attr: "T" } attr { name: "T" type: "type" allowed_values { list { type: '
        'DT_HALF type: DT_FLOAT type: DT_DOUBLE type: DT_INT8 type: DT_QINT8 } } } attr { name:'
        ' "TArgs" type: "list(type)" has_minimum: true minimum: 1 } attr { name: "num_args" '
        'type: "int" has_minimum: true } attr { name: "num_host_args" type: "int" default_value'
        ' { i: 0 } has_minimum: true } attr { name: "strides" type: "list(int)" } attr { name: '
        '"padding" type: "string" allowed_values { list { s: "SAME" s: "VALID" s: "EXPLICIT" } '
        '} } attr { name: "explicit_paddings" type: "list(int)" default_value { list { } } } '
        'attr { name: "data_format" type: "string" default_value { s: "NHWC" } allowed_values {'
        ' list { s: "NHWC" s: "NCHW" s: "NCHW_VECT_C" } } } attr { name: "filter_format" type: '
        '"string" default_value { s: "HWIO" } allowed_values { list { s: "HWIO" s: "OIHW" s: '
        '"OIHW_VECT_I" } } } attr { name: "dilations" type: "list(int)" default_value { list { '
        'i: 1 i: 1 i: 1 i: 1 } } } attr { name: "use_cudnn_on_gpu" type: "bool" default_value {'
        ' b: true } } attr { name: "fused_ops" type: "list(string)" default_value { list { } } '
        '} attr { name: "epsilon" type: "float" default_value { f: 0.0001 } } attr { name: '
        '"leakyrelu_alpha" type: "float" default_value { f: 0.2 } }'
    ),
    (
        'name: "_FusedDepthwiseConv2dNative" input_arg { name: "input" type_attr: "T" } '
        'input_arg { name: "filter" type_attr: "T" } input_arg { name: "args" type_attr: "T" '
        'number_attr: "num_args" } output_arg { name: "output" type_attr: "T" } attr { name: '
        '"T" type: "type" allowed_values { list { type: DT_HALF type: DT_BFLOAT16 type: '
        'DT_FLOAT type: DT_DOUBLE } } } attr { name: "num_args" type: "int" has_minimum: true }'
        ' attr { name: "strides" type: "list(int)" } attr { name: "padding" type: "string" '
        'allowed_values { list { s: "SAME" s: "VALID" } } } attr { name: "data_format" type: '
        '"string" default_value { s: "NHWC" } allowed_values { list { s: "NHWC" s: "NCHW" } } }'
        ' attr { name: "dilations" type: "list(int)" default_value { list { i: 1 i: 1 i: 1 i: 1'
        ' } } } attr { name: "fused_ops" type: "list(string)" default_value { list { } } } attr'
        ' { name: "epsilon" type: "float" default_value { f: 0.0001 } } attr { name: '
        '"leakyrelu_alpha" type: "float" default_value { f: 0.2 } }'
    ),
    (
        'name: "_FusedMatMul" input_arg { name: "a" type_attr: "T" } input_arg { name: "b" '
        'type_attr: "T" } input_arg { name: "args" type_attr: "T" number_attr: "num_args" } '
        'output_arg { name: "product" type_attr: "T" } attr { name: "transpose_a" type: "bool" '
        'default_value { b: false } } attr { name: "transpose_b" type: "bool" default_value { '
        'b: false } } attr { name: "T" type: "type" allowed_values { list { type: DT_BFLOAT16 '
        'type: DT_HALF type: DT_FLOAT } } } attr { name: "num_args" type: "int" has_minimum: '
        'true } attr { name: "fused_ops" type: "list(string)" default_value { list { } } } attr'
        ' { name: "epsilon" type: "float" default_value { f: 0.0001 } } attr { name: '
        '"leakyrelu_alpha" type: "float" default_value { f: 0.2 } }'
    ),
    (
        'name: "_FusedBatchNormEx" input_arg { name: "x" type_attr: "T" } input_arg { name: '
        '"scale" type_attr: "U" } input_arg { name: "offset" type_attr: "U" } input_arg { '
        'name: "mean" type_attr: "U" } input_arg { name: "variance" type_attr: "U" } '
        'input_arg { name: "side_input" type_attr: "T" number_attr: "num_side_inputs" } '
        'output_arg { name: "y" type_attr: "T" } output_arg { name: "batch_mean" type_attr: '
        '"U" } output_arg { name: "batch_variance" type_attr: "U" } output_arg { name: '
        '"reserve_space_1" type_attr: "U" } output_arg { name: "reserve_space_2" type_attr: '
        '"U" } output_arg { name: "reserve_space_3" type_attr: "U" } attr { name: "T" type: '
        '"type" allowed_values { list { type: DT_HALF type: DT_FLOAT type: DT_BFLOAT16 } } } '
        'attr { name: "U" type: "type" allowed_values { list { type: DT_FLOAT } } } attr { '
        'name: "epsilon" type: "float" default_value { f: 0.0001 } } attr { name: '
        '"exponential_avg_factor" type: "float" default_value { f: 1 } } attr { name: '
        '"num_side_inputs" type: "int" default_value { i: 0 } has_minimum: true } attr { name:'
        ' "activation_mode" type: "string" default_value { s: "Identity" } } attr { name: '
        '"data_format" type: "string" default_value { s: "NHWC" } allowed_values { list { s: '
        '"NHWC" s: "NCHW" } } } attr { name: "is_training" type: "bool" default_value { b: '
        'true } }'
    ),
]

RNG = np.random.default_rng(7)
OFF = rewriter_config_pb2.RewriterConfig.OFF
ON = rewriter_config_pb2.RewriterConfig.ON


def _f32(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def _config(level=None, remapping=None) -> config_pb2.ConfigProto:
    config = config_pb2.ConfigProto()
    if level is not None:
        config.graph_options.optimizer_options.opt_level = level
    if remapping is not None:
        config.graph_options.rewrite_options.remapping = remapping
    return config


async def _run(graph, fetches, feeds, config=None):
    """(values, the partition graphs' nodes as (name, op, fused_ops) by name)."""
    md = af.RunMetadata()
    async with af.Session(graph=graph, config=config) as sess:
        values = await sess.run(fetches, feeds, run_metadata=md,
                                options=af.RunOptions(output_partition_graphs=True))
    nodes = {}
    for part in md.partition_graphs:
        for n in part.node:
            ops = [s.decode() for s in n.attr["fused_ops"].list.s] if "fused_ops" in n.attr \
                else None
            nodes[n.name] = (n.op, ops, n)
    return values, nodes


def _ops(nodes) -> list[str]:
    return sorted(op for op, _, _ in nodes.values())


async def _fused_and_plain(graph, fetches, feeds):
    fused = await _run(graph, fetches, feeds)
    plain = await _run(graph, fetches, feeds, _config(remapping=OFF))
    return fused, plain


# -- OpDefs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", TF_OPDEFS)
def test_fused_op_defs_equal_tensorflows(text):
    want = text_format.Parse(text, op_def_pb2.OpDef())
    assert op_def_registry.get(want.name) == want


# -- batch norm folding and conv fusion -----------------------------------------------------------

def _conv_bn_graph(activation=af.nn.relu, is_training=False, filter_const=True,
                   depthwise=False):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 9, 9, 4], name="x")
        shape = (3, 3, 4, 2) if depthwise else (3, 3, 4, 6)
        w = af.constant(_f32(*shape), name="w") if filter_const else \
            af.placeholder(af.float32, shape, name="w")
        c = shape[2] * shape[3] if depthwise else shape[3]
        if depthwise:
            y = af.nn.depthwise_conv2d_native(x, w, [1, 2, 2, 1], "SAME", name="conv")
        else:
            y = af.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", name="conv")
        scale, offset = af.constant(_f32(c, low=0.5, high=2)), af.constant(_f32(c))
        mean, var = af.constant(_f32(c)), af.constant(_f32(c, low=0.1, high=2))
        if is_training:
            bn = af.nn.fused_batch_norm(y, scale, offset, epsilon=0.01, is_training=True,
                                        name="bn")
        else:
            bn = af.nn.fused_batch_norm(y, scale, offset, mean, var, epsilon=0.01,
                                        is_training=False, name="bn")
        out = activation(bn[0], name="act") if activation else bn[0]
    feeds = {x: _f32(2, 9, 9, 4)}
    if not filter_const:
        feeds[w] = _f32(*shape)
    return g, out, feeds


async def test_batch_norm_folds_into_the_conv_and_the_chain_is_fused():
    g, out, feeds = _conv_bn_graph()
    (fused, nodes), (plain, plain_nodes) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    assert nodes["act"][:2] == ("_FusedConv2D", ["BiasAdd", "Relu"])
    assert nodes["act"][2].attr["num_args"].i == 1
    assert "FusedBatchNormV3" not in _ops(nodes) and "Conv2D" not in _ops(nodes)
    assert "FusedBatchNormV3" in _ops(plain_nodes) and "Conv2D" in _ops(plain_nodes)


async def test_depthwise_batch_norm_folds_and_fuses():
    g, out, feeds = _conv_bn_graph(activation=af.nn.relu6, depthwise=True)
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    assert nodes["act"][:2] == ("_FusedDepthwiseConv2dNative", ["BiasAdd", "Relu6"])


async def test_training_batch_norm_and_its_relu_become_fused_batch_norm_ex():
    """As TF 2.21's remapper on CPU (its partition graph of a tf.layers training step:
    _MklNativeFusedBatchNormEx, activation_mode Relu, named as the batch norm): the
    convolution is left alone (a training batch norm cannot be folded into it), the
    batch norm and its Relu become one _FusedBatchNormEx with the batch norm's name."""
    g, out, feeds = _conv_bn_graph(is_training=True)
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)
    assert "Conv2D" in _ops(nodes) and "Relu" not in _ops(nodes)
    assert "FusedBatchNormV3" not in _ops(nodes)
    op, _, node = nodes["bn"]
    assert op == "_FusedBatchNormEx"
    assert node.attr["activation_mode"].s == b"Relu" and node.attr["num_side_inputs"].i == 0
    assert node.attr["epsilon"].f == pytest.approx(0.01) and node.attr["is_training"].b
    assert node.attr["U"].type == af.float32.as_datatype_enum


def _bn_relu_graph(fetch_statistics=False, relu_readers=1, control=False):
    """x -> FusedBatchNormV3 (training) -> Relu -> readers; optionally the batch mean
    fetched too, the y read by another op, or a control edge out of the batch norm."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [4, 5, 5, 3], name="x")
        scale, offset = af.constant(_f32(3, low=0.5, high=2)), af.constant(_f32(3))
        y, mean, _ = af.nn.fused_batch_norm(x, scale, offset, epsilon=0.001,
                                            is_training=True, name="bn")
        act = af.nn.relu(y, name="act")
        fetches = [af.identity(act, name="out")]
        if relu_readers > 1:
            fetches.append(af.multiply(y, 2.0, name="other"))
        if fetch_statistics:
            fetches.append(mean)
        if control:
            with g.control_dependencies([y.op]):
                fetches.append(af.constant(1.0, name="after"))
    return g, fetches, {x: _f32(4, 5, 5, 3, low=-2, high=2)}


@pytest.mark.parametrize("variant, fused_expected", [
    (dict(), True), (dict(fetch_statistics=True), True), (dict(relu_readers=2), False),
    (dict(control=True), False)])
async def test_batch_norm_relu_fusion_conditions(variant, fused_expected):
    """The batch statistics may have readers (the moving averages, the gradient); a
    second reader of y, or a control edge out of the batch norm, keeps the pair apart."""
    g, fetches, feeds = _bn_relu_graph(**variant)
    (fused, nodes), (plain, _) = await _fused_and_plain(g, fetches, feeds)
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert (nodes["bn"][0] == "_FusedBatchNormEx") == fused_expected
    assert ("act" not in nodes) == fused_expected


async def test_fused_batch_norm_ex_keeps_the_relus_output_fetchable():
    """A fetch of the Relu itself (its name gone from the optimized graph) still gets
    the fused node's y."""
    g, fetches, feeds = _bn_relu_graph()
    act = g.get_tensor_by_name("act:0")
    (fused, nodes), (plain, _) = await _fused_and_plain(g, act, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)
    assert nodes["bn"][0] == "_FusedBatchNormEx"


async def test_a_filter_that_is_no_const_is_not_folded_but_the_batch_norm_is_fused():
    # TF's remapper: Conv2D + FusedBatchNorm (inference) + activation as one _FusedConv2D
    # with the batch norm's four arguments.
    g, out, feeds = _conv_bn_graph(activation=af.nn.elu, filter_const=False)
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    op, fused_ops, node = nodes["act"]
    assert (op, fused_ops) == ("_FusedConv2D", ["FusedBatchNorm", "Elu"])
    assert node.attr["num_args"].i == 4
    assert node.attr["epsilon"].f == pytest.approx(0.01)


async def test_an_intermediate_with_another_consumer_is_not_fused():
    g, out, feeds = _conv_bn_graph()
    conv = g.get_tensor_by_name("conv:0")
    (fused, nodes), (plain, _) = await _fused_and_plain(g, [out, conv], feeds)
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # the convolution stays alone; its batch norm and Relu still fuse with each other
    assert "Conv2D" in _ops(nodes) and "_FusedConv2D" not in _ops(nodes)
    assert {"FusedBatchNormV3", "Relu"}.isdisjoint(_ops(nodes))
    assert "_FusedBatchNormEx" in _ops(nodes)


def _residual_graph(activation=af.nn.relu, addend_shape=(2, 9, 9, 6), swap=False):
    """x -> conv -> bias add -> + shortcut [-> activation]: ResNet's residual connection."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 9, 9, 4], name="x")
        shortcut = af.placeholder(af.float32, None, name="shortcut")
        y = af.nn.conv2d(x, af.constant(_f32(3, 3, 4, 6)), [1, 1, 1, 1], "SAME", name="conv")
        y = af.nn.bias_add(y, af.constant(_f32(6)), name="bias")
        y = af.add(shortcut, y, name="add") if swap else af.add(y, shortcut, name="add")
        out = activation(y, name="act") if activation else y
    return g, out, {x: _f32(2, 9, 9, 4), shortcut: _f32(*addend_shape)}


@pytest.mark.parametrize("activation, fused_ops, swap", [
    (af.nn.relu, ["BiasAdd", "Add", "Relu"], False),
    (af.nn.relu6, ["BiasAdd", "Add", "Relu6"], True),
    (None, ["BiasAdd", "Add"], False),
])
async def test_residual_add_fuses_into_the_conv(activation, fused_ops, swap):
    g, out, feeds = _residual_graph(activation, swap=swap)
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    last = "act" if activation else "add"
    assert nodes[last][:2] == ("_FusedConv2D", fused_ops)
    assert nodes[last][2].attr["num_args"].i == 2
    assert not {"AddV2", "Relu", "Relu6", "BiasAdd", "Conv2D"} & set(_ops(nodes))


async def test_residual_addend_that_broadcasts_gives_adds_values():
    g, out, feeds = _residual_graph(addend_shape=(1, 1, 6))
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    assert nodes["act"][:2] == ("_FusedConv2D", ["BiasAdd", "Add", "Relu"])


async def test_residual_addend_of_an_incompatible_shape_is_adds_error():
    g, out, feeds = _residual_graph(addend_shape=(2, 9, 9, 5))
    with pytest.raises(errors.InvalidArgumentError, match="Incompatible shapes"):
        await _run(g, out, feeds)


def _pad_conv_graph(paddings, constant=0.0, explicit=None):
    channels = 3 + sum(paddings[3])
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 9, 9, 3], name="x")
        p = af.pad(x, paddings, constant_values=constant, name="pad")
        w = af.constant(_f32(7, 7, channels, 4))
        padding = [[0, 0], explicit[2:4], explicit[4:6], [0, 0]] if explicit else "VALID"
        y = af.nn.conv2d(p, w, [1, 2, 2, 1], padding, name="conv")
        out = af.nn.relu(af.nn.bias_add(y, af.constant(_f32(4))), name="act")
    return g, out, {x: _f32(2, 9, 9, 3)}


@pytest.mark.parametrize("explicit", [None, [0, 0, 1, 0, 0, 2, 0, 0]])
async def test_zero_pad_folds_into_the_convs_explicit_padding(explicit):
    g, out, feeds = _pad_conv_graph([[0, 0], [3, 3], [2, 3], [0, 0]], explicit=explicit)
    (fused, nodes), (plain, plain_nodes) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    assert "Pad" in _ops(plain_nodes) and "Pad" not in _ops(nodes)
    op, fused_ops, node = nodes["act"]
    assert (op, fused_ops) == ("_FusedConv2D", ["BiasAdd", "Relu"])
    assert node.attr["padding"].s == b"EXPLICIT"
    want = [0, 0, 3, 3, 2, 3, 0, 0]
    if explicit:
        want = [a + b for a, b in zip(want, explicit, strict=True)]
    assert list(node.attr["explicit_paddings"].list.i) == want


def _pad_depthwise_graph(paddings, stride, fused=True):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 9, 9, 3], name="x")
        p = af.pad(x, paddings, name="pad")
        w = af.constant(_f32(3, 3, 3, 2))
        y = af.nn.depthwise_conv2d_native(p, w, [1, stride, stride, 1], "VALID", name="conv")
        out = af.nn.relu6(af.nn.bias_add(y, af.constant(_f32(6))), name="act") if fused \
            else af.identity(y, name="act")
    return g, out, {x: _f32(2, 9, 9, 3, low=-3, high=3)}


@pytest.mark.parametrize("paddings, stride", [
    ([[0, 0], [0, 1], [0, 1], [0, 0]], 2),   # MobileNetV2's stride-2 blocks (Keras)
    ([[0, 0], [1, 2], [2, 0], [0, 0]], 1),
])
async def test_zero_pad_folds_into_the_fused_depthwise_convs_private_padding(paddings, stride):
    """TF's _FusedDepthwiseConv2dNative has no explicit padding: the folded pads ride in
    the private attr, padding VALID, and the values are the Pad's and the VALID
    convolution's (a 9x9 input: stride 2 over an odd size, stride 1 with uneven pads)."""
    g, out, feeds = _pad_depthwise_graph(paddings, stride)
    (fused, nodes), (plain, plain_nodes) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    assert "Pad" in _ops(plain_nodes) and "Pad" not in _ops(nodes)
    op, fused_ops, node = nodes["act"]
    assert (op, fused_ops) == ("_FusedDepthwiseConv2dNative", ["BiasAdd", "Relu6"])
    assert node.attr["padding"].s == b"VALID"
    want = [v for pair in paddings for v in pair]
    assert list(node.attr[FOLDED_PADDINGS].list.i) == want


async def test_zero_pad_folds_into_a_lone_depthwise_convs_explicit_padding():
    g, out, feeds = _pad_depthwise_graph([[0, 0], [0, 1], [1, 1], [0, 0]], 2, fused=False)
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    op, _, node = nodes["conv"]
    assert op == "DepthwiseConv2dNative" and "Pad" not in _ops(nodes)
    assert node.attr["padding"].s == b"EXPLICIT"
    assert list(node.attr["explicit_paddings"].list.i) == [0, 0, 0, 1, 1, 1, 0, 0]


@pytest.mark.parametrize("bad", [[1, 0, 1, 1, 1, 1, 0, 0], [0, 0, -1, 1, 1, 1, 0, 0],
                                 [0, 0, 1, 1, 1, 1]])
async def test_invalid_explicit_paddings_are_neither_folded_nor_fused(bad):
    """A depthwise convolution whose explicit_paddings its kernel refuses (batch padded,
    negative, not 8 values) keeps its Pad and its BiasAdd/Relu6: the error is the
    kernel's, naming the convolution (TF's executor names the node it could not build),
    not the fused node's (the chain's last name) or nothing."""
    g, _, _ = _pad_depthwise_graph([[0, 0], [0, 1], [0, 1], [0, 0]], 2)
    gd = g.as_graph_def()
    conv = next(n for n in gd.node if n.name == "conv")
    conv.attr["padding"].s = b"EXPLICIT"
    conv.attr["explicit_paddings"].list.i.extend(bad)
    g2 = af.Graph()
    with g2.as_default():
        af.import_graph_def(gd, name="")
    async with af.Session(graph=g2) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="explicit") as info:
            await sess.run("act:0", {"x:0": _f32(2, 9, 9, 3)})
    assert info.value.node_def.name == "conv"
    assert "{{node conv}}" in info.value.message


def _pad_max_pool_graph(paddings, activation=af.nn.relu, ksize=3, stride=2):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 9, 9, 3], name="x")
        p = af.pad(activation(x), paddings, name="pad")
        out = af.nn.max_pool(p, [1, ksize, ksize, 1], [1, stride, stride, 1], "VALID",
                             name="pool")
    return g, out, {x: _f32(2, 9, 9, 3, low=-3, high=1)}


@pytest.mark.parametrize("paddings, activation", [
    ([[0, 0], [1, 1], [1, 1], [0, 0]], af.nn.relu),    # ResNet's pool1_pad + pool1_pool
    ([[0, 0], [2, 0], [1, 2], [0, 0]], af.nn.relu6),
])
async def test_zero_pad_of_a_relu_folds_into_the_max_pools_explicit_padding(paddings,
                                                                             activation):
    """The Relu's output is never below the Pad's zeros, so the MaxPool's own padding
    (which no window's max reads) gives the padded graph's values (mostly negative inputs:
    windows of zeros at the borders)."""
    g, out, feeds = _pad_max_pool_graph(paddings, activation)
    (fused, nodes), (plain, plain_nodes) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_array_equal(fused, plain)
    assert "Pad" in _ops(plain_nodes) and "Pad" not in _ops(nodes)
    op, _, node = nodes["pool"]
    assert op == "MaxPool" and node.attr["padding"].s == b"EXPLICIT"
    assert list(node.attr["explicit_paddings"].list.i) == [v for p in paddings for v in p]


@pytest.mark.parametrize("activation, ksize", [
    (af.nn.elu, 3),    # may be negative: the Pad's zeros can be a window's max
    (af.nn.relu, 2),   # a pad of 2 under a 2x2 window: a window of padding alone
])
async def test_other_pads_before_a_max_pool_are_left_alone(activation, ksize):
    g, out, feeds = _pad_max_pool_graph([[0, 0], [2, 1], [1, 1], [0, 0]], activation, ksize)
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_array_equal(fused, plain)
    assert "Pad" in _ops(nodes) and nodes["pool"][2].attr["padding"].s == b"VALID"


@pytest.mark.parametrize("paddings, constant", [
    ([[0, 0], [1, 1], [1, 1], [0, 0]], 1.0),   # not zeros
    ([[0, 0], [1, 1], [1, 1], [0, 1]], 0.0),   # the channels padded
])
async def test_other_pads_are_left_alone(paddings, constant):
    g, out, feeds = _pad_conv_graph(paddings, constant)
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-5)
    assert {"Pad", "PadV2"} & set(_ops(nodes))
    assert nodes["act"][2].attr["padding"].s == b"VALID"


async def test_level_l0_leaves_the_graph_and_remapping_on_overrides_it():
    g, out, feeds = _conv_bn_graph()
    _, nodes = await _run(g, out, feeds, _config(level=config_pb2.OptimizerOptions.L0))
    assert "Conv2D" in _ops(nodes) and "_FusedConv2D" not in _ops(nodes)
    _, nodes = await _run(g, out, feeds, _config(level=config_pb2.OptimizerOptions.L0,
                                                  remapping=ON))
    assert nodes["act"][0] == "_FusedConv2D"


async def test_keras_style_batch_norm_mul_and_add_fold():
    # Keras 3 writes an inference batch norm as x * m + (beta - mean * m).
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 6, 6, 3], name="x")
        y = af.nn.conv2d(x, af.constant(_f32(1, 1, 3, 5)), [1, 1, 1, 1], "VALID", name="conv")
        y = af.nn.bias_add(y, af.constant(_f32(5)), name="bias")
        y = af.multiply(y, af.constant(_f32(5, low=0.5, high=2)), name="mul")
        y = af.add(y, af.constant(_f32(1, 1, 1, 5)), name="add")
        out = af.nn.relu6(y, name="act")
    feeds = {x: _f32(2, 6, 6, 3, low=-4, high=4)}
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)
    assert nodes["act"][:2] == ("_FusedConv2D", ["BiasAdd", "Relu6"])
    assert not {"Mul", "AddV2", "BiasAdd"} & set(_ops(nodes))


async def test_a_mul_that_is_not_per_channel_is_not_folded():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 6, 6, 3], name="x")
        y = af.nn.conv2d(x, af.constant(_f32(1, 1, 3, 5)), [1, 1, 1, 1], "VALID", name="conv")
        out = af.multiply(y, af.constant(_f32(6, 1, 5)), name="mul")  # varies along W
    feeds = {x: _f32(1, 6, 6, 3)}
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, feeds)
    np.testing.assert_allclose(fused, plain, rtol=1e-6)
    assert {"Conv2D", "Mul"} <= set(_ops(nodes))


def _keras_swish(t, name):
    """Keras 3's silu as a frozen graph has it: x * sigmoid(beta * x), beta a Const 1.0,
    through its custom gradient's IdentityN (x * sigmoid(beta x), x, beta)."""
    beta = af.constant(1.0, name=name + "_beta")
    y = af.multiply(t, af.sigmoid(af.multiply(beta, t)), name=name + "_mul")
    return af.identity_n([y, t, beta], name=name)[0]


@pytest.mark.parametrize("act,fused_name", [
    (lambda t, name: af.nn.relu(t, name=name), "Relu"),
    (lambda t, name: af.nn.relu6(t, name=name), "Relu6"),
    (lambda t, name: af.nn.elu(t, name=name), "Elu"),
    (lambda t, name: af.nn.leaky_relu(t, alpha=0.3, name=name), "LeakyRelu"),
    (lambda t, name: af.multiply(t, af.sigmoid(t), name=name), "_MklSwish"),
    (lambda t, name: af.multiply(af.sigmoid(t), t, name=name), "_MklSwish"),
    (lambda t, name: _keras_swish(t, name), "_MklSwish"),
    (None, None),
])
async def test_conv_bias_activation_fuse_to_numpys_values(act, fused_name):
    g = af.Graph()
    xv, wv, bv = _f32(2, 7, 7, 3, low=-3, high=3), _f32(3, 3, 3, 4), _f32(4)
    with g.as_default():
        x = af.placeholder(af.float32, [None, 7, 7, 3], name="x")
        w = af.placeholder(af.float32, [3, 3, 3, 4], name="w")  # any filter: no folding
        y = af.nn.conv2d(x, w, [1, 2, 2, 1], "VALID", name="conv")
        y = af.nn.bias_add(y, af.constant(bv), name="bias")
        out = act(y, "act") if act else y
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, {x: xv, w: wv})
    last = "act" if act else "bias"
    if "act" not in nodes and "act_mul" in nodes:  # Keras': its IdentityN forwarded
        last = "act_mul"
        assert not {"IdentityN", "Sigmoid", "Mul"} & set(_ops(nodes))
    assert nodes[last][:2] == ("_FusedConv2D", ["BiasAdd"] + ([fused_name] if act else []))
    if fused_name == "LeakyRelu":
        assert nodes[last][2].attr["leakyrelu_alpha"].f == pytest.approx(0.3)
    # NumPy: the 3x3 stride-2 VALID convolution, the bias, the activation.
    patches = np.stack([xv[:, i:i + 5:2, j:j + 5:2, :] for i in range(3) for j in range(3)], 3)
    want = np.einsum("nhwkc,kco->nhwo", patches, wv.reshape(9, 3, 4)) + bv
    want = {"Relu": lambda v: np.maximum(v, 0), "Relu6": lambda v: np.clip(v, 0, 6),
            "Elu": lambda v: np.where(v > 0, v, np.expm1(np.minimum(v, 0))),
            "LeakyRelu": lambda v: np.where(v > 0, v, 0.3 * v),
            "_MklSwish": lambda v: v / (1 + np.exp(-v)),
            None: lambda v: v}[fused_name](want)
    np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fused, plain, rtol=1e-6, atol=1e-6)


async def test_a_swish_whose_value_is_used_elsewhere_is_not_fused():
    """x * sigmoid(x) fuses only when the Sigmoid and the Mul are the value's only
    consumers: a third one (here fetched) leaves the conv's chain at its bias."""
    g = af.Graph()
    xv, wv, bv = _f32(1, 5, 5, 2), _f32(1, 1, 2, 3), _f32(3)
    with g.as_default():
        x = af.placeholder(af.float32, [None, 5, 5, 2], name="x")
        w = af.placeholder(af.float32, [1, 1, 2, 3], name="w")
        y = af.nn.bias_add(af.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"), af.constant(bv),
                           name="bias")
        s = af.multiply(y, af.sigmoid(y), name="swish")
        t = af.add(y, 1.0, name="other")
    (fused, nodes), (plain, _) = await _fused_and_plain(g, [s, t], {x: xv, w: wv})
    assert nodes["bias"][:2] == ("_FusedConv2D", ["BiasAdd"])
    assert nodes["swish"][0] == "Mul"
    np.testing.assert_allclose(fused[0], plain[0], rtol=1e-6)


async def test_a_keras_swish_with_beta_other_than_one_is_not_fused():
    """x * sigmoid(2 x) is not TF's swish: the chain stops at its bias; values kept."""
    g = af.Graph()
    xv, wv, bv = _f32(1, 5, 5, 2), _f32(1, 1, 2, 3), _f32(3)
    with g.as_default():
        x = af.placeholder(af.float32, [None, 5, 5, 2], name="x")
        w = af.placeholder(af.float32, [1, 1, 2, 3], name="w")
        y = af.nn.bias_add(af.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"), af.constant(bv),
                           name="bias")
        beta = af.constant(2.0)
        s = af.identity_n([af.multiply(y, af.sigmoid(af.multiply(beta, y))), y, beta],
                          name="swish")[0]
    (fused, nodes), (plain, _) = await _fused_and_plain(g, s, {x: xv, w: wv})
    assert nodes["bias"][:2] == ("_FusedConv2D", ["BiasAdd"])
    assert "Sigmoid" in _ops(nodes)
    np.testing.assert_allclose(fused, plain, rtol=1e-6)


async def test_matmul_bias_activation_fuse():
    g = af.Graph()
    xv, wv, bv = _f32(5, 8), _f32(8, 3), _f32(3)
    with g.as_default():
        x = af.placeholder(af.float32, [None, 8], name="x")
        y = af.matmul(x, af.constant(wv), name="mm")
        y = af.nn.bias_add(y, af.constant(bv), name="bias")
        out = af.nn.leaky_relu(y, alpha=0.1, name="act")
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, {x: xv})
    assert nodes["act"][:2] == ("_FusedMatMul", ["BiasAdd", "LeakyRelu"])
    want = xv @ wv + bv
    np.testing.assert_allclose(fused, np.where(want > 0, want, 0.1 * want), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(fused, plain, rtol=1e-6)


async def test_a_fetched_fused_node_keeps_its_name_and_control_edges():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 4], name="x")
        # stateful, so it stays (an Identity of a Const that only a control edge reads
        # is dropped, with that edge, as TF's dependency optimizer drops it)
        gate = af.random.uniform([], name="gate")
        w = af.constant(_f32(4, 2), name="w")
        with af.control_dependencies([gate.op]):
            y = af.matmul(x, w, name="mm")
        out = af.nn.relu(af.nn.bias_add(y, af.constant(_f32(2)), name="bias"), name="act")
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, {x: _f32(3, 4)})
    np.testing.assert_allclose(fused, plain, rtol=1e-6)
    op, _, node = nodes["act"]
    assert op == "_FusedMatMul"
    assert any(i.lstrip("^").startswith("gate") for i in node.input if i.startswith("^"))


# -- the fused kernels on TF-written nodes ---------------------------------------------------------

def _fused_conv_graph(fused_ops, num_args, args):
    """A GraphDef with one _FusedConv2D, as TF's grappler would write it."""
    g = af.Graph()
    with g.as_default():
        af.placeholder(af.float32, [1, 5, 5, 2], name="x")
        af.constant(_f32(3, 3, 2, 3), name="w")
        for i, a in enumerate(args):
            af.constant(a, name=f"arg{i}")
    gd = g.as_graph_def()
    node = gd.node.add(name="fused", op="_FusedConv2D")
    node.input.extend(["x", "w"] + [f"arg{i}" for i in range(len(args))])
    node.attr["T"].type = af.float32.as_datatype_enum
    node.attr["TArgs"].list.type.extend([af.float32.as_datatype_enum] * len(args))
    node.attr["num_args"].i = num_args
    node.attr["strides"].list.i.extend([1, 1, 1, 1])
    node.attr["padding"].s = b"SAME"
    node.attr["fused_ops"].list.s.extend(o.encode() for o in fused_ops)
    node.attr["epsilon"].f = 0.001
    return gd


async def _run_graph_def(gd, xv):
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(gd, name="")
    async with af.Session(graph=g) as sess:
        return await sess.run("fused:0", {"x:0": xv})


async def test_a_tf_written_fused_conv_with_batch_norm_runs_to_numpys_values():
    scale, offset, mean, var = _f32(3), _f32(3), _f32(3), _f32(3, low=0.5, high=1)
    gd = _fused_conv_graph(["FusedBatchNorm", "Relu"], 4, [scale, offset, mean, var])
    xv = _f32(1, 5, 5, 2)
    got = await _run_graph_def(gd, xv)
    w = tensor_of(gd, "w")
    xp = np.pad(xv, ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = np.einsum("nhwijc,ijco->nhwo", np.stack(
        [np.stack([xp[:, i:i + 5, j:j + 5] for j in range(3)], 3) for i in range(3)], 3), w)
    want = np.maximum((conv - mean) / np.sqrt(var + np.float32(0.001)) * scale + offset, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def tensor_of(gd: graph_pb2.GraphDef, name: str) -> np.ndarray:
    from aioflow.framework import tensor_util

    node = next(n for n in gd.node if n.name == name)
    return tensor_util.make_ndarray(node.attr["value"].tensor)


@pytest.mark.parametrize("fused_ops,num_args,err,message", [
    (["BiasAdd", "Tanh"], 1, errors.UnimplementedError,
     "Fusion is not implemented: [BiasAdd,Tanh]"),
    (["Relu"], 1, errors.UnimplementedError, "Fusion is not implemented: [Relu]"),
    (["BiasAdd"], 2, errors.InvalidArgumentError, "Fused Conv2D must have one extra argument"),
])
async def test_fused_conv_refuses_what_tf_refuses(fused_ops, num_args, err, message):
    gd = _fused_conv_graph(fused_ops, num_args, [_f32(3)] * num_args)
    with pytest.raises(err, match=message.replace("[", r"\[").replace("]", r"\]")):
        await _run_graph_def(gd, _f32(1, 5, 5, 2))


async def test_fused_conv_bias_of_the_wrong_size_is_invalid_argument():
    gd = _fused_conv_graph(["BiasAdd"], 1, [_f32(4)])
    with pytest.raises(errors.InvalidArgumentError, match="fused"):
        await _run_graph_def(gd, _f32(1, 5, 5, 2))


# -- the conv kernels' own block parallelism (single-threaded BLAS) --------------------------------

@pytest.mark.parametrize("ksize,stride", [(1, 1), (3, 1), (3, 2)])
def test_gemm_blocks_shared_among_threads_give_the_same_values(monkeypatch, ksize, stride):
    # BLAS single-threaded inside a convolution, the conv kernels hand their GEMM blocks
    # (patch copy, GEMM, fused epilogue) to helper threads.
    from aioflow.kernels.nn import conv_kernels, fused_kernels

    x, w, bias = _f32(4, 40, 40, 16), _f32(ksize, ksize, 16, 24), _f32(24)
    out, before, after = conv_kernels.windowed_output_size(40, ksize, 1, stride, "SAME")
    pads = [(before, after)] * 2
    epilogue = fused_kernels.make_epilogue("BiasAdd", fused_kernels._relu6, 0.0, 0.2, [bias],
                                           24, np.float32)
    monkeypatch.setattr(conv_kernels, "_CONV_SPLIT_MACS", 1 << 62)  # one thread
    want = conv_kernels.conv_channels_last(x, w, (stride, stride), (1, 1), pads, (out, out),
                                           epilogue)
    monkeypatch.setattr(conv_kernels, "_CONV_SPLIT_MACS", 0)
    monkeypatch.setattr(conv_kernels, "PARALLEL_WORK", 0)
    got = conv_kernels.conv_channels_last(x, w, (stride, stride), (1, 1), pads, (out, out),
                                          epilogue)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert got.min() >= 0 and got.max() <= 6


async def test_a_batch_norm_whose_batch_mean_is_used_is_not_folded():
    g, out, feeds = _conv_bn_graph()
    batch_mean = g.get_tensor_by_name("bn:1")
    (fused, nodes), (plain, _) = await _fused_and_plain(g, [out, batch_mean], feeds)
    for a, b in zip(fused, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # not folded into the convolution: a batch norm of its own (fused with its Relu)
    assert nodes["bn"][0] == "_FusedBatchNormEx" and "_FusedConv2D" not in _ops(nodes)


async def test_scalar_mul_and_sub_of_a_matmul_fold_into_its_weights_and_bias():
    g = af.Graph()
    xv, wv = _f32(4, 6), _f32(6, 3)
    with g.as_default():
        x = af.placeholder(af.float32, [None, 6], name="x")
        y = af.matmul(x, af.constant(wv), transpose_b=False, name="mm")
        y = af.multiply(af.constant(np.float32(2.5)), y, name="scale")
        y = af.subtract(y, af.constant(_f32(3)), name="shift")
        out = af.nn.relu(y, name="act")
    (fused, nodes), (plain, _) = await _fused_and_plain(g, out, {x: xv})
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)
    assert nodes["act"][:2] == ("_FusedMatMul", ["BiasAdd", "Relu"])
    assert not {"Mul", "Sub"} & set(_ops(nodes))


async def test_a_shared_filter_is_kept_for_its_other_conv():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 5, 5, 2], name="x")
        w = af.constant(_f32(1, 1, 2, 3), name="w")
        a = af.multiply(af.nn.conv2d(x, w, [1, 1, 1, 1], "VALID"), af.constant(_f32(3)),
                        name="a")
        b = af.nn.conv2d(af.nn.relu(x), w, [1, 1, 1, 1], "VALID", name="b")
    (fused, nodes), (plain, _) = await _fused_and_plain(g, [a, b], {x: _f32(2, 5, 5, 2)})
    for got, want in zip(fused, plain, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert nodes["b"][0] == "Conv2D" and nodes["a"][0] == "_FusedConv2D"
