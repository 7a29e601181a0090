"""af.saved_model.load against TF 2 SavedModels TensorFlow 2.21 and Keras 3 wrote
(tests/data/make_saved_model_v2_fixtures.py -> tests/data/saved_model_v2/): the object
graph and checkpoint mapping, signatures run to TF's outputs, TF's binding errors, bad
SavedModels, the CLI; and v1 SavedModels through the same interface."""

from __future__ import annotations

import ast
import asyncio
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow import cli
from aioflow.framework import errors
from aioflow.lib import tensor_bundle
from aioflow.proto import (
    config_pb2,
    rewriter_config_pb2,
    saved_model_pb2,
    trackable_object_graph_pb2,
)
from aioflow.saved_model import loader, loader_v2, object_graph

DATA = Path(__file__).parent / "data" / "saved_model_v2"
V1 = Path(__file__).parent / "data" / "saved_model_v1"
MODELS = ["mlp", "conv", "lstm", "gru", "cond", "text", "module"]
ALL = [*MODELS, "assets"]  # assets: its output is a path, tested on its own


@pytest.fixture(scope="module")
def expected():
    return json.loads((DATA / "expected.json").read_text())


def _meta(name: str):
    return loader.parse_saved_model(DATA / name).meta_graphs[0]


def _arrays(name: str) -> tuple[dict, dict]:
    """(inputs by key, TF's outputs by key) of a fixture."""
    with np.load(DATA / f"{name}.npz", allow_pickle=True) as z:
        inputs = {k[len("input:"):]: z[k] for k in z.files if k.startswith("input:")}
        outputs = {k[len("output:"):]: z[k] for k in z.files if k.startswith("output:")}
    return inputs, outputs


def _trackable_graph(name: str):
    prefix = str(DATA / name / "variables" / "variables")
    with tensor_bundle.BundleReader(prefix) as reader:
        data = reader.lookup(object_graph.OBJECT_GRAPH_KEY.encode()).item()
        values = {k.decode(): reader.lookup(k) for k in reader.keys()
                  if k != object_graph.OBJECT_GRAPH_KEY.encode()}
    return object_graph.parse_trackable_graph(data), values


# -- protos and the object graph --------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_saved_model_protos_declare_every_field_tf_wrote(name):
    # aioflow's SavedModel, MetaGraphDef, SavedObjectGraph and struct protos parse what TF
    # wrote with no field left unknown, and write the same bytes back.
    from google.protobuf import descriptor, unknown_fields

    data = (DATA / name / "saved_model.pb").read_bytes()
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString(data)

    def walk(msg, path):
        assert len(unknown_fields.UnknownFieldSet(msg)) == 0, path
        for field, value in msg.ListFields():
            if field.type != descriptor.FieldDescriptor.TYPE_MESSAGE:
                continue
            if field.message_type.GetOptions().map_entry:
                items = value.values() if field.message_type.fields_by_name[
                    "value"].type == descriptor.FieldDescriptor.TYPE_MESSAGE else []
            else:
                items = value if field.is_repeated else [value]
            for i, item in enumerate(items):
                walk(item, f"{path}.{field.name}[{i}]")

    walk(saved_model, "SavedModel")
    again = saved_model_pb2.SavedModel()
    again.ParseFromString(saved_model.SerializeToString())
    assert again == saved_model
    assert saved_model.meta_graphs[0].HasField("object_graph_def")


@pytest.mark.parametrize("name", ALL)
def test_signature_functions_match_tf_loaded_signatures(expected, name):
    meta = _meta(name)
    functions = object_graph.signature_functions(meta.object_graph_def)
    entry = expected["models"][name]
    assert sorted(functions) == entry["signatures"]
    serving = functions["serving_default"]
    assert sorted(serving.argument_keywords) == entry["inputs"]
    assert sorted(serving.input_specs) == entry["inputs"]
    assert sorted(serving.output_specs) == entry["outputs"]
    assert serving.function_name in {f.signature.name for f in meta.graph_def.library.function}
    sig = meta.signature_def["serving_default"]
    for key, spec in serving.input_specs.items():
        assert spec.dtype == af.as_dtype(sig.inputs[key].dtype)


@pytest.mark.parametrize("name", ALL)
def test_variables_map_to_checkpoint_keys_and_graph_handles(name):
    # Every variable a signature captures gets its checkpoint key from the checkpoint's
    # object graph and its handle from the call node; the handle is a VarHandleOp of the
    # variable's dtype and shape, and the checkpoint holds a value of that dtype and shape.
    meta = _meta(name)
    trackable, values = _trackable_graph(name)
    variables = object_graph.variables_to_restore(meta.object_graph_def, trackable,
                                                  meta.graph_def)
    nodes = {n.name: n for n in meta.graph_def.node}
    assert variables
    for var in variables:
        assert var.checkpoint_key.endswith("/.ATTRIBUTES/VARIABLE_VALUE")
        handle = nodes[var.handle.split(":")[0]]
        assert handle.op == "VarHandleOp"
        assert handle.attr["dtype"].type == var.dtype.as_datatype_enum
        assert [d.size for d in handle.attr["shape"].shape.dim] == var.shape.as_list()
        value = values[var.checkpoint_key]
        assert value.dtype == var.dtype.as_numpy_dtype and list(value.shape) == var.shape.as_list()
    # the signature captures exactly the variables its call node feeds
    call = nodes[meta.signature_def["serving_default"].outputs[
        sorted(meta.signature_def["serving_default"].outputs)[0]].name.split(":")[0]]
    captured = {v.handle for v in variables}
    assert all(f"{i}:0" in captured for i in call.input
               if nodes[i.split(":")[0]].op == "VarHandleOp")


def test_module_variables_restore_to_the_values_tf_saved():
    # The tf.Module's `w` and `b` (object graph children of the root) map to the
    # checkpoint keys `w/.ATTRIBUTES/VARIABLE_VALUE` and `b/...`.
    meta = _meta("module")
    trackable, values = _trackable_graph("module")
    by_name = {v.checkpoint_key: v for v in object_graph.variables_to_restore(
        meta.object_graph_def, trackable, meta.graph_def)}
    assert set(by_name) == {"w/.ATTRIBUTES/VARIABLE_VALUE", "b/.ATTRIBUTES/VARIABLE_VALUE"}
    np.testing.assert_array_equal(values["b/.ATTRIBUTES/VARIABLE_VALUE"], [0.5, -1.0])


# -- binding inputs as TF's loaded signature does ----------------------------------------


def _signature(name: str, key: str = "serving_default"):
    meta = _meta(name)
    fn = object_graph.signature_functions(meta.object_graph_def)[key]
    return af.saved_model.Signature(
        None, key, meta.signature_def[key], keywords=fn.argument_keywords,
        input_specs=fn.input_specs, output_specs=fn.output_specs,
        function_name=fn.graph_name, allowed_positional=fn.allowed_positional_arguments)


def _bad_mlp_inputs(x):
    """The calls the fixture script made with TF (bad_inputs), as (args, kwargs)."""
    return {
        "missing": ((), {}),
        "extra": ((), {"x": x, "y": x}),
        "wrong_dtype_string": ((), {"x": np.array([["a", "b", "c", "d"]])}),
        "none": ((), {"x": None}),
        "wrong_shape": ((), {"x": np.zeros((2, 5), np.float32)}),
        "wrong_rank": ((), {"x": np.zeros((4,), np.float32)}),
        "positional": ((x,), {}),
    }


@pytest.mark.parametrize("case", ["missing", "extra", "wrong_dtype_string", "none",
                                  "wrong_shape", "wrong_rank", "positional"])
def test_bad_inputs_raise_tf_class_and_message(expected, case):
    sig = _signature("mlp")
    x = _arrays("mlp")[0]["x"]
    args, kwargs = _bad_mlp_inputs(x)[case]
    tf_error = expected["models"]["mlp"]["errors"][case]
    with pytest.raises(TypeError) as info:
        sig.bind(args, kwargs)
    assert tf_error["class"] == "TypeError"
    assert str(info.value) == tf_error["message"].replace(
        "signature_wrapper___call___3514", sig._function_name)


@pytest.mark.parametrize("case, kwargs", [
    ("float_list_to_int", {"factor": 1.0, "ids": [1.5]}),
    ("vector_to_scalar", {"factor": [1.0, 2.0], "ids": [1]}),
])
def test_module_signature_binding_errors(expected, case, kwargs):
    # TF prints the outputs in the order its proto map iterates (arbitrary): compare the
    # Dict[...] part as a set of entries, the rest exactly.
    sig = _signature("module", "scale")
    with pytest.raises(TypeError) as info:
        sig.bind((), kwargs)

    def split(message):
        head, rest = message.split(" -> Dict[", 1)
        entries, tail = rest.split("]].\n", 1)
        return head, set(entries.strip("[").split("], [")), tail

    assert split(str(info.value)) == split(expected["models"]["module"]["errors"][case][
        "message"])


def test_numpy_inputs_are_cast_to_the_spec_dtype_as_tf_does(expected):
    # TF accepted an int64 array for a float32 input (wrong_dtype_numpy: no error).
    assert expected["models"]["mlp"]["errors"]["wrong_dtype_numpy"] is None
    sig = _signature("mlp")
    x = _arrays("mlp")[0]["x"]
    (fed,) = sig.bind((), {"x": x.astype(np.int64)})
    assert fed.dtype == np.float32
    np.testing.assert_array_equal(fed, x.astype(np.int64).astype(np.float32))
    (text,) = _signature("text").bind((), {"text": ["a b", "c"]})
    assert text.dtype == object and text.tolist() == [b"a b", b"c"]


def test_signature_structure_is_tfs(expected):
    sig = _signature("module", "scale")
    args, kwargs = sig.structured_input_signature
    assert args == () and list(kwargs) == ["factor", "ids"]
    assert repr(kwargs["ids"]) == "TensorSpec(shape=(None,), dtype=tf.int32, name='ids')"
    assert list(sig.structured_outputs) == ["ids_plus", "scaled"]  # sorted, as nest orders


# -- loading and running ------------------------------------------------------------------


def _called_config():
    """A session config under which functional ops are neither lowered nor inlined."""
    config = config_pb2.ConfigProto()
    config.experimental.executor_type = "SINGLE_THREADED_EXECUTOR"
    config.graph_options.rewrite_options.function_optimization = \
        rewriter_config_pb2.RewriterConfig.OFF
    return config


@pytest.mark.parametrize("path", ["lowered", "called"])
@pytest.mark.parametrize("name", MODELS)
async def test_serving_default_matches_tf(name, path):
    # The default session lowers If/While and inlines calls; `called` runs every call,
    # If and While as a function sub-step. Both give TF's outputs.
    inputs, outputs = _arrays(name)
    config = _called_config() if path == "called" else None
    async with await af.saved_model.load(DATA / name, config=config) as model:
        assert model.is_tf2 and model.tags == ["serve"]
        result = await model.signatures["serving_default"](**inputs)
    assert sorted(result) == sorted(outputs)
    for key, want in outputs.items():
        assert result[key].dtype == want.dtype and result[key].shape == want.shape
        np.testing.assert_allclose(result[key], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["mlp", "lstm", "module"])
async def test_object_graph_restore_equals_the_models_own_restore_function(name):
    # The loader restores through the object graph; TF's v1 loader (and TF Serving) runs
    # the SaverDef's restore op, a call of the traced restore function. Same values, and
    # the checkpoint's.
    _, values = _trackable_graph(name)
    async with await af.saved_model.load(DATA / name) as model:
        reads = [f"{v.handle.split(':')[0]}/Read/ReadVariableOp:0" for v in model.variables]
        ours = await model.session.run(reads)
        keys = [v.checkpoint_key for v in model.variables]
    async with af.Session(graph=af.Graph()) as sess:
        await af.saved_model.loader.load(sess, ["serve"], str(DATA / name))
        theirs = await sess.run(reads)
    for key, a, b in zip(keys, ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, values[key])


@pytest.mark.parametrize("path", ["lowered", "called"])
async def test_asset_path_is_bound_to_the_file_under_assets(path):
    # The init op (__saved_model_init_op) runs with the asset placeholder fed the file's
    # path under the export's assets/, as TF's loader binds it.
    inputs, outputs = _arrays("assets")
    export_dir = DATA / "assets"
    config = _called_config() if path == "called" else None
    async with await af.saved_model.load(export_dir, config=config) as model:
        result = await model.signatures["serving_default"](**inputs)
    want = outputs["path"].item().replace(b"<OUT>", str(DATA).encode())
    assert want == str(export_dir / "assets" / "vocab.txt").encode()
    assert result["path"] == want
    assert result["y"] == outputs["y"] and result["y"].dtype == np.float32


async def test_second_signature_and_concurrent_calls(expected):
    want = expected["models"]["module"]["scale"]
    async with await af.saved_model.load(DATA / "module") as model:
        scale = model.signatures["scale"]
        results = await asyncio.gather(*(
            scale(factor=np.float32(want["factor"]), ids=np.array(want["ids"], np.int32))
            for _ in range(8)))
    for result in results:
        np.testing.assert_allclose(result["scaled"], want["scaled"], rtol=1e-6)
        np.testing.assert_array_equal(result["ids_plus"], want["ids_plus"])
        assert result["ids_plus"].dtype == np.int32


async def test_lstm_calls_interleave_on_one_loop():
    inputs, outputs = _arrays("lstm")
    async with await af.saved_model.load(DATA / "lstm") as model:
        sig = model.signatures["serving_default"]
        batches = [inputs["seq"][i:i + 1] for i in range(len(inputs["seq"]))]
        results = await asyncio.gather(*(sig(seq=b) for b in batches))
    got = np.concatenate([r["output_0"] for r in results])
    np.testing.assert_allclose(got, outputs["output_0"], rtol=1e-5, atol=1e-6)


async def test_cancelled_calls_leave_the_model_usable():
    # Calls cancelled wherever they are (not started, mid-step, done) leave nothing
    # behind: a later call runs to TF's values, and nothing hangs.
    inputs, outputs = _arrays("lstm")
    async with await af.saved_model.load(DATA / "lstm") as model:
        sig = model.signatures["serving_default"]
        await sig(**inputs)  # the step is built
        tasks = [asyncio.ensure_future(sig(**inputs)) for _ in range(20)]
        await asyncio.sleep(0.002)
        for task in tasks:
            task.cancel()
        done = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
        for value in done:
            if not isinstance(value, asyncio.CancelledError):
                np.testing.assert_allclose(value["output_0"], outputs["output_0"],
                                           rtol=1e-5, atol=1e-6)
        result = await asyncio.wait_for(sig(**inputs), 30)
    np.testing.assert_allclose(result["output_0"], outputs["output_0"], rtol=1e-5, atol=1e-6)


async def test_v1_saved_model_loads_through_the_same_interface():
    v1 = json.loads((V1 / "expected.json").read_text())
    async with await af.saved_model.load(V1 / "main_op") as model:
        assert not model.is_tf2
        result = await model.signatures["serving_default"](x=np.asarray(v1["X"]))
    np.testing.assert_allclose(result["y"], np.asarray(v1["y"], np.float32), rtol=1e-6)


async def test_tags_are_checked_as_tf_does():
    with pytest.raises(ValueError, match=r"Got an incompatible argument to `tags`: \['gpu'\]"
                       r"\. The SavedModel at .*mlp has one MetaGraph with tags \['serve'\]"):
        await af.saved_model.load(DATA / "mlp", tags=["gpu"])
    with pytest.raises(ValueError, match=r"requires a `tags=` argument if there is more "
                       r"than one MetaGraph. Got `tags=None`, but there are 2 MetaGraphs"):
        await af.saved_model.load(V1 / "legacy")


# -- bad SavedModels ----------------------------------------------------------------------


def _copy(tmp_path, name="mlp") -> Path:
    dst = tmp_path / name
    shutil.copytree(DATA / name, dst)
    return dst


def _rewrite(export_dir: Path, edit) -> None:
    path = export_dir / "saved_model.pb"
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString(path.read_bytes())
    edit(saved_model.meta_graphs[0])
    path.write_bytes(saved_model.SerializeToString())


async def test_corrupt_saved_model_pb_is_an_os_error(tmp_path):
    export_dir = _copy(tmp_path)
    data = (export_dir / "saved_model.pb").read_bytes()
    (export_dir / "saved_model.pb").write_bytes(data[: len(data) // 2] + b"\xff\xff\xff")
    with pytest.raises(OSError, match=r"Cannot parse file .*saved_model.pb"):
        await asyncio.wait_for(af.saved_model.load(export_dir), 30)


async def test_missing_function_is_not_found_naming_caller_and_function(tmp_path):
    # Drop the function the serving signature's wrapper calls (Keras's __call__ trace).
    export_dir = _copy(tmp_path)
    meta = _meta("mlp")
    wrapper = object_graph.signature_functions(meta.object_graph_def)[
        "serving_default"].function_name
    fdefs = {f.signature.name: f for f in meta.graph_def.library.function}
    callee = next(n.attr["f"].func.name for n in fdefs[wrapper].node_def
                  if n.op == "StatefulPartitionedCall")

    def drop(meta):
        lib = meta.graph_def.library
        keep = [f for f in lib.function if f.signature.name != callee]
        assert len(keep) == len(lib.function) - 1
        del lib.function[:]
        lib.function.extend(keep)

    _rewrite(export_dir, drop)
    with pytest.raises(errors.NotFoundError, match=rf"Function {callee} is not defined: "
                       rf"node '.*' of function {wrapper} \(StatefulPartitionedCall\) "
                       rf"calls it"):
        await asyncio.wait_for(af.saved_model.load(export_dir), 30)


async def test_custom_op_is_refused_saying_so(tmp_path):
    export_dir = _copy(tmp_path)

    def custom(meta):
        fn = next(f for f in meta.graph_def.library.function
                  if any(n.op == "Relu" for n in f.node_def))
        next(n for n in fn.node_def if n.op == "Relu").op = "MyCustomRelu"

    _rewrite(export_dir, custom)
    with pytest.raises(errors.NotFoundError, match=r"uses ops aioflow does not have \(custom "
                       r"ops are not supported\): MyCustomRelu \(used by node"):
        await af.saved_model.load(export_dir)


async def test_python_objects_it_cannot_restore_are_refused(tmp_path):
    export_dir = _copy(tmp_path)

    def add_table(meta):
        table = meta.object_graph_def.nodes.add()
        table.resource.device = "/device:CPU:0"
        table.registered_name = "my_project.MyTable"

    _rewrite(export_dir, add_table)
    with pytest.raises(NotImplementedError, match=r"cannot restore \(aioflow restores "
                       r"variables, constants, assets and functions, not arbitrary Python "
                       r"objects\): node 19 \(resource\): a resource .*; node 19 \(resource\): "
                       r"the registered Python object 'my_project.MyTable'"):
        await af.saved_model.load(export_dir)


async def test_a_signature_with_a_composite_tensor_is_refused_when_called(tmp_path):
    export_dir = _copy(tmp_path)

    def make_sparse(meta):
        info = meta.signature_def["serve"].inputs["x"]
        name = info.name
        info.coo_sparse.values_tensor_name = name

    _rewrite(export_dir, make_sparse)
    inputs, outputs = _arrays("mlp")
    async with await af.saved_model.load(export_dir) as model:
        with pytest.raises(NotImplementedError, match=r"The signature 'serve' has sparse or "
                           r"composite tensors \(input 'x' \(coo_sparse\)\): aioflow feeds "
                           r"and fetches dense tensors only"):
            await model.signatures["serve"](**inputs)
        result = await model.signatures["serving_default"](**inputs)  # the others work
    np.testing.assert_allclose(result["output_0"], outputs["output_0"], rtol=1e-5, atol=1e-6)


async def test_missing_directory_or_variables_are_clear_errors(tmp_path):
    with pytest.raises(OSError, match=r"SavedModel file does not exist at: .*absent"):
        await af.saved_model.load(tmp_path / "absent")
    export_dir = _copy(tmp_path)
    shutil.rmtree(export_dir / "variables")
    with pytest.raises(errors.NotFoundError, match=r"Failed to find any matching files for "
                       r".*variables/variables"):
        await af.saved_model.load(export_dir)


async def test_missing_checkpoint_value_is_not_found(tmp_path):
    export_dir = _copy(tmp_path)
    prefix = str(export_dir / "variables" / "variables")
    with tensor_bundle.BundleReader(prefix) as reader:
        kept = {k: reader.lookup(k) for k in reader.keys()
                if not k.startswith(b"variables/0/")}
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(kept[object_graph.OBJECT_GRAPH_KEY.encode()].item())
    writer = tensor_bundle.BundleWriter(prefix)
    for key, value in kept.items():
        writer.add(key, value)
    writer.finish()
    with pytest.raises(errors.NotFoundError, match=r"Key variables/0/.ATTRIBUTES/"
                       r"VARIABLE_VALUE not found in checkpoint"):
        await af.saved_model.load(export_dir)


# -- the CLI ------------------------------------------------------------------------------


def _ops(line: str) -> set:
    return ast.literal_eval(line.split(" contains the following ops: ", 1)[1])


@pytest.mark.parametrize("name", ALL)
def test_cli_inspect_matches_saved_model_cli(expected, name, capsys):
    assert cli.main(["inspect", str(DATA / name)]) == 0
    ours = capsys.readouterr().out.splitlines()
    theirs = expected["models"][name]["show_all"].splitlines()
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        if "contains the following ops" in b:
            assert a.split(": {")[0] == b.split(": {")[0] and _ops(a) == _ops(b)
        else:
            assert a == b


@pytest.mark.parametrize("name", MODELS)
def test_cli_run_matches_tf(tmp_path, name):
    inputs, outputs = _arrays(name)
    args = []
    for key, value in inputs.items():
        np.save(tmp_path / f"{key}.npy", value.astype("S") if value.dtype == object else value)
        args += ["--input", f"{key}={tmp_path / f'{key}.npy'}"]
    out = tmp_path / "out.npz"
    assert cli.main(["run", str(DATA / name), *args, "--output", str(out)]) == 0
    with np.load(out) as z:
        assert sorted(z.files) == sorted(outputs)
        for key, want in outputs.items():
            np.testing.assert_allclose(z[key], want, rtol=1e-5, atol=1e-6)


def test_cli_run_reports_a_binding_error(capsys):
    assert cli.main(["run", str(DATA / "mlp"), "--input", "x=[1.0, 2.0]"]) == 1
    err = capsys.readouterr().err
    assert "error: TypeError: Binding inputs to tf.function failed due to `Can not cast " \
           "TensorSpec(shape=(2,), dtype=tf.float32, name='x') to TensorSpec(shape=(None, " \
           "4), dtype=tf.float32, name='x')`" in err


def test_loader_v2_reexported():
    assert af.saved_model.load is loader_v2.load
