"""Make whole-model fixtures: tf.keras models (and two hand-written TF graphs) frozen to v1
GraphDefs, each with a fixed input and TensorFlow's outputs (tests/test_models.py runs them
in aioflow and compares).

Run from the project root with TensorFlow 2.21 (never an aioflow dependency)::

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_model_fixtures.py
    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_model_fixtures.py --large

The first writes the small, committed fixtures next to this file (``models_<name>.pb`` /
``.npz``, and ``models_manifest.jsonl``); ``--large`` writes the Keras applications at full
size into ``tests/data/models/`` (git-ignored, about 300 MB: ``<name>.pb`` / ``.npz`` and
``manifest.jsonl``); ``--all`` both; naming models (``mobilenet_v2_1.0_224 resnet50``)
limits a run to those.

How each model is made:

- Keras models are built with ``weights=None`` after ``keras.utils.set_random_seed(0)``.
  Random weights leave batch-norm statistics at mean 0 / variance 1, and a deep net then
  gives activations that explode or vanish: each BatchNormalization is first calibrated
  (momentum 0, one training-mode pass over a fixed calibration batch), so its moving
  statistics are that batch's and activations stay near unit scale all the way down.
  Applications are built with ``classifier_activation=None`` and the frozen function
  returns the logits and ``tf.nn.softmax`` of them (a saturated softmax would hide errors).
- Feed-forward models are traced with ``tf.function`` and frozen with
  ``convert_variables_to_constants_v2`` (variables become ``Const`` nodes; no functions
  remain).
- The LSTM and GRU classifiers come twice. ``lstm_text``/``gru_text`` are built in a
  ``tf.compat.v1`` graph with control flow v2 off, so Keras's RNN loop is TF 1.x's
  ``Enter``/``Merge``/``Switch``/``NextIteration``/``Exit`` with ``TensorArrayV3``; frozen
  with ``tf.compat.v1.graph_util.convert_variables_to_constants``. ``*_tf2`` are frozen
  as TF 2 freezes any Keras model (``convert_variables_to_constants_v2``, which lowers the
  ``While`` to the same v1 control flow): their loops carry TensorList ops.
- The SSD post-processing graph and the TF 1.x-style conv net are written with
  ``tf.compat.v1`` ops (box decoding, sigmoid scores, ``TopKV2``, ``GatherV2``,
  ``NonMaxSuppressionV3/V4/V5``; ref variables, ``FusedBatchNormV3``, pooling, transposed
  conv, resize).
- Function-frozen graphs are made canonical (nodes sorted by name, the unconnected
  ``unused_control_flow_input_N`` placeholders and the tracing-only
  ``_has_manual_control_dependencies`` attr dropped): the committed files are the same
  bytes on every run.
- Expected outputs are what TensorFlow computes running the frozen GraphDef itself
  (``tf.compat.v1.Session``, oneDNN off: ``TF_ENABLE_ONEDNN_OPTS=0``); they are checked
  against the Keras model's own outputs before anything is written.

Files per model: ``.pb`` (the GraphDef, ``SerializeToString(deterministic=True)``),
``.npz`` (``feed:<tensor>`` inputs and ``fetch:<tensor>`` outputs, as the other fixtures in
this directory), and one JSON line in the manifest: ``name``, ``pb``, ``npz``,
``description``, ``feeds`` ({tensor: {dtype, shape}}: the placeholder's shape, ``null`` for
an unknown dimension), ``fetches`` (tensor names in order), ``outputs`` (a readable name
per fetch), ``ops`` ({op: count}), ``num_nodes``, ``control_flow``, ``pb_bytes``,
``tensorflow`` and ``keras`` versions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
LARGE_DIR = HERE / "models"
SMALL_MANIFEST = HERE / "models_manifest.jsonl"
LARGE_MANIFEST = LARGE_DIR / "manifest.jsonl"

tf = keras = None  # imported in main(): the tests may import this module's names


# ---------------------------------------------------------------------------------------------
# Freezing
# ---------------------------------------------------------------------------------------------

def _calibrate_batch_norm(model, batch):
    """Moving statistics of every BatchNormalization := those of one pass over `batch`."""
    bns = [layer for layer in model._flatten_layers() if
           isinstance(layer, keras.layers.BatchNormalization)]
    for layer in bns:
        layer.momentum = 0.0
    model(batch, training=True)
    return len(bns)


def _freeze_function(fn, specs):
    """tf.function(fn) traced on `specs` -> (frozen GraphDef, feed names, fetch names)."""
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )
    concrete = tf.function(fn).get_concrete_function(*specs)
    frozen = convert_variables_to_constants_v2(concrete)
    feeds = [t.name for t in frozen.inputs]
    fetches = [t.name for t in frozen.outputs]
    return _canonical(frozen.graph.as_graph_def()), feeds, fetches


def _canonical(graph_def):
    """The same graph, the same bytes on every run: nodes sorted by name (the freezer's
    order varies from run to run), without the Placeholders that lowering a While leaves
    unconnected ("unused_control_flow_input_N": how many varies from run to run) and
    without the `_has_manual_control_dependencies` attr."""
    used = {i.lstrip("^").split(":")[0] for n in graph_def.node for i in n.input}
    keep = [n for n in graph_def.node if not (
        n.op == "Placeholder" and n.name.startswith("unused_control_flow_input")
        and n.name not in used)]
    out = type(graph_def)()
    out.CopyFrom(graph_def)
    del out.node[:]
    out.node.extend(sorted(keep, key=lambda n: n.name))
    for n in out.node:
        # a tracing-time mark (automatic control dependencies), set on some runs only
        if "_has_manual_control_dependencies" in n.attr:
            del n.attr["_has_manual_control_dependencies"]
    return out


def _run_graph_def(graph_def, feeds, fetches):
    """TensorFlow runs the frozen GraphDef: the values the fixture records."""
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    with tf.compat.v1.Session(graph=g) as sess:
        return sess.run(fetches, feed_dict=feeds)


def _check_close(name, frozen, direct, tol=1e-3):
    """The frozen graph computes what the model does: floats to within `tol` of each
    output's largest magnitude (TF's session rewrites the graph, constant folding and
    reordering float arithmetic, so a deep net's values move by ~1e-5 of their scale),
    everything else exactly."""
    for i, (a, b) in enumerate(zip(frozen, direct, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (name, i, a.shape, b.shape)
        if b.dtype.kind == "f":
            scale = float(np.max(np.abs(b))) if b.size else 1.0
            err = float(np.max(np.abs(a - b))) if b.size else 0.0
            assert err <= tol * scale, f"{name} output {i}: frozen vs model {err} > {tol} * {scale}"
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{name}: output {i}")


# ---------------------------------------------------------------------------------------------
# Models. Each returns a dict: graph_def, feeds {tensor: value}, fetches [tensor],
# outputs [readable name], direct [the model's own outputs], control_flow, description.
# ---------------------------------------------------------------------------------------------

def _image_model(app, size, batch, classes=1000, seed=1, pixel_range=(-1.0, 1.0), **kw):
    keras.utils.set_random_seed(0)
    model = app(input_shape=(size, size, 3), weights=None, classes=classes,
                classifier_activation=None, **kw)
    lo, hi = pixel_range
    rng = np.random.default_rng(seed)
    calib = rng.uniform(lo, hi, (4, size, size, 3)).astype(np.float32)
    n_bn = _calibrate_batch_norm(model, calib)
    x = rng.uniform(lo, hi, (batch, size, size, 3)).astype(np.float32)

    def fn(images):
        logits = model(images, training=False)
        return {"logits": logits, "probs": tf.nn.softmax(logits)}

    graph_def, feeds, fetches = _freeze_function(
        fn, [tf.TensorSpec([None, size, size, 3], tf.float32, name="images")])
    out = fn(tf.constant(x))
    # structured outputs come back in sorted key order: logits, probs
    return dict(graph_def=graph_def, feeds={feeds[0]: x}, fetches=fetches,
                outputs=["logits", "probs"], direct=[out["logits"].numpy(), out["probs"].numpy()],
                control_flow=False,
                description=f"keras.applications.{app.__name__}(weights=None, "
                            f"input {size}x{size}x3, classes={classes}"
                            + "".join(f", {k}={v}" for k, v in kw.items())
                            + f"), {n_bn} BatchNormalization layers calibrated on a fixed batch; "
                            f"input uniform in [{lo:g}, {hi:g}], batch {batch}")


def mobilenet_v2_035_96():
    return _image_model(keras.applications.MobileNetV2, 96, batch=2, classes=10, alpha=0.35)


def mobilenet_v2_10_224():
    return _image_model(keras.applications.MobileNetV2, 224, batch=2)


def resnet50():
    return _image_model(keras.applications.ResNet50, 224, batch=2)


def efficientnet_b0():
    # include_preprocessing (the default): Rescaling(1/255) and Normalization in the graph
    return _image_model(keras.applications.EfficientNetB0, 224, batch=2,
                        pixel_range=(0.0, 255.0))


def inception_v3():
    return _image_model(keras.applications.InceptionV3, 299, batch=2)


def densenet121():
    return _image_model(keras.applications.DenseNet121, 224, batch=2)


VOCAB, SEQ_LEN = 500, 24


def _tokens(batch, seed):
    """Token ids with trailing padding (0) of varying length, one row unpadded."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, VOCAB, (batch, SEQ_LEN)).astype(np.int32)
    for row, length in enumerate(rng.integers(3, SEQ_LEN, batch)):
        if row:
            tokens[row, length:] = 0
    return tokens


def _rnn_model(cell, mask_zero, return_sequences):
    """Embedding -> RNN -> Dense(16, relu) -> Dense(4) logits, and their softmax."""
    inp = keras.Input((SEQ_LEN,), dtype="int32", name="tokens")
    # unit-scale embeddings (Keras's default, uniform +-0.05, gives near-constant outputs:
    # a weak test)
    h = keras.layers.Embedding(VOCAB, 16, mask_zero=mask_zero, name="embedding",
                               embeddings_initializer=keras.initializers.RandomNormal(
                                   stddev=1.0))(inp)
    if return_sequences:
        seq, state = cell(32, return_sequences=True, return_state=True,
                          name=cell.__name__.lower())(h)[:2]
        pooled = keras.layers.GlobalAveragePooling1D(name="average")(seq)
        h = keras.layers.Concatenate(name="features")([state, pooled])
    else:
        h = cell(32, name=cell.__name__.lower())(h)
    h = keras.layers.Dense(16, activation="relu", name="hidden")(h)
    logits = keras.layers.Dense(4, name="classes")(h)
    return keras.Model(inp, [logits, keras.layers.Softmax()(logits)])


def _rnn_description(cell, mask_zero, return_sequences, how):
    rnn = (f"{cell.__name__}(32, return_sequences, return_state) -> [final state, masked "
           "average of the sequence]" if return_sequences else f"{cell.__name__}(32)")
    return (f"Keras text classifier: Embedding({VOCAB}, 16, mask_zero={mask_zero}) -> {rnn} "
            f"-> Dense(16, relu) -> Dense(4) logits, softmax; {how}; {SEQ_LEN} tokens, "
            "padded rows")


def _rnn_classifier(cell, mask_zero):
    """The classifier built in a tf.compat.v1 graph with control flow v2 off: Keras's loop
    is then TF 1.x's Enter/Merge/Switch/Exit with TensorArrayV3. return_sequences (each
    step's output written once, at index t): with return_sequences=False Keras rewrites
    index 0 every step, which a v1 TensorArrayV3 refuses ("already been written to")."""
    from tensorflow.python.ops import control_flow_util
    saved = control_flow_util.ENABLE_CONTROL_FLOW_V2
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = False
    try:
        keras.utils.set_random_seed(0)
        tokens = _tokens(3, seed=2)
        g = tf.Graph()
        with g.as_default():
            model = _rnn_model(cell, mask_zero, return_sequences=True)
            x = tf.compat.v1.placeholder(tf.int32, [None, SEQ_LEN], name="tokens")
            ys = [tf.identity(t, name=n) for t, n in zip(model(x), ["logits", "probs"],
                                                          strict=True)]
            with tf.compat.v1.Session(graph=g) as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                direct = sess.run(ys, {x: tokens})
                graph_def = tf.compat.v1.graph_util.convert_variables_to_constants(
                    sess, g.as_graph_def(), ["logits", "probs"])
    finally:
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = saved
    return dict(graph_def=graph_def, feeds={"tokens:0": tokens},
                fetches=["logits:0", "probs:0"], outputs=["logits", "probs"], direct=direct,
                control_flow=True,
                description=_rnn_description(cell, mask_zero, True,
                                             "v1 control flow (tf.compat.v1 graph, control "
                                             "flow v2 off)"))


def _rnn_classifier_tf2(cell, mask_zero, return_sequences):
    """The classifier frozen as TF 2 freezes a Keras model (tf.function +
    convert_variables_to_constants_v2, whose default lowers the While to v1 control flow):
    the loop carries TensorLists (TensorListReserve/FromTensor/GetItem/SetItem/Stack)."""
    keras.utils.set_random_seed(0)
    tokens = _tokens(3, seed=2)
    model = _rnn_model(cell, mask_zero, return_sequences)

    def fn(tokens):
        logits, probs = model(tokens, training=False)
        return {"logits": logits, "probs": probs}

    graph_def, feeds, fetches = _freeze_function(
        fn, [tf.TensorSpec([None, SEQ_LEN], tf.int32, name="tokens")])
    out = fn(tf.constant(tokens))
    return dict(graph_def=graph_def, feeds={feeds[0]: tokens}, fetches=fetches,
                outputs=["logits", "probs"],
                direct=[out["logits"].numpy(), out["probs"].numpy()], control_flow=True,
                description=_rnn_description(cell, mask_zero, return_sequences,
                                             "frozen by convert_variables_to_constants_v2 "
                                             "(While lowered to v1 control flow, "
                                             "TensorList ops)"))


def lstm_text():
    return _rnn_classifier(keras.layers.LSTM, mask_zero=False)


def gru_text():
    return _rnn_classifier(keras.layers.GRU, mask_zero=True)


def lstm_text_tf2():
    return _rnn_classifier_tf2(keras.layers.LSTM, mask_zero=True, return_sequences=False)


def gru_text_tf2():
    return _rnn_classifier_tf2(keras.layers.GRU, mask_zero=False, return_sequences=True)


def bert_tiny():
    """A BERT-style encoder: token + position + segment embeddings, 2 post-LN transformer
    blocks (MultiHeadAttention with a padding mask, Dense-gelu(exact, Erf) feed-forward),
    and a tanh pooler over the first token."""
    keras.utils.set_random_seed(0)
    width, heads, ffn, layers = 32, 4, 64, 2
    tokens_in = keras.Input((None,), dtype="int32", name="input_ids")
    segments_in = keras.Input((None,), dtype="int32", name="segment_ids")
    emb = keras.layers.Embedding(VOCAB, width, name="word_embeddings")(tokens_in)
    seg = keras.layers.Embedding(2, width, name="segment_embeddings")(segments_in)
    pos_table = keras.layers.Embedding(64, width, name="position_embeddings")

    class AddPositions(keras.layers.Layer):
        def call(self, x):
            positions = tf.range(tf.shape(x)[1])
            return x + pos_table(positions)[tf.newaxis]

    h = AddPositions()(emb + seg)
    h = keras.layers.LayerNormalization(epsilon=1e-12, name="embeddings_ln")(h)
    mask = keras.layers.Lambda(
        lambda t: tf.cast(t[:, tf.newaxis, :] > 0, tf.bool), name="attention_mask")(tokens_in)
    for i in range(layers):
        att = keras.layers.MultiHeadAttention(heads, width // heads, name=f"attention_{i}")(
            h, h, attention_mask=mask)
        h = keras.layers.LayerNormalization(epsilon=1e-12, name=f"attention_ln_{i}")(h + att)
        # layer 0: Keras's exact gelu (TF writes it with Erfc); layer 1: the original BERT
        # code's 0.5 * x * (1 + erf(x / sqrt(2)))
        f = keras.layers.Dense(ffn, activation="gelu" if i == 0 else None,
                               name=f"ffn_in_{i}")(h)
        if i:
            f = keras.layers.Lambda(
                lambda t: 0.5 * t * (1.0 + tf.math.erf(t / np.sqrt(2.0).astype(np.float32))),
                name=f"gelu_{i}")(f)
        f = keras.layers.Dense(width, name=f"ffn_out_{i}")(f)
        h = keras.layers.LayerNormalization(epsilon=1e-12, name=f"ffn_ln_{i}")(h + f)
    pooled = keras.layers.Dense(width, activation="tanh", name="pooler")(h[:, 0])
    model = keras.Model([tokens_in, segments_in], [h, pooled])

    tokens = _tokens(2, seed=3)[:, :16]
    segments = np.zeros_like(tokens)
    segments[:, 8:] = 1

    def fn(input_ids, segment_ids):
        seq, pool = model([input_ids, segment_ids], training=False)
        return {"pooled": pool, "sequence": seq}

    graph_def, feeds, fetches = _freeze_function(
        fn, [tf.TensorSpec([None, None], tf.int32, name="input_ids"),
             tf.TensorSpec([None, None], tf.int32, name="segment_ids")])
    out = fn(tf.constant(tokens), tf.constant(segments))
    return dict(graph_def=graph_def, feeds={feeds[0]: tokens, feeds[1]: segments},
                fetches=fetches, outputs=["pooled", "sequence"],
                direct=[out["pooled"].numpy(), out["sequence"].numpy()], control_flow=False,
                description=f"BERT-style encoder (Keras): vocab {VOCAB}, width {width}, "
                            f"{heads} heads, FFN {ffn} (exact gelu: Erfc, then Erf), "
                            f"{layers} layers, "
                            "post-LN, padding attention mask, tanh pooler; batch 2 x 16 tokens")


def ssd_postprocess():
    """SSD-style detection post-processing in a tf.compat.v1 graph: decode box encodings
    against constant anchors, sigmoid class scores, pre-filter the top 64 by best class
    score (TopKV2 + GatherV2), NMS three ways (V3 per class 1, V4 padded per class 2, V5
    with scores and soft-NMS over the best class), gather the kept boxes."""
    rng = np.random.default_rng(4)
    n_anchors, n_classes, k, max_out = 256, 4, 64, 10
    centers = rng.uniform(0.05, 0.95, (n_anchors, 2))
    sizes = rng.uniform(0.05, 0.4, (n_anchors, 2))
    anchors = np.concatenate([centers, sizes], axis=1).astype(np.float32)  # cy cx h w
    encodings = (rng.standard_normal((1, n_anchors, 4)) * 0.5).astype(np.float32)
    logits = rng.standard_normal((1, n_anchors, n_classes + 1)).astype(np.float32)
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        enc = v1.placeholder(tf.float32, [1, None, 4], name="box_encodings")
        cls = v1.placeholder(tf.float32, [1, None, n_classes + 1], name="class_logits")
        anc = tf.constant(anchors, name="anchors")
        with tf.name_scope("decode"):
            e = tf.squeeze(enc, 0)
            ty, tx, th, tw = tf.unstack(e / tf.constant([10.0, 10.0, 5.0, 5.0]), axis=1)
            ycenter = ty * anc[:, 2] + anc[:, 0]
            xcenter = tx * anc[:, 3] + anc[:, 1]
            h = tf.exp(th) * anc[:, 2]
            w = tf.exp(tw) * anc[:, 3]
            boxes = tf.stack([ycenter - h / 2, xcenter - w / 2, ycenter + h / 2,
                              xcenter + w / 2], axis=1, name="boxes")
            boxes = tf.clip_by_value(boxes, 0.0, 1.0)
        scores = tf.sigmoid(tf.squeeze(cls, 0))[:, 1:]  # drop the background class
        best = tf.reduce_max(scores, axis=1)
        top_scores, top_idx = tf.nn.top_k(best, k=k, name="prefilter")
        top_boxes = tf.gather(boxes, top_idx, name="top_boxes")
        top_class_scores = tf.gather(scores, top_idx, name="top_class_scores")
        top_classes = tf.argmax(top_class_scores, axis=1, output_type=tf.int32)
        # V3: class 1, plain
        sel3 = tf.image.non_max_suppression(top_boxes, top_class_scores[:, 0], max_out,
                                            iou_threshold=0.5, score_threshold=0.3,
                                            name="nms_v3")
        # V4: class 2, padded to max_out
        sel4, valid4 = tf.raw_ops.NonMaxSuppressionV4(
            boxes=top_boxes, scores=top_class_scores[:, 1], max_output_size=max_out,
            iou_threshold=0.45, score_threshold=0.2, pad_to_max_output_size=True,
            name="nms_v4")
        # V5: best class, soft-NMS
        sel5, sel5_scores = tf.image.non_max_suppression_with_scores(
            top_boxes, top_scores, max_out, iou_threshold=0.6, score_threshold=0.1,
            soft_nms_sigma=0.5, name="nms_v5")
        outs = {
            "v3_boxes": tf.gather(top_boxes, sel3, name="v3_boxes"),
            "v4_indices": tf.identity(sel4, name="v4_indices"),
            "v4_valid": tf.identity(valid4, name="v4_valid"),
            "detection_boxes": tf.gather(top_boxes, sel5, name="detection_boxes"),
            "detection_scores": tf.identity(sel5_scores, name="detection_scores"),
            "detection_classes": tf.gather(top_classes, sel5, name="detection_classes"),
            "num_detections": tf.size(sel5, name="num_detections"),
        }
        names = sorted(outs)
        feeds = {"box_encodings:0": encodings, "class_logits:0": logits}
        with v1.Session(graph=g) as sess:
            direct = sess.run([outs[n] for n in names], feeds)
        graph_def = g.as_graph_def()
    return dict(graph_def=graph_def, feeds=feeds, fetches=[f"{n}:0" for n in names],
                outputs=names, direct=direct, control_flow=False,
                description=f"SSD-style post-processing: {n_anchors} anchors, {n_classes} "
                            f"classes + background; box decoding (Exp), sigmoid scores, "
                            f"TopKV2 k={k} pre-filter, GatherV2, NonMaxSuppressionV3/V4/V5 "
                            f"(V5 soft-NMS), max {max_out} detections")


def tf1_convnet():
    """A TF 1.x-style frozen conv net (what tf.compat.v1 layers and Keras 2 wrote, and
    Keras 3 no longer does): ref variables (VariableV2, frozen to Const + `/read`),
    FusedBatchNormV3 at inference, Conv2D with SAME / EXPLICIT padding and dilation,
    DepthwiseConv2dNative, MaxPool, AvgPool, BiasAdd, a transposed conv
    (Conv2DBackpropInput), ResizeBilinear / ResizeNearestNeighbor, and the activations
    Relu6, LeakyRelu, Elu, Selu, Softplus; a classification head (Mean, MatMul, Softmax)
    and a dense per-pixel head (LogSoftmax)."""
    v1 = tf.compat.v1
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (2, 48, 48, 3)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        images = v1.placeholder(tf.float32, [None, 48, 48, 3], name="images")

        def var(name, shape, scale=None):
            fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
            value = rng.standard_normal(shape) * (scale or np.sqrt(2.0 / fan_in))
            return v1.get_variable(name, initializer=value.astype(np.float32),
                                   use_resource=False)

        def bn(h, name):
            c = h.shape[-1]
            with v1.variable_scope(name):
                gamma = var("gamma", [c], 0.2)
                beta = var("beta", [c], 0.2)
                mean = var("moving_mean", [c], 0.1)
                variance = v1.get_variable(
                    "moving_variance", use_resource=False,
                    initializer=rng.uniform(0.5, 2.0, c).astype(np.float32))
            y, _, _ = v1.nn.fused_batch_norm(h, gamma + 1.0, beta, mean, variance,
                                             epsilon=1e-3, is_training=False, name=name)
            return y

        h = tf.nn.conv2d(images, var("conv1", [3, 3, 3, 16]), 2, "SAME", name="conv1")
        h = tf.nn.relu6(bn(h, "bn1"))                                          # 24x24x16
        h = tf.nn.depthwise_conv2d(h, var("dw2", [3, 3, 16, 1]), [1, 1, 1, 1], "SAME",
                                   name="dw2")
        h = tf.nn.relu6(bn(h, "bn2"))
        h = tf.nn.bias_add(tf.nn.conv2d(h, var("pw3", [1, 1, 16, 24]), 1, "VALID"),
                           var("pw3_bias", [24], 0.1), name="pw3")
        skip = tf.nn.leaky_relu(h, 0.1)                                        # 24x24x24
        h = tf.nn.max_pool2d(skip, 3, 2, "SAME", name="pool4")                 # 12x12x24
        h = tf.nn.conv2d(h, var("conv5", [3, 3, 24, 32]), 1,
                         [[0, 0], [1, 1], [2, 2], [0, 0]], name="conv5")      # 12x14x32
        h = tf.nn.elu(bn(h, "bn5"))
        h = tf.nn.avg_pool2d(h, 2, 2, "VALID", name="pool6")                   # 6x7x32
        h = tf.nn.conv2d(h, var("conv7", [3, 3, 32, 32]), 1, "SAME", dilations=2,
                         name="conv7")
        features = tf.nn.selu(h)
        up = tf.nn.conv2d_transpose(features, var("up8", [3, 3, 16, 32]),
                                    tf.stack([tf.shape(features)[0], 12, 14, 16]), 2,
                                    "SAME", name="up8")                        # 12x14x16
        up = tf.nn.softplus(up)
        up = v1.image.resize_bilinear(up, [24, 24], half_pixel_centers=True, name="resize9")
        seg = tf.concat([up, v1.image.resize_nearest_neighbor(skip, [24, 24])], axis=3)
        seg = tf.nn.conv2d(seg, var("seg10", [1, 1, 40, 5]), 1, "VALID", name="seg10")
        pooled = tf.reduce_mean(features, axis=[1, 2])
        logits = tf.nn.bias_add(tf.matmul(pooled, var("fc", [32, 10])), var("fc_bias", [10]),
                                name="logits")
        outs = [logits, tf.nn.softmax(logits, name="probs"),
                tf.nn.log_softmax(seg, name="segmentation")]
        names = ["logits", "probs", "segmentation"]
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            direct = sess.run(outs, {images: x})
            graph_def = v1.graph_util.convert_variables_to_constants(sess, g.as_graph_def(),
                                                                     names)
    return dict(graph_def=graph_def, feeds={"images:0": x},
                fetches=[f"{n}:0" for n in names], outputs=names, direct=direct,
                control_flow=False,
                description="TF 1.x-style conv net (tf.compat.v1 ops, ref variables): "
                            "FusedBatchNormV3, Conv2D SAME/EXPLICIT/dilated, depthwise, "
                            "max/avg pool, transposed conv, bilinear/nearest resize; "
                            "classification and per-pixel heads; input 2x48x48x3")


SMALL = {
    "tf1_convnet": tf1_convnet,
    "mobilenet_v2_0.35_96": mobilenet_v2_035_96,
    "lstm_text": lstm_text,
    "gru_text": gru_text,
    "lstm_text_tf2": lstm_text_tf2,
    "gru_text_tf2": gru_text_tf2,
    "bert_tiny": bert_tiny,
    "ssd_postprocess": ssd_postprocess,
}
LARGE = {
    "mobilenet_v2_1.0_224": mobilenet_v2_10_224,
    "resnet50": resnet50,
    "efficientnet_b0": efficientnet_b0,
    "inception_v3": inception_v3,
    "densenet121": densenet121,
}


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------

def _shape(dims):
    return None if dims.unknown_rank else [None if d.size < 0 else d.size for d in dims.dim]


def make(name, build, out_dir, prefix):
    keras.backend.clear_session()  # layer-name counters: the same names whatever ran before
    m = build()
    graph_def = m["graph_def"]
    assert not graph_def.library.function, f"{name}: functions left in the frozen graph"
    values = _run_graph_def(graph_def, m["feeds"], m["fetches"])
    _check_close(name, values, m["direct"])
    nodes = {n.name: n for n in graph_def.node}
    data = graph_def.SerializeToString(deterministic=True)
    base = f"{prefix}{name}"
    (out_dir / f"{base}.pb").write_bytes(data)
    arrays = {f"feed:{k}": np.asarray(v) for k, v in m["feeds"].items()}
    arrays.update({f"fetch:{k}": np.asarray(v) for k, v in zip(m["fetches"], values,
                                                               strict=True)})
    np.savez_compressed(out_dir / f"{base}.npz", **arrays)
    feeds = {}
    for k, v in m["feeds"].items():
        node = nodes[k.split(":")[0]]
        feeds[k] = {"dtype": np.asarray(v).dtype.name, "shape": _shape(node.attr["shape"].shape)}
    entry = dict(name=name, pb=f"{base}.pb", npz=f"{base}.npz", description=m["description"],
                 feeds=feeds, fetches=m["fetches"], outputs=m["outputs"],
                 ops=dict(sorted(Counter(n.op for n in graph_def.node).items())),
                 num_nodes=len(graph_def.node), control_flow=m["control_flow"],
                 pb_bytes=len(data), tensorflow=tf.__version__, keras=keras.__version__)
    print(f"{name}: {len(graph_def.node)} nodes, {len(data) / 1e6:.2f} MB", file=sys.stderr)
    return entry


def _write_manifest(path, entries):
    old = {}
    if path.exists():
        old = {e["name"]: e for e in map(json.loads, path.read_text().splitlines())}
    old.update({e["name"]: e for e in entries})
    path.write_text("".join(json.dumps(old[n], sort_keys=True) + "\n" for n in sorted(old)))


def main(argv=None):
    global tf, keras
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--large", action="store_true", help="the Keras applications, into models/")
    p.add_argument("--all", action="store_true", help="small and large")
    p.add_argument("names", nargs="*", help="only these models")
    args = p.parse_args(argv)
    import keras as _keras
    import tensorflow as _tf
    tf, keras = _tf, _keras
    tf.get_logger().setLevel("ERROR")
    unknown = set(args.names) - set(SMALL) - set(LARGE)
    if unknown:
        p.error(f"unknown models {sorted(unknown)}; known: {sorted(SMALL) + sorted(LARGE)}")
    jobs = []
    if args.names:
        jobs = [(n, SMALL.get(n) or LARGE[n], n in SMALL) for n in args.names]
    else:
        if args.all or not args.large:
            jobs += [(n, f, True) for n, f in SMALL.items()]
        if args.all or args.large:
            jobs += [(n, f, False) for n, f in LARGE.items()]
    small = [make(n, f, HERE, "models_") for n, f, s in jobs if s]
    if small:
        _write_manifest(SMALL_MANIFEST, small)
    large = []
    for n, f, s in jobs:
        if not s:
            LARGE_DIR.mkdir(exist_ok=True)
            large.append(make(n, f, LARGE_DIR, ""))
            _write_manifest(LARGE_MANIFEST, large)


if __name__ == "__main__":
    main()
