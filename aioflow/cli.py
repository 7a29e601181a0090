"""The `aioflow` command: run a GraphDef file, print a SavedModel's signatures, serve
models (TF Serving's APIs), or run a built-in concurrent demo."""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import sys
import time

import numpy as np


class _NpyFile:
    """A `--feed NAME=FILE.npy` value: read when the run starts, where a bad file is a
    one-line error (argparse would print a traceback for it)."""

    def __init__(self, name: str, path: str):
        self.name, self.path = name, path

    def load(self, flag: str):
        try:
            return np.load(self.path, allow_pickle=False)
        except OSError as e:
            raise ValueError(f"{flag} {self.name}: cannot read {self.path}: "
                             f"{e.strerror or e}") from None
        except ValueError as e:
            raise ValueError(f"{flag} {self.name}: {self.path} is not a .npy file: {e}") \
                from None


def _parse_feed(text: str):
    """`name=path.npy` or `name=<Python literal>` -> (name, value); an .npy is read later."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--feed takes NAME=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    if value.endswith(".npy") or os.path.isfile(value):
        return name, _NpyFile(name, value)
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value.encode()


def _values(pairs, flag: str) -> dict:
    """The --feed / --input pairs as a dict, .npy files read."""
    return {name: value.load(flag) if isinstance(value, _NpyFile) else value
            for name, value in pairs or []}


def _load_graph_def(path: str):
    from aioflow.framework.importer import parse_graph_def

    with open(path, "rb") as f:
        data = f.read()
    if path.endswith((".pbtxt", ".txt")):
        from google.protobuf import text_format

        from aioflow.proto import graph_pb2

        return text_format.Parse(data.decode(), graph_pb2.GraphDef())
    return parse_graph_def(data)


async def _run_saved_model(args) -> int:
    """`aioflow run DIR`: load a SavedModel (TF 2 or v1) with af.saved_model.load, call
    its signature with the inputs by key (--input KEY=VALUE), print or save every output."""
    import aioflow as af

    tags = args.tag or [af.saved_model.tag_constants.SERVING]
    async with await af.saved_model.load(args.model, tags=tags) as model:
        if args.signature not in model.signatures:
            raise ValueError(f"no signature {args.signature!r} in the SavedModel; it has "
                             f"{sorted(model.signatures)}")
        signature = model.signatures[args.signature]
        given = _values(args.input, "--input")
        inputs = signature.structured_input_signature[1]
        unknown = sorted(set(given) - set(inputs))
        if unknown:
            raise ValueError(f"signature {args.signature!r} has no input(s) {unknown}; its "
                             f"inputs are {sorted(inputs)}")
        start = time.perf_counter()
        outputs = await signature(**given)
        elapsed = time.perf_counter() - start
    keys = sorted(outputs)
    return _report(keys, [outputs[k] for k in keys], elapsed, args.output)


def _report(names, values, elapsed: float, output: str | None) -> int:
    """Print the fetched values, or save them to an .npz."""
    if output:
        np.savez(output, **{name: np.asarray(v) for name, v in zip(names, values,
                                                                   strict=True)})
        print(f"wrote {len(names)} fetches to {output} ({elapsed * 1e3:.2f} ms)")
    else:
        for name, value in zip(names, values, strict=True):
            print(f"{name} = {np.array2string(np.asarray(value), threshold=20)}")
        print(f"# ran in {elapsed * 1e3:.2f} ms")
    return 0


async def _run_graph(args) -> int:
    import aioflow as af

    if os.path.isdir(args.model):
        return await _run_saved_model(args)
    graph_def = _load_graph_def(args.model)
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(graph_def, name="")
    feeds = _values(args.feed, "--feed")
    fetches = args.fetch or []
    if not fetches:
        print("error: give at least one --fetch NAME", file=sys.stderr)
        return 1
    async with af.Session(graph=graph) as sess:
        start = time.perf_counter()
        values = await sess.run(fetches, feed_dict=feeds)
        elapsed = time.perf_counter() - start
    return _report(fetches, values, elapsed, args.output)


async def _demo(runs: int) -> int:
    import aioflow as af

    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, shape=[None, 4], name="x")
        w = af.constant(np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(4, 4), name="w")
        hidden = af.nn.relu(af.matmul(x, w), name="hidden")

        async def lookup(values):
            await asyncio.sleep(0.05)  # stands for an awaited service call mid-graph
            return values * 2.0

        scaled = af.async_py_func(lookup, [hidden], af.float32, name="lookup")
        total = af.reduce_sum(scaled, axis=1, name="total")
    print("aioflow demo: x[?,4] -> matmul -> relu -> async_py_func (awaits 50 ms) -> "
          "reduce_sum")
    async with af.Session(graph=graph) as sess:
        inputs = [np.full((2, 4), i, dtype=np.float32) for i in range(runs)]
        start = time.perf_counter()
        await sess.run(total, {x: inputs[0]})  # the first run builds the executor
        print(f"first run (prunes the graph, builds its executor): "
              f"{(time.perf_counter() - start) * 1e3:.1f} ms")
        start = time.perf_counter()
        results = await asyncio.gather(*(sess.run(total, {x: v}) for v in inputs))
        elapsed = time.perf_counter() - start
        for i, r in enumerate(results):
            print(f"  run {i}: total = {r}")
        print(f"{runs} concurrent runs, each awaiting 50 ms mid-graph, took {elapsed * 1e3:.1f} "
              f"ms on one event loop (sequentially they would take >= {runs * 50} ms)")
    return 0


def _tensor_info_lines(info) -> list[str]:
    """A TensorInfo as saved_model_cli prints it (dtype, shape, name)."""
    from aioflow.proto import types_pb2

    shape = info.tensor_shape
    dims = "unknown_rank" if shape.unknown_rank else (
        "(" + ", ".join(str(d.size) for d in shape.dim) + ")")
    return [f"        dtype: {types_pb2.DataType.Name(info.dtype)}",
            f"        shape: {dims}", f"        name: {info.name}"]


def _signature_lines(key: str, sig) -> list[str]:
    """One SignatureDef as `saved_model_cli show --all` prints it."""
    lines = [f"\nsignature_def['{key}']:",
             "  The given SavedModel SignatureDef contains the following input(s):"]
    for name in sorted(sig.inputs):
        lines += [f"    inputs['{name}'] tensor_info:", *_tensor_info_lines(sig.inputs[name])]
    lines.append("  The given SavedModel SignatureDef contains the following output(s):")
    for name in sorted(sig.outputs):
        lines += [f"    outputs['{name}'] tensor_info:",
                  *_tensor_info_lines(sig.outputs[name])]
    lines.append(f"  Method name is: {sig.method_name}")
    return lines


def _ops_used(graph_def) -> set[str]:
    """The op types a GraphDef uses, as saved_model_cli lists them (TF's
    ops_used_by_graph_def): its nodes' and, through (Stateful)PartitionedCall and
    function-named ops, its called functions' nodes; function names left out."""
    functions = {f.signature.name: f for f in graph_def.library.function}
    used: set[str] = set()
    pending = [graph_def.node]
    while pending:
        for node in pending.pop():
            called = [node.op]
            if node.op in ("PartitionedCall", "StatefulPartitionedCall"):
                called.append(node.attr["f"].func.name)
            for op in called:
                if op not in used and op in functions:
                    pending.append(functions[op].node_def)
                used.add(op)
    return used - set(functions)


def _structured(value):
    """A StructuredValue as the Python value TF decodes (specs as TensorSpec)."""
    from aioflow.framework.tensor_spec import TensorSpec

    kind = value.WhichOneof("kind")
    if kind == "tensor_spec_value":
        return TensorSpec.from_proto(value.tensor_spec_value)
    if kind in ("list_value", "tuple_value"):
        items = [_structured(v) for v in getattr(value, kind).values]
        return items if kind == "list_value" else tuple(items)
    if kind == "dict_value":
        return {k: _structured(v) for k, v in value.dict_value.fields.items()}
    if kind in (None, "none_value"):
        return None
    return getattr(value, kind)


def _argument_lines(arguments, kind: str = "Argument") -> list[str]:
    """saved_model_cli's _print_args at indent 4, for specs, strings and scalars."""
    from aioflow.framework.tensor_spec import TensorSpec

    lines = []
    for index, element in enumerate(arguments, 1):
        lines.append(f"        {kind} #{index}")
        if isinstance(element, str):
            lines.append(f"          {element}")
        elif isinstance(element, TensorSpec):
            lines.append(f"          {element.name}: {element!r}")
        else:
            lines += [f"          DType: {type(element).__name__}",
                      f"          Value: {element}"]
    return lines


def _concrete_function_lines(meta) -> list[str]:
    """The `Concrete Functions:` section saved_model_cli prints for a TF 2 SavedModel:
    the root's functions by name, each concrete function's input signature."""
    graph = meta.object_graph_def
    lines = ["", "Concrete Functions:"]
    for ref in sorted(graph.nodes[0].children, key=lambda r: r.local_name):
        obj = graph.nodes[ref.node_id]
        if obj.HasField("function"):
            names = list(obj.function.concrete_functions)
        elif obj.HasField("bare_concrete_function"):
            names = [obj.bare_concrete_function.concrete_function_name]
        else:
            continue
        lines.append(f"  Function Name: '{ref.local_name}'")
        for index, name in enumerate(sorted(names), 1):
            concrete = graph.concrete_functions.get(name)
            signature = _structured(concrete.canonicalized_input_signature) if concrete \
                else None
            args, kwargs = signature if isinstance(signature, tuple) and len(
                signature) == 2 else (None, None)
            if args:
                lines += [f"    Option #{index}", "      Callable with:",
                          *_argument_lines(args)]
            if kwargs:
                lines += _argument_lines(kwargs, "Named Argument")
        lines.append("")
    return lines[:-1] if lines[-1] == "" else lines


def _inspect(export_dir: str) -> int:
    """Print every MetaGraphDef's signatures and ops as `saved_model_cli show --all`."""
    from aioflow.saved_model import loader

    saved_model = loader.parse_saved_model(export_dir)
    lines = []
    for meta in saved_model.meta_graphs:
        tags = list(meta.meta_info_def.tags)
        lines.append(f"\nMetaGraphDef with tag-set: '{', '.join(tags)}' contains the "
                     "following SignatureDefs:")
        for key in sorted(meta.signature_def):
            lines += _signature_lines(key, meta.signature_def[key])
        ops = "{" + ", ".join(repr(op) for op in sorted(_ops_used(meta.graph_def))) + "}"
        lines.append(f"The MetaGraph with tag set {tags} contains the following ops: {ops}")
    if any(meta.HasField("object_graph_def") for meta in saved_model.meta_graphs):
        lines += _concrete_function_lines(saved_model.meta_graphs[0])
    print("\n".join(lines))
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line; errors are one line on stderr with exit status 1, and a reader
    that goes away (`aioflow ... | head`) ends it quietly."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here rather than at exit
        return code
    except BrokenPipeError:
        # Python's recipe: point stdout at devnull so that the exit flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _error(e: BaseException) -> int:
    """Print `e` as one line on stderr; the exit status."""
    message = " ".join(line.strip() for line in str(e).splitlines() if line.strip())
    print(f"error: {message}" if isinstance(e, ValueError) and message.startswith("--")
          else f"error: {type(e).__name__}: {message}", file=sys.stderr)
    return 1


def _main(argv: list[str] | None) -> int:
    import aioflow

    parser = argparse.ArgumentParser(prog="aioflow", description=__doc__)
    parser.add_argument("--version", action="version", version=f"aioflow {aioflow.__version__}")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run a GraphDef (.pb or .pbtxt), or a SavedModel "
                         "directory's signature (TF 2 or v1), and print or save what it "
                         "fetches")
    run.add_argument("model", help="a GraphDef file, or a SavedModel directory")
    run.add_argument("--feed", action="append", type=_parse_feed,
                     help="NAME=FILE.npy or NAME=LITERAL (repeatable)")
    run.add_argument("--fetch", action="append", help="tensor or op name (repeatable)")
    run.add_argument("--output", help="save the fetched values to this .npz")
    run.add_argument("--signature", default="serving_default",
                     help="SavedModel: the signature to run (default serving_default)")
    run.add_argument("--tag", action="append", help="SavedModel: a tag of the MetaGraphDef "
                     "to load (repeatable; default serve)")
    run.add_argument("--input", action="append", type=_parse_feed,
                     help="SavedModel: KEY=FILE.npy or KEY=LITERAL, by signature input key")
    inspect = sub.add_parser("inspect", help="print a SavedModel's signatures, ops and "
                             "(TF 2) functions, as saved_model_cli show --all")
    inspect.add_argument("dir")
    demo = sub.add_parser("demo", help="run a built-in graph several times concurrently")
    demo.add_argument("--runs", type=int, default=8)
    from aioflow.serving import flags as serve_flags  # argparse only: no server imports

    serve_flags.add_arguments(sub.add_parser(
        "serve", help="serve models over TF Serving's REST and gRPC APIs (docs/serving.md)"))
    args = parser.parse_args(argv)
    if args.command == "run":
        from aioflow.framework import errors

        try:
            return asyncio.run(_run_graph(args))
        except BrokenPipeError:
            raise
        except (errors.OpError, ValueError, TypeError, OSError, RuntimeError) as e:
            return _error(e)
    if args.command == "inspect":
        from aioflow.framework import errors

        try:
            return _inspect(args.dir)
        except BrokenPipeError:
            raise
        except (errors.OpError, ValueError, OSError) as e:
            return _error(e)
    if args.command == "demo":
        return asyncio.run(_demo(args.runs))
    if args.command == "serve":
        from aioflow.serving.main import run as serve

        return serve(args)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
