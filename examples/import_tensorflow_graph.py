"""Run a GraphDef that TensorFlow wrote (a while loop in v1 control flow), unchanged."""

import asyncio
import pathlib
import sys

import numpy as np

import aioflow as af

DEFAULT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data" / "cf_while_counter.pb"


async def main(path: pathlib.Path):
    graph_def = af.GraphDef()
    graph_def.ParseFromString(path.read_bytes())
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    print(f"{path.name}: {len(graph_def.node)} nodes, ops "
          f"{sorted({n.op for n in graph_def.node})}")
    values = np.load(path.with_suffix(".npz"))
    feeds = {k[5:]: values[k] for k in values.files if k.startswith("feed:")}
    fetches = [k[6:] for k in values.files if k.startswith("fetch:")]
    async with af.Session(graph=g) as sess:
        got = await sess.run(fetches, feeds)
    for name, value in zip(fetches, got, strict=True):
        print(f"{name} = {value} (TensorFlow: {values['fetch:' + name]})")


if __name__ == "__main__":
    asyncio.run(main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
