"""Comparing a GraphDef aioflow built with the one TensorFlow wrote, node by node."""

from __future__ import annotations

from aioflow.proto import graph_pb2


def _describe(attr) -> str:
    return " ".join(str(attr).split())


def assert_same_graph(mine: graph_pb2.GraphDef, ref: graph_pb2.GraphDef) -> None:
    """Node names (in order), ops, inputs, devices and attrs all equal."""
    ref_names = [n.name for n in ref.node]
    mine_names = [n.name for n in mine.node]
    assert sorted(mine_names) == sorted(ref_names), (
        f"missing: {sorted(set(ref_names) - set(mine_names))}, "
        f"extra: {sorted(set(mine_names) - set(ref_names))}")
    assert mine_names == ref_names
    problems = []
    for m, r in zip(mine.node, ref.node, strict=True):
        if m.op != r.op:
            problems.append(f"{r.name}: op {m.op} != {r.op}")
        if list(m.input) != list(r.input):
            problems.append(f"{r.name}: inputs {list(m.input)} != {list(r.input)}")
        if m.device != r.device:
            problems.append(f"{r.name}: device {m.device!r} != {r.device!r}")
        for key in sorted(set(m.attr) | set(r.attr)):
            if key not in m.attr or key not in r.attr or m.attr[key] != r.attr[key]:
                mv = _describe(m.attr[key]) if key in m.attr else "<missing>"
                rv = _describe(r.attr[key]) if key in r.attr else "<missing>"
                problems.append(f"{r.name}: attr {key}: {mv} != {rv}")
    assert not problems, "\n".join(problems)
