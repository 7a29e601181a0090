"""Writes tests/data/tutorials.json: what each TF 1.x tutorial-style training program in
tests/data/tutorials/ (linear and logistic regression, an MLP with tf.layers and Adam, a
CNN with batch normalization, embeddings with sparse updates, a Saver resume mid-training,
MonitoredTrainingSession with hooks, schedules, clipping, moving averages, ...) computes
under TF 2.21: its RESULT (losses per step, weights, ...). tests/test_tutorials.py runs the
same files with their import line changed to `import aioflow.compat.v1 as tf` and
nothing else.

Run from the project root with TF 2.21 and tf-keras 2.21 (tf.compat.v1.layers needs the
legacy Keras; neither is a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_tutorial_fixtures_tf.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
TUTORIALS = HERE / "tutorials"


def plain(value):
    """A RESULT as JSON values (numpy scalars and arrays as numbers and lists)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def run(path: Path, graph_factory) -> dict:
    """Execute the program in a fresh default graph; its RESULT."""
    scope: dict = {"__name__": "__main__"}
    with graph_factory().as_default():
        exec(compile(path.read_text(), str(path), "exec"), scope)  # noqa: S102
    return plain(scope["RESULT"])


def main() -> None:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.compat.v1.layers from tf-keras
    import tensorflow as tf

    out = {path.name: run(path, tf.Graph) for path in sorted(TUTORIALS.glob("t*.py"))}
    (HERE / "tutorials.json").write_text(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
