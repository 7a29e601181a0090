"""Run docs/porting.md's TF 1.x blocks in TensorFlow 2.21 and record what each prints
(tests/data/porting_tf_outputs.json), after writing the frozen graph they serve
(tests/data/frozen_mlp.pb: a two-layer MLP, weights folded into constants).

    /work/peers-venv/bin/python tests/data/capture_porting_tf_outputs.py
"""

import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf

DATA = pathlib.Path(__file__).resolve().parent
DOC = DATA.parent.parent / "docs" / "porting.md"
TF_IMPORT = "import tensorflow.compat.v1 as tf"


def tf_blocks(text: str) -> list[str]:
    """The ```python blocks of the page that import TF 1.x."""
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return [b for b in blocks if TF_IMPORT in b]


def write_frozen_mlp(path: pathlib.Path) -> None:
    tf1 = tf.compat.v1
    graph = tf1.Graph()
    rng = np.random.RandomState(7)
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 4], name="input")
        w1 = tf.constant(rng.normal(size=(4, 8)).astype(np.float32), name="w1")
        b1 = tf.constant(rng.normal(size=(8,)).astype(np.float32), name="b1")
        w2 = tf.constant(rng.normal(size=(8, 3)).astype(np.float32), name="w2")
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1), name="hidden")
        tf.nn.softmax(tf.matmul(hidden, w2), name="output")
    path.write_bytes(graph.as_graph_def().SerializeToString())


def main():
    frozen = DATA / "frozen_mlp.pb"
    write_frozen_mlp(frozen)
    outputs = []
    for block in tf_blocks(DOC.read_text()):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(frozen, tmp)
            proc = subprocess.run([sys.executable, "-c", block], cwd=tmp, capture_output=True,
                                  text=True, timeout=600)
            if proc.returncode != 0:
                raise SystemExit(proc.stderr)
            outputs.append(proc.stdout)
    out = DATA / "porting_tf_outputs.json"
    out.write_text(json.dumps({"tensorflow": tf.__version__, "outputs": outputs}, indent=1)
                   + "\n")
    print(f"recorded {len(outputs)} blocks in {out}")


if __name__ == "__main__":
    main()
