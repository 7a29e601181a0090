"""The TensorFlow-compatible protobuf messages in aioflow.proto."""

import importlib
import pathlib

import pytest
from google.protobuf import descriptor_pb2

from aioflow.proto import (
    attr_value_pb2,
    config_pb2,
    cost_graph_pb2,
    function_pb2,
    graph_pb2,
    node_def_pb2,
    op_def_pb2,
    resource_handle_pb2,
    rewriter_config_pb2,
    step_stats_pb2,
    tensor_pb2,
    tensor_shape_pb2,
    types_pb2,
)

PROTO_DIR = pathlib.Path(__file__).resolve().parents[1] / "aioflow" / "proto"
MODULES = sorted(p.stem for p in PROTO_DIR.glob("*_pb2.py"))


def test_every_proto_has_a_generated_module():
    protos = sorted(p.stem + "_pb2" for p in PROTO_DIR.glob("*.proto"))
    assert protos == MODULES
    assert "graph_pb2" in MODULES and "config_pb2" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_module_imports_and_uses_own_package(name):
    mod = importlib.import_module(f"aioflow.proto.{name}")
    fd = mod.DESCRIPTOR
    # aioflow.tfproto, or a sub-package where TF has one (error_codes: tensorflow.error)
    assert fd.package == "aioflow.tfproto" or fd.package.startswith("aioflow.tfproto.")
    assert fd.name == f"aioflow/proto/{name[: -len('_pb2')]}.proto"
    for msg in fd.message_types_by_name.values():
        assert msg.full_name.startswith("aioflow.tfproto.")
    for enum in fd.enum_types_by_name.values():
        assert enum.full_name.startswith("aioflow.tfproto.")


def _shape(*dims):
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims]
    )


def _every_attr_kind():
    AV = attr_value_pb2.AttrValue
    tensor = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_FLOAT, tensor_shape=_shape(2), float_val=[1.5, -2.0]
    )
    func = attr_value_pb2.NameAttrList(name="f", attr={"T": AV(type=types_pb2.DT_INT32)})
    return {
        "s": AV(s=b"bytes\x00\xff"),
        "i": AV(i=-(2**40)),
        "f": AV(f=0.25),
        "b": AV(b=True),
        "type": AV(type=types_pb2.DT_HALF),
        "shape": AV(shape=_shape(-1, 3)),
        "unknown_rank": AV(shape=tensor_shape_pb2.TensorShapeProto(unknown_rank=True)),
        "tensor": AV(tensor=tensor),
        "func": AV(func=func),
        "placeholder": AV(placeholder="T"),
        "list": AV(
            list=AV.ListValue(
                s=[b"a", b"b"],
                i=[1, -2, 3],
                f=[0.5],
                b=[True, False],
                type=[types_pb2.DT_FLOAT, types_pb2.DT_INT64_REF],
                shape=[_shape(1), _shape()],
                tensor=[tensor],
                func=[func],
            )
        ),
        "empty_list": AV(list=AV.ListValue()),
    }


def _graph_def():
    g = graph_pb2.GraphDef()
    g.versions.producer = 1987
    g.versions.min_consumer = 12
    c = g.node.add(name="c", op="Const", device="/job:localhost/replica:0/task:0/device:CPU:0")
    for key, value in _every_attr_kind().items():
        c.attr[key].CopyFrom(value)
    c.experimental_debug_info.original_node_names.append("orig")
    g.node.add(name="y", op="Identity", input=["c", "^c"]).attr["T"].type = types_pb2.DT_FLOAT

    fdef = g.library.function.add()
    fdef.signature.name = "f"
    fdef.signature.input_arg.add(name="x", type_attr="T")
    fdef.signature.output_arg.add(name="y", type_attr="T")
    fdef.signature.attr.add(name="T", type="type")
    fdef.node_def.add(name="id", op="Identity", input=["x"]).attr["T"].placeholder = "T"
    fdef.ret["y"] = "id:output:0"
    fdef.control_ret["ctl"] = "id"
    fdef.arg_attr[0].attr["_output_shapes"].list.shape.add()
    fdef.resource_arg_unique_id[0] = 7
    g.library.gradient.add(function_name="f", gradient_func="f_grad")
    g.library.registered_gradients.add(gradient_func="g", registered_op_type="Op")
    return g


def test_graph_def_with_every_attr_kind_round_trips():
    g = _graph_def()
    data = g.SerializeToString()
    back = graph_pb2.GraphDef.FromString(data)
    assert back == g
    assert back.SerializeToString(deterministic=True) == g.SerializeToString(deterministic=True)

    attrs = back.node[0].attr
    assert {k: v.WhichOneof("value") for k, v in attrs.items()} == {
        "s": "s",
        "i": "i",
        "f": "f",
        "b": "b",
        "type": "type",
        "shape": "shape",
        "unknown_rank": "shape",
        "tensor": "tensor",
        "func": "func",
        "placeholder": "placeholder",
        "list": "list",
        "empty_list": "list",
    }
    assert attrs["s"].s == b"bytes\x00\xff"
    assert attrs["i"].i == -(2**40)
    assert attrs["list"].list.type == [types_pb2.DT_FLOAT, types_pb2.DT_INT64_REF]
    assert attrs["tensor"].tensor.float_val == [1.5, -2.0]
    assert attrs["func"].func.attr["T"].type == types_pb2.DT_INT32
    assert back.library.function[0].ret["y"] == "id:output:0"
    assert back.library.function[0].resource_arg_unique_id[0] == 7


def test_graph_def_bytes_match_tensorflow_encoding():
    # node { name: "a" op: "Const" } versions { producer: 27 }, encoded by hand
    # from TensorFlow's field numbers: GraphDef.node=1, NodeDef.name=1, op=2,
    # GraphDef.versions=4, VersionDef.producer=1.
    g = graph_pb2.GraphDef()
    g.node.add(name="a", op="Const")
    g.versions.producer = 27
    expected = b"\x0a\x0a" + b"\x0a\x01a" + b"\x12\x05Const" + b"\x22\x02\x08\x1b"
    assert g.SerializeToString() == expected
    assert graph_pb2.GraphDef.FromString(expected) == g


def test_tensor_proto_all_value_fields_round_trip():
    t = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_VARIANT,
        tensor_shape=_shape(2, 3),
        version_number=1,
        tensor_content=b"\x01\x02",
        half_val=[0x3C00],
        float_val=[1.0],
        double_val=[2.0],
        int_val=[-3],
        string_val=[b"x"],
        scomplex_val=[1.0, 2.0],
        int64_val=[2**62],
        bool_val=[True],
        dcomplex_val=[3.0, 4.0],
        uint32_val=[2**32 - 1],
        uint64_val=[2**64 - 1],
        float8_val=b"\x38",
    )
    t.resource_handle_val.add(device="/device:CPU:0", name="v", hash_code=5).dtypes_and_shapes.add(
        dtype=types_pb2.DT_FLOAT, shape=_shape(4)
    )
    t.variant_val.add(type_name="TensorList", metadata=b"m").tensors.add(dtype=types_pb2.DT_INT32)
    back = tensor_pb2.TensorProto.FromString(t.SerializeToString())
    assert back == t
    assert back.uint64_val == [2**64 - 1]


def test_config_run_options_run_metadata_round_trip():
    cfg = config_pb2.ConfigProto(
        device_count={"CPU": 1, "GPU": 0},
        intra_op_parallelism_threads=2,
        inter_op_parallelism_threads=3,
        use_per_session_threads=True,
        placement_period=5,
        device_filters=["/job:localhost"],
        allow_soft_placement=True,
        log_device_placement=True,
        operation_timeout_in_ms=1000,
        isolate_session_state=True,
        share_cluster_devices_in_session=True,
    )
    cfg.session_inter_op_thread_pool.add(num_threads=4, global_name="low")
    cfg.gpu_options.allow_growth = True
    cfg.gpu_options.per_process_gpu_memory_fraction = 0.5
    cfg.gpu_options.experimental.virtual_devices.add(memory_limit_mb=[1024.0])
    opt = cfg.graph_options.optimizer_options
    opt.opt_level = config_pb2.OptimizerOptions.L0
    opt.global_jit_level = config_pb2.OptimizerOptions.OFF
    cfg.graph_options.place_pruned_graph = True
    cfg.graph_options.enable_bfloat16_sendrecv = True
    cfg.graph_options.timeline_step = 10
    cfg.graph_options.rewrite_options.constant_folding = rewriter_config_pb2.RewriterConfig.OFF
    cfg.rpc_options.compression_algorithm = "gzip"
    cfg.cluster_def.job.add(name="worker").tasks[0] = "localhost:2222"
    cfg.experimental.session_metadata.name = "s"
    cfg.experimental.mlir_bridge_rollout = (
        config_pb2.ConfigProto.Experimental.MLIR_BRIDGE_ROLLOUT_DISABLED
    )
    assert config_pb2.ConfigProto.FromString(cfg.SerializeToString()) == cfg
    assert cfg.graph_options.optimizer_options.opt_level == -1

    opts = config_pb2.RunOptions(
        trace_level=config_pb2.RunOptions.FULL_TRACE,
        timeout_in_ms=500,
        inter_op_thread_pool=-1,
        output_partition_graphs=True,
        report_tensor_allocations_upon_oom=True,
    )
    opts.debug_options.debug_tensor_watch_opts.add(node_name="c", debug_ops=["DebugIdentity"])
    opts.experimental.collective_graph_key = 9
    opts.experimental.run_handler_pool_options.priority = 2
    assert config_pb2.RunOptions.FromString(opts.SerializeToString()) == opts
    assert config_pb2.RunOptions.TraceLevel.Name(3) == "FULL_TRACE"

    md = config_pb2.RunMetadata()
    dev = md.step_stats.dev_stats.add(device="/device:CPU:0")
    dev.thread_names[1] = "main"
    ns = dev.node_stats.add(node_name="c", all_start_micros=1, op_end_rel_micros=3)
    ns.memory.add(allocator_name="cpu", total_bytes=8).allocation_records.add(alloc_bytes=-8)
    ns.output.add(slot=0).tensor_description.allocation_description.requested_bytes = 8
    ns.memory_stats.temp_memory_size = 4
    node = md.cost_graph.node.add(name="c", id=1)
    node.output_info.add(size=8, dtype=types_pb2.DT_FLOAT)
    node.input_info.add(preceding_node=0, preceding_port=0)
    md.partition_graphs.add().CopyFrom(_graph_def())
    md.function_graphs.add().pre_optimization_graph.node.add(name="x")
    assert config_pb2.RunMetadata.FromString(md.SerializeToString()) == md

    callable_opts = config_pb2.CallableOptions(
        feed=["a:0"], fetch=["y:0"], target=["t"], fetch_skip_sync=True
    )
    callable_opts.tensor_connection.add(from_tensor="a:0", to_tensor="b:0")
    callable_opts.feed_devices["a:0"] = "/device:CPU:0"
    callable_opts.run_options.timeout_in_ms = 1
    assert config_pb2.CallableOptions.FromString(callable_opts.SerializeToString()) == callable_opts


def _numbers(message_cls):
    return {f.name: f.number for f in message_cls.DESCRIPTOR.fields}


def test_field_numbers_match_tensorflow():
    assert _numbers(node_def_pb2.NodeDef) == {
        "name": 1,
        "op": 2,
        "input": 3,
        "device": 4,
        "attr": 5,
        "experimental_debug_info": 6,
        "experimental_type": 7,
    }
    assert _numbers(graph_pb2.GraphDef) == {
        "node": 1,
        "library": 2,
        "version": 3,
        "versions": 4,
        "debug_info": 5,
    }
    assert _numbers(tensor_pb2.TensorProto) == {
        "dtype": 1,
        "tensor_shape": 2,
        "version_number": 3,
        "tensor_content": 4,
        "float_val": 5,
        "double_val": 6,
        "int_val": 7,
        "string_val": 8,
        "scomplex_val": 9,
        "int64_val": 10,
        "bool_val": 11,
        "dcomplex_val": 12,
        "half_val": 13,
        "resource_handle_val": 14,
        "variant_val": 15,
        "uint32_val": 16,
        "uint64_val": 17,
        "float8_val": 18,
    }
    run_options = _numbers(config_pb2.RunOptions)
    assert run_options["trace_level"] == 1
    assert run_options["timeout_in_ms"] == 2
    assert run_options["inter_op_thread_pool"] == 3
    assert run_options["output_partition_graphs"] == 5
    assert run_options["debug_options"] == 6
    assert run_options["report_tensor_allocations_upon_oom"] == 7
    assert run_options["experimental"] == 8
    config = _numbers(config_pb2.ConfigProto)
    for name, number in {
        "device_count": 1,
        "intra_op_parallelism_threads": 2,
        "placement_period": 3,
        "device_filters": 4,
        "inter_op_parallelism_threads": 5,
        "gpu_options": 6,
        "allow_soft_placement": 7,
        "log_device_placement": 8,
        "use_per_session_threads": 9,
        "graph_options": 10,
        "operation_timeout_in_ms": 11,
        "session_inter_op_thread_pool": 12,
        "experimental": 16,
    }.items():
        assert config[name] == number, name
    assert _numbers(config_pb2.RunMetadata) == {
        "step_stats": 1,
        "cost_graph": 2,
        "partition_graphs": 3,
        "function_graphs": 4,
    }
    av = _numbers(attr_value_pb2.AttrValue)
    assert av == {
        "list": 1,
        "s": 2,
        "i": 3,
        "f": 4,
        "b": 5,
        "type": 6,
        "shape": 7,
        "tensor": 8,
        "placeholder": 9,
        "func": 10,
    }
    fdef = _numbers(function_pb2.FunctionDef)
    assert fdef == {
        "signature": 1,
        "node_def": 3,
        "ret": 4,
        "attr": 5,
        "control_ret": 6,
        "arg_attr": 7,
        "resource_arg_unique_id": 8,
    }
    assert _numbers(op_def_pb2.OpDef)["is_stateful"] == 17
    assert _numbers(op_def_pb2.OpDef.ArgDef)["is_ref"] == 16
    assert _numbers(step_stats_pb2.NodeExecStats)["all_start_nanos"] == 13
    assert _numbers(cost_graph_pb2.CostGraphDef.Node)["inaccurate"] == 17


def _reserved(message_cls):
    proto = descriptor_pb2.DescriptorProto()
    message_cls.DESCRIPTOR.CopyToProto(proto)
    numbers = {n for r in proto.reserved_range for n in range(r.start, r.end)}
    return numbers, set(proto.reserved_name)


def test_reserved_numbers_match_tensorflow():
    assert _reserved(function_pb2.FunctionDef) == ({2}, set())
    assert _reserved(config_pb2.RunOptions) == ({4}, set())
    assert _reserved(config_pb2.GraphOptions) == ({1}, {"skip_common_subexpression_elimination"})
    assert _reserved(config_pb2.ConfigProto.Experimental) == ({2}, set())
    assert _reserved(resource_handle_pb2.ResourceHandleProto) == ({7}, set())


def test_data_type_values_match_tensorflow():
    dt = types_pb2.DataType
    assert dt.Value("DT_INVALID") == 0
    assert dt.Value("DT_FLOAT") == 1
    assert dt.Value("DT_STRING") == 7
    assert dt.Value("DT_BFLOAT16") == 14
    assert dt.Value("DT_HALF") == 19
    assert dt.Value("DT_RESOURCE") == 20
    assert dt.Value("DT_VARIANT") == 21
    assert dt.Value("DT_UINT64") == 23
    assert dt.Value("DT_FLOAT8_E4M3FN") == 25
    assert dt.Value("DT_UINT4") == 30
    # Every base type has a _REF twin at value + 100, and vice versa.
    names = dict(dt.items())
    base = {n: v for n, v in names.items() if not n.endswith("_REF") and v != 0}
    refs = {n: v for n, v in names.items() if n.endswith("_REF")}
    assert {n + "_REF": v + 100 for n, v in base.items()} == refs
