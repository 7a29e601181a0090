"""Writes saved_model_examples/: a TF 1-style SavedModel as Estimators export them for
TF Serving: serialized tf.Example protos in, ParseExampleV2, a city vocabulary (an asset
file, a StaticVocabularyTable with OOV buckets, initialized by the main op), an embedding
of the city, a dense layer; plus the inputs and TF 2.21's outputs (expected.npz).
Run with TF 2.21: /work/peers-venv/bin/python tests/data/make_saved_model_examples.py"""

import shutil
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("saved_model_examples")


def examples(example_pb2):
    rows = [({"age": [31.0], "city": [b"paris"], "clicks": [3, 1]}),
            ({"age": [52.5], "city": [b"tokyo"]}),
            ({"city": [b"atlantis"], "clicks": [7]}),
            ({"age": [18.0], "city": [b"lima"], "clicks": []})]
    out = []
    for row in rows:
        proto = example_pb2.Example()
        for key, values in row.items():
            feature = proto.features.feature[key]
            if key == "age":
                feature.float_list.value.extend(values)
            elif key == "clicks":
                feature.int64_list.value.extend(values)
            else:
                feature.bytes_list.value.extend(values)
        out.append(proto.SerializeToString(deterministic=True))
    return out


def main():
    import tensorflow as tf
    from tensorflow.core.example import example_pb2

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    shutil.rmtree(OUT / "model", ignore_errors=True)
    OUT.mkdir(exist_ok=True)
    vocab = OUT / "cities.txt"
    vocab.write_text("paris\ntokyo\nlima\n")
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(7)
        serialized = v1.placeholder(tf.string, [None], name="input_example_tensor")
        features = v1.io.parse_example(serialized, {
            "age": v1.io.FixedLenFeature([1], tf.float32, default_value=[40.0]),
            "city": v1.io.FixedLenFeature([], tf.string),
            "clicks": v1.io.VarLenFeature(tf.int64)})
        vocab_path = tf.constant(str(vocab), name="vocab_path")
        v1.add_to_collection(v1.GraphKeys.ASSET_FILEPATHS, vocab_path)
        table = v1.lookup.StaticVocabularyTable(v1.lookup.TextFileInitializer(
            vocab_path, tf.string, v1.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
            v1.lookup.TextFileIndex.LINE_NUMBER), num_oov_buckets=2)
        city_id = table.lookup(features["city"])
        embeddings = v1.get_variable("city_embedding", [5, 3],
                                     initializer=v1.random_normal_initializer(seed=1))
        city = tf.gather(embeddings, city_id)
        clicks = tf.sparse.reduce_sum(tf.cast(features["clicks"], tf.float32), axis=1,
                                      keepdims=True)
        x = tf.concat([features["age"] / 100.0, city, clicks], axis=1)
        w = v1.get_variable("w", [5, 2], initializer=v1.random_normal_initializer(seed=2))
        scores = tf.identity(tf.nn.softmax(tf.matmul(x, w)), name="scores")
        sig = v1.saved_model.signature_def_utils.predict_signature_def(
            {"examples": serialized}, {"scores": scores, "city_id": city_id})
        with v1.Session() as sess:
            sess.run([v1.global_variables_initializer(), v1.tables_initializer()])
            data = examples(example_pb2)
            got = sess.run({"scores": scores, "city_id": city_id}, {serialized: data})
            builder = v1.saved_model.Builder(str(OUT / "model"))
            builder.add_meta_graph_and_variables(
                sess, ["serve"], {"serving_default": sig},
                assets_collection=v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS),
                main_op=v1.tables_initializer())
            builder.save()
    vocab.unlink()  # the SavedModel has its own copy under assets/
    np.savez(OUT / "expected.npz", examples=np.array([d.hex() for d in data]),
             scores=got["scores"], city_id=got["city_id"])
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
