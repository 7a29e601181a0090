"""Make tests/data/convert_image_dtype.pb and .npz: tf.image.convert_image_dtype and
tf.saturate_cast between integer and float dtypes, saturating or not, as TF 2.21 builds
(the GraphDef, node for node) and runs them (the outputs).

Run from the project root with a throwaway TensorFlow install (never a dependency)::

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_convert_image_dtype_tf.py

`program` takes the TF-1-like module (tf.compat.v1 here, aioflow in
tests/test_image_codec.py), so the test builds the same graph with af."""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FLOATS = np.array([-0.5, 0.0, 0.2, 0.5, 0.999, 1.0, 1.5, 3e9], np.float32)

#: (input dtype, output dtype, saturate)
CONVERSIONS = [("uint8", "float32", False), ("uint16", "float64", False),
               ("float32", "uint8", False), ("float32", "uint8", True),
               ("float32", "int32", True), ("float64", "int16", True),
               ("uint8", "int32", False), ("int8", "uint8", True), ("int32", "uint8", False),
               ("int32", "int16", True), ("uint16", "uint8", False),
               ("float32", "float64", False), ("uint8", "uint8", False)]
#: (input dtype, output dtype) of plain saturate_cast
SATURATE = [("float32", "uint8"), ("float32", "int32"), ("int32", "uint8"),
            ("float64", "float16"), ("uint8", "int8")]


def feed_value(dtype: str) -> np.ndarray:
    kind = np.dtype(dtype)
    if kind.kind == "f":
        return FLOATS.astype(kind)
    info = np.iinfo(kind)
    return np.array([info.min, info.min + 1, -1 if info.min < 0 else 1, 0, 7, 100,
                     info.max - 1, info.max], kind)


def program(tf):
    """Placeholders named by dtype; fetches named by what they convert."""
    inputs = {d: tf.placeholder(getattr(tf, d), [None], name=f"in_{d}")
              for d in sorted({c[0] for c in CONVERSIONS + SATURATE})}
    fetches = {}
    for source, target, saturate in CONVERSIONS:
        out = tf.image.convert_image_dtype(inputs[source], getattr(tf, target),
                                           saturate=saturate)
        fetches[f"convert_{source}_{target}_{int(saturate)}"] = out
    for source, target in SATURATE:
        fetches[f"saturate_{source}_{target}"] = tf.saturate_cast(inputs[source],
                                                                  getattr(tf, target))
    return fetches, {f"in_{d}:0": feed_value(d) for d in inputs}


def main() -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    graph = v1.Graph()
    with graph.as_default():
        fetches, feeds = program(v1)
    with v1.Session(graph=graph) as sess:
        values = sess.run(fetches, {graph.get_tensor_by_name(k): v for k, v in feeds.items()})
    (HERE / "convert_image_dtype.pb").write_bytes(graph.as_graph_def().SerializeToString())
    np.savez(HERE / "convert_image_dtype.npz",
             **{f"feed:{k}": v for k, v in feeds.items()},
             **{f"fetch:{k}": v for k, v in values.items()})
    print(f"{len(fetches)} fetches, {len(graph.as_graph_def().node)} nodes")


if __name__ == "__main__":
    main()
