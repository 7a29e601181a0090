"""aioflow partitions a TensorFlow-written graph over two CPUs as TensorFlow did.

tests/data/make_partition_fixture.py made the GraphDef and recorded TF 2.21's partition
graphs (optimizers off). Transfer-node counters and edge ids are TF's own numbering, so
names are compared with `/_<n>` and `edge_<id>_` normalised; everything else must match:
which nodes land on which device, every node's op and inputs, and the transfer attrs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import aioflow as af

pytestmark = pytest.mark.usefixtures("segments_mode")  # compiled segments on and off

DATA = Path(__file__).resolve().parent / "data"
NAME = "partition_two_cpus"
_TRANSFER_ATTRS = ("T", "tensor_type", "tensor_name", "send_device", "recv_device",
                   "client_terminated", "dtype")


def _norm(text: str) -> str:
    return re.sub(r"^edge_\d+_", "edge_N_", re.sub(r"/_\d+", "/_N", text))


def _summary(graph_def) -> dict[str, list]:
    """Per device: sorted (name, op, inputs, transfer attrs), numbering normalised."""
    out: dict[str, list] = {}
    for node in graph_def.node:
        attrs = []
        for key in _TRANSFER_ATTRS:
            if key in node.attr:
                value = node.attr[key]
                kind = value.WhichOneof("value")
                attrs.append((key, _norm(value.s.decode()) if kind == "s"
                              else str(getattr(value, kind))))
        out.setdefault(node.device, []).append(
            (_norm(node.name), node.op, tuple(sorted(_norm(i) for i in node.input)),
             tuple(attrs)))
    return {device: sorted(nodes) for device, nodes in out.items()}


async def test_partitions_match_tensorflows():
    spec = json.loads((DATA / f"{NAME}.json").read_text())
    graph_def = af.GraphDef()
    graph_def.ParseFromString((DATA / f"{NAME}.pb").read_bytes())
    tf_md = af.RunMetadata()
    tf_md.ParseFromString((DATA / f"{NAME}_parts.pb").read_bytes())
    arrays = np.load(DATA / f"{NAME}.npz")
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    config = af.ConfigProto(device_count={"CPU": 2})
    config.graph_options.optimizer_options.opt_level = af.OptimizerOptions.L0
    async with af.Session(graph=g, config=config) as sess:
        md = af.RunMetadata()
        values = await sess.run(spec["fetches"], {k: arrays[f"feed:{k}"] for k in spec["feeds"]},
                                options=af.RunOptions(output_partition_graphs=True),
                                run_metadata=md)
    for name, value in zip(spec["fetches"], values, strict=True):
        np.testing.assert_array_equal(value, arrays[f"fetch:{name}"])
    ours, theirs = {}, {}
    for pg in md.partition_graphs:
        ours.update(_summary(pg))
    for pg in tf_md.partition_graphs:
        theirs.update(_summary(pg))
    assert sorted(ours) == sorted(theirs)
    for device in theirs:
        assert ours[device] == theirs[device], device
