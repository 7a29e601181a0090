"""Writes data_tf.json: TF 2.21's tf.data OpDefs, the GraphDefs of TF 1.x input pipelines
(tf.compat.v1.data in graph mode) and what a v1 session answers to each program's
sequence of runs (values, or error class and message: the OutOfRangeError at the end,
step for step).

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_data_fixtures_tf.py

Each ``program_*`` takes the TF-1-like module (``tf.compat.v1`` here, ``aioflow`` in
tests/test_data_fixtures.py) and uses only names both share; it returns the graph's
fetchable things by key and the steps: (keys to fetch, feeds by key). The fixture
records fetches by tensor / op name, so the test replays the steps on the graph aioflow
builds and on TF's GraphDef imported. This module does not import TensorFlow at import
time."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OPS = ["TensorDataset", "TensorSliceDataset", "RangeDataset", "MapDataset",
       "ParallelMapDatasetV2", "FilterDataset", "FlatMapDataset", "InterleaveDataset",
       "ParallelInterleaveDatasetV4", "BatchDatasetV2", "PaddedBatchDatasetV2",
       "ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3", "ShuffleAndRepeatDataset",
       "ShuffleAndRepeatDatasetV2", "RepeatDataset", "TakeDataset", "SkipDataset",
       "ZipDataset", "ConcatenateDataset", "CacheDataset", "CacheDatasetV2",
       "PrefetchDataset", "UnbatchDataset", "ShardDataset", "WindowDataset",
       "GeneratorDataset", "OptimizeDataset", "OptimizeDatasetV2", "ModelDataset",
       "OptionsDataset", "TextLineDataset", "TFRecordDataset", "TFRecordDatasetV2",
       "FixedLengthRecordDataset", "FixedLengthRecordDatasetV2", "OneShotIterator",
       "Iterator", "IteratorV2", "AnonymousIterator", "AnonymousIteratorV2",
       "AnonymousIteratorV3", "MakeIterator", "IteratorGetNext", "IteratorGetNextSync",
       "IteratorGetNextAsOptional", "IteratorToStringHandle", "IteratorFromStringHandle",
       "IteratorFromStringHandleV2", "DeleteIterator", "DatasetCardinality",
       "SerializeIterator", "DeserializeIterator", "OptionalHasValue", "OptionalGetValue",
       "OptionalNone", "OptionalFromValue", "DummySeedGenerator", "AnonymousSeedGenerator",
       "DeleteSeedGenerator", "DummyMemoryCache", "AnonymousMemoryCache",
       "DeleteMemoryCache", "ReduceDataset", "DatasetToSingleElement", "ScanDataset",
       "LegacyParallelInterleaveDatasetV2"]


def _drain(n: int, init: bool = False) -> list:
    """Steps: (the initializer,) then `n` get_next runs (the last is past the end)."""
    return ([(["init"], {})] if init else []) + [(["next"], {})] * n


def _one_shot(tf, ds, n):
    it = tf.data.make_one_shot_iterator(ds)
    return {"next": it.get_next()}, _drain(n)


def _initializable(tf, ds, n, epochs: int = 1):
    it = tf.data.make_initializable_iterator(ds)
    return {"next": it.get_next(), "init": it.initializer}, _drain(n, True) * epochs


def program_pipeline_one_shot(tf):
    """The common TF 1 pipeline: slices, map, filter, seeded shuffle, batch, repeat,
    prefetch, a one-shot iterator; the graph seed set."""
    tf.set_random_seed(1)
    ds = tf.data.Dataset.from_tensor_slices(([1, 2, 3, 4, 5], [1.0, 2.0, 3.0, 4.0, 5.0]))
    ds = ds.map(lambda x, y: (x * 2, y + 1.0))
    ds = ds.filter(lambda x, y: x > 2).shuffle(10).batch(2).repeat(2).prefetch(1)
    return _one_shot(tf, ds, 5)


def program_range_take_skip(tf):
    ds = tf.data.Dataset.range(10).take(7).skip(2)
    return _initializable(tf, ds, 6, epochs=2)


def program_range_args(tf):
    ds = tf.data.Dataset.range(10, 2, -3).concatenate(tf.data.Dataset.range(1, 4))
    return _initializable(tf, ds, 7)


def program_from_tensors(tf):
    ds = tf.data.Dataset.from_tensors(([1, 2], 3.0, b"abc")).repeat(2)
    return _one_shot(tf, ds, 3)


def program_zip_concatenate(tf):
    a = tf.data.Dataset.range(4)
    b = tf.data.Dataset.from_tensor_slices([b"a", b"b", b"c"])
    ds = tf.data.Dataset.zip((a, b)).concatenate(tf.data.Dataset.zip((a.skip(2), b)))
    return _initializable(tf, ds, 6)


def program_shuffle_fixed(tf):
    """reshuffle_each_iteration=False: every epoch of the repeat in the same order."""
    ds = tf.data.Dataset.range(10).shuffle(4, seed=7, reshuffle_each_iteration=False)
    return _initializable(tf, ds.repeat(2), 21, epochs=2)


def program_shuffle_reshuffle(tf):
    """reshuffle_each_iteration: each epoch differs; re-initializing starts over."""
    ds = tf.data.Dataset.range(10).shuffle(4, seed=7).repeat(3)
    return _initializable(tf, ds, 31, epochs=2)


def program_shuffle_graph_seed(tf):
    """Op seeds from the graph seed's counter: two shuffles in one graph."""
    tf.set_random_seed(42)
    a = tf.data.Dataset.range(20).shuffle(20)
    b = tf.data.Dataset.range(20).shuffle(5)
    return _initializable(tf, tf.data.Dataset.zip((a, b)), 21)


def program_shuffle_big_batch(tf):
    ds = tf.data.Dataset.range(100).shuffle(1000, seed=3).batch(16)
    return _initializable(tf, ds, 8)


def program_interleave(tf):
    ds = tf.data.Dataset.range(1, 5).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(x), cycle_length=2, block_length=1)
    return _initializable(tf, ds, 11)


def program_interleave_blocks(tf):
    ds = tf.data.Dataset.range(1, 6).interleave(
        lambda x: tf.data.Dataset.range(10 * x, 10 * x + x), cycle_length=3, block_length=2)
    return _initializable(tf, ds, 16)


def program_parallel_interleave(tf):
    ds = tf.data.Dataset.range(1, 5).interleave(
        lambda x: tf.data.Dataset.range(x), cycle_length=2, block_length=2,
        num_parallel_calls=2)
    return _initializable(tf, ds, 11)


def program_flat_map(tf):
    ds = tf.data.Dataset.range(4).flat_map(lambda x: tf.data.Dataset.range(x).map(
        lambda y: y * 10))
    return _initializable(tf, ds, 7)


def program_padded_batch(tf):
    ds = tf.data.Dataset.range(1, 6).map(lambda x: tf.fill([x], x))
    ds = ds.padded_batch(2, padded_shapes=[None])
    return _initializable(tf, ds, 4)


def program_padded_batch_dict(tf):
    ds = tf.data.Dataset.range(1, 5).map(
        lambda x: {"ids": tf.fill([x], x), "len": x, "name": tf.fill([2], b"n")})
    ds = ds.padded_batch(3, padded_shapes={"ids": [5], "len": [], "name": [None]},
                         padding_values={"ids": np.int64(-1), "len": np.int64(0),
                                         "name": b"-"},
                         drop_remainder=True)
    return _initializable(tf, ds, 2)


def program_batch_drop_remainder(tf):
    ds = tf.data.Dataset.from_tensor_slices(np.arange(22, dtype=np.float32).reshape(11, 2))
    return _initializable(tf, ds.batch(4, drop_remainder=True), 3)


def program_dict_elements(tf):
    ds = tf.data.Dataset.from_tensor_slices({"b": [1.0, 2.0, 3.0], "a": [[1, 2], [3, 4],
                                                                         [5, 6]]})
    ds = ds.map(lambda d: {"sum": tf.reduce_sum(d["a"]), "b": d["b"] * 2.0})
    return _one_shot(tf, ds, 4)


def program_nested_tuples(tf):
    ds = tf.data.Dataset.from_tensor_slices((([1, 2], [3, 4]), [5.0, 6.0]))
    ds = ds.map(lambda ab, c: (ab[0] + ab[1], (c, ab[0])))
    return _initializable(tf, ds, 3)


def program_unbatch_shard(tf):
    ds = tf.data.Dataset.range(12).batch(5).unbatch().shard(3, 1)
    return _initializable(tf, ds, 5)


def program_parallel_map(tf):
    ds = tf.data.Dataset.range(8).map(lambda x: x * x, num_parallel_calls=3).batch(3)
    return _initializable(tf, ds, 4)


def program_map_captures(tf):
    """A map function using a tensor of the outer graph (a captured input), and a
    dataset made from a placeholder fed at initialization."""
    scale = tf.constant(3, dtype=tf.int64, name="scale")
    n = tf.placeholder(tf.int64, [], name="n")
    ds = tf.data.Dataset.range(n).map(lambda x: x * scale)
    it = tf.data.make_initializable_iterator(ds)
    things = {"next": it.get_next(), "init": it.initializer, "n": n}
    return things, [(["init"], {"n": 3})] + _drain(4) + [(["init"], {"n": 2})] + _drain(3)


def program_reinitializable(tf):
    """Iterator.from_structure reinitialized with two datasets."""
    a = tf.data.Dataset.range(3)
    b = tf.data.Dataset.range(10, 12)
    it = tf.data.Iterator.from_structure(a.output_types, a.output_shapes)
    things = {"next": it.get_next(), "init_a": it.make_initializer(a),
              "init_b": it.make_initializer(b)}
    steps = ([(["init_a"], {})] + _drain(2) + [(["init_b"], {})] + _drain(3)
             + [(["init_a"], {})] + _drain(4))
    return things, steps


def program_string_handle(tf):
    """A feedable iterator: the string handle of either iterator fed to choose."""
    a = tf.data.make_one_shot_iterator(tf.data.Dataset.range(3))
    b = tf.data.make_one_shot_iterator(tf.data.Dataset.range(100, 103))
    handle = tf.placeholder(tf.string, [], name="handle")
    it = tf.data.Iterator.from_string_handle(handle, tf.int64, [])
    things = {"next": it.get_next(), "ha": a.string_handle(), "hb": b.string_handle(),
              "handle": handle}
    return things, [(["ha", "hb"], {}), (["next"], {"handle": "@hb"}),
                    (["next"], {"handle": "@ha"}), (["next"], {"handle": "@ha"}),
                    (["next"], {"handle": "@hb"}), (["next"], {"handle": "@ha"}),
                    (["next"], {"handle": "@ha"})]


def program_strings(tf):
    ds = tf.data.Dataset.from_tensor_slices([b"alpha", b"beta", b"gamma"]).repeat(2)
    ds = ds.filter(lambda s: tf.not_equal(s, b"beta")).batch(2)
    return _one_shot(tf, ds, 4)


def program_reduce(tf):
    total = tf.data.Dataset.range(1, 6).reduce(np.int64(0), lambda s, x: s + x)
    return {"total": total}, [(["total"], {})] * 2


def program_take_infinite(tf):
    ds = tf.data.Dataset.from_tensor_slices([1, 2, 3]).repeat().take(7)
    return _initializable(tf, ds, 8)


# -- files (written by TF into data_files/ first; paths relative to the project root) -------

FILES = "tests/data/data_files"
RECORDS = [b"record-%d" % i * (i + 1) for i in range(5)] + [b"", bytes(range(256)) * 3]
LINES = b"first line\nsecond\r\n\nlast, no newline"


def program_tfrecord_files(tf):
    """Uncompressed and GZIP files, one after the other."""
    ds = tf.data.TFRecordDataset([f"{FILES}/records.tfrecord", f"{FILES}/records.tfrecord"])
    ds = ds.concatenate(tf.data.TFRecordDataset(f"{FILES}/records.gz", "GZIP"))
    return _initializable(tf, ds.take(17), 18)


def program_tfrecord_zlib_parallel_reads(tf):
    ds = tf.data.TFRecordDataset([f"{FILES}/records.zlib", f"{FILES}/records.zlib"],
                                 compression_type="ZLIB", num_parallel_reads=2)
    return _initializable(tf, ds, 15)


def program_tfrecord_examples(tf):
    """TFRecord -> parse_single_example -> map -> shuffle -> batch -> prefetch."""
    features = {"id": tf.FixedLenFeature([], tf.int64),
                "score": tf.FixedLenFeature([2], tf.float32),
                "name": tf.FixedLenFeature([], tf.string)}
    ds = tf.data.TFRecordDataset(f"{FILES}/examples.tfrecord")
    ds = ds.map(lambda r: tf.parse_single_example(r, features))
    ds = ds.map(lambda ex: (ex["id"] * 10, ex["score"] * 2.0, ex["name"]))
    ds = ds.shuffle(8, seed=11).batch(4).prefetch(2)
    return _initializable(tf, ds, 4)


def program_corrupted_record(tf):
    ds = tf.data.TFRecordDataset(f"{FILES}/bad_data.tfrecord")
    return _initializable(tf, ds, 2)


def program_text_lines(tf):
    ds = tf.data.TextLineDataset([f"{FILES}/lines.txt", f"{FILES}/lines.txt.gz"],
                                 compression_type=None)
    return _initializable(tf, ds.take(4), 5)


def program_text_lines_gzip(tf):
    ds = tf.data.TextLineDataset(f"{FILES}/lines.txt.gz", compression_type="GZIP")
    return _initializable(tf, ds, 5)


def program_fixed_length(tf):
    ds = tf.data.FixedLengthRecordDataset(f"{FILES}/fixed.bin", 4, header_bytes=3,
                                          footer_bytes=2)
    return _initializable(tf, ds, 5)


def program_cache_memory(tf):
    ds = tf.data.Dataset.range(4).shuffle(4, seed=5).cache().repeat(2)
    return _initializable(tf, ds, 9)


def program_list_files(tf):
    ds = tf.data.Dataset.list_files(f"{FILES}/records.*", shuffle=False)
    return _initializable(tf, ds, 4)


def program_list_files_shuffled(tf):
    ds = tf.data.Dataset.list_files(f"{FILES}/*.tfrecord", seed=4)
    return _initializable(tf, ds, 6, epochs=2)


def program_list_files_none(tf):
    ds = tf.data.Dataset.list_files(f"{FILES}/*.none", shuffle=False)
    return _initializable(tf, ds, 1)


def program_shuffle_and_repeat(tf):
    ds = tf.data.Dataset.range(5).apply(tf.data.experimental.shuffle_and_repeat(3, 2, seed=1))
    things, steps = _initializable(tf, ds, 11)
    things["cardinality"] = tf.data.experimental.cardinality(ds)
    return things, steps + [(["cardinality"], {})]


def program_cardinality(tf):
    ds = tf.data.Dataset.range(10).batch(3).repeat(2)
    filtered = tf.data.Dataset.range(10).filter(lambda x: x > 2)
    forever = tf.data.Dataset.range(3).repeat()
    things = {"a": tf.data.experimental.cardinality(ds),
              "b": tf.data.experimental.cardinality(filtered),
              "c": tf.data.experimental.cardinality(forever),
              "d": tf.data.experimental.cardinality(forever.take(5).skip(1))}
    return things, [(["a", "b", "c", "d"], {})]


def program_window(tf):
    ds = tf.data.Dataset.range(7).window(3, shift=2, drop_remainder=False)
    ds = ds.flat_map(lambda w: w.batch(3))
    return _initializable(tf, ds, 5)


def program_window_stride_drop(tf):
    ds = tf.data.Dataset.zip((tf.data.Dataset.range(10), tf.data.Dataset.range(10, 20)))
    ds = ds.window(2, shift=3, stride=2, drop_remainder=True)
    ds = ds.flat_map(lambda a, b: tf.data.Dataset.zip((a.batch(2), b.batch(2))))
    return _initializable(tf, ds, 4)


def program_optional(tf):
    it = tf.data.make_initializable_iterator(
        tf.data.Dataset.range(2).map(lambda x: (x, x * 2)))
    opt = tf.data.experimental.get_next_as_optional(it)
    things = {"init": it.initializer, "has": opt.has_value(), "value": opt.get_value()}
    steps = [(["init"], {}), (["has", "value"], {}), (["has", "value"], {}), (["has"], {}),
             (["value"], {})]
    return things, steps


def program_flat_map_unbatch(tf):
    ds = tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4]])
    ds = ds.flat_map(lambda v: tf.data.Dataset.from_tensors(v)).unbatch()
    return _initializable(tf, ds, 5)


def write_files(tf):
    """The files the file programs read, and corrupted copies, written by TF."""
    root = HERE.parent.parent / FILES
    root.mkdir(exist_ok=True)
    for name, options in (("records.tfrecord", None), ("records.gz", "GZIP"),
                          ("records.zlib", "ZLIB")):
        with tf.io.TFRecordWriter(str(root / name), options=options) as w:
            for r in RECORDS:
                w.write(r)
    raw = (root / "records.tfrecord").read_bytes()
    (root / "bad_data.tfrecord").write_bytes(raw[:20] + b"X" + raw[21:])
    (root / "bad_len.tfrecord").write_bytes(raw[:2] + b"\x07" + raw[3:])
    (root / "trunc.tfrecord").write_bytes(raw[:-3])
    with tf.io.TFRecordWriter(str(root / "examples.tfrecord")) as w:
        for i in range(10):
            ex = tf.train.Example(features=tf.train.Features(feature={
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "score": tf.train.Feature(float_list=tf.train.FloatList(
                    value=[i / 2, -i])),
                "name": tf.train.Feature(bytes_list=tf.train.BytesList(
                    value=[b"ex%d" % i]))}))
            w.write(ex.SerializeToString())
    (root / "lines.txt").write_bytes(LINES)
    import gzip
    (root / "lines.txt.gz").write_bytes(gzip.compress(LINES, mtime=0))
    (root / "fixed.bin").write_bytes(b"HDR" + bytes(range(16)) + b"FT")


def read_records(tf, errors_module) -> dict:
    """What TF's tf_record_iterator reads from each file: the records (hex) or the
    error."""
    from tf_error_text import error_record

    out = {}
    for name, options in (("records.tfrecord", None), ("records.gz", "GZIP"),
                          ("records.zlib", "ZLIB"), ("bad_data.tfrecord", None),
                          ("bad_len.tfrecord", None), ("trunc.tfrecord", None)):
        path = str(HERE.parent.parent / FILES / name)
        got = []
        try:
            for r in tf.compat.v1.python_io.tf_record_iterator(path, options):
                got.append(r.hex())
            out[name] = {"records": got, "options": options}
        except errors_module.OpError as e:
            out[name] = {"records": got, "options": options, **error_record(e)}
    return out


# -- TF 2-era graphs: datasets and iterators inside tf.functions ----------------------------
# (AnonymousIteratorV3, MakeIterator, IteratorGetNext; `for x in dataset` as
# ScanDataset/ReduceDataset; ShuffleDatasetV3 with a DummySeedGenerator). aioflow cannot
# trace tf.functions: only TF's GraphDefs are replayed.

def tf2_functions(tf):
    @tf.function
    def total(n):
        ds = tf.data.Dataset.range(n).map(lambda x: x * 2).shuffle(5, seed=1).batch(3)
        s = tf.constant(0, tf.int64)
        for b in ds:
            s += tf.reduce_sum(b)
        return s

    @tf.function
    def first_three():
        it = iter(tf.data.Dataset.range(10).shuffle(10, seed=3).batch(2))
        return next(it), next(it), next(it)

    @tf.function
    def padded_first():
        ds = tf.data.Dataset.range(1, 5).map(lambda x: tf.fill([x], x)).padded_batch(3)
        return next(iter(ds))

    @tf.function
    def with_options():
        options = tf.data.Options()
        options.threading.private_threadpool_size = 2
        ds = tf.data.Dataset.range(6).cache().map(lambda x: x + 1).with_options(options)
        ds = ds.apply(tf.data.experimental.shuffle_and_repeat(4, 2, seed=5))
        it = iter(ds)
        return [next(it) for _ in range(8)]

    n = tf.compat.v1.placeholder(tf.int64, [], name="n")
    things = {"total": tf.identity(total(n), name="total"),
              "first": [tf.identity(t) for t in first_three()],
              "padded": tf.identity(padded_first(), name="padded"), "n": n,
              "options": [tf.identity(t) for t in with_options()]}
    steps = [(["total", "first", "padded"], {"n": 10}), (["total"], {"n": 7}),
             (["first"], {}), (["options"], {})]
    return things, steps


def write_saved_model(tf) -> dict:
    """A TF 2 SavedModel whose signature runs a dataset pipeline and an iterator over it
    (data_saved_model/); returns what TF's loaded model answers."""
    class Pipeline(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def summarize(self, x):
            ds = tf.data.Dataset.from_tensor_slices(x).map(lambda v: v * 2.0)
            ds = ds.shuffle(4, seed=2).batch(2)
            total = tf.constant(0.0)
            for b in ds:
                total += tf.reduce_sum(b)
            first = next(iter(ds))
            return {"total": total, "first": first}

    module = Pipeline()
    path = HERE / "data_saved_model"
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.summarize})
    loaded = tf.saved_model.load(str(path))
    x = np.arange(7, dtype=np.float32)
    out = loaded.signatures["serving_default"](x=tf.constant(x))
    return {"x": plain(x), "outputs": {k: plain(v.numpy()) for k, v in out.items()}}


PROGRAMS = {name[len("program_"):]: fn for name, fn in sorted(globals().items())
            if name.startswith("program_")}


def name_of(thing) -> str:
    return thing.name


def flatten(thing) -> list:
    """A fetchable thing (tensor, op, nested tuple/dict of tensors) as (path, name)s."""
    if isinstance(thing, dict):
        return [(f"{k}/{p}", n) for k in sorted(thing) for p, n in flatten(thing[k])]
    if isinstance(thing, (list, tuple)):
        return [(f"{i}/{p}", n) for i, t in enumerate(thing) for p, n in flatten(t)]
    return [("", name_of(thing))]


def plain(value):
    """A fetched value as JSON: {"dtype", "shape", "value"} (bytes as latin-1 text)."""
    if value is None:
        return None
    arr = np.asarray(value)
    flat = arr.ravel().tolist()
    if arr.dtype == object or arr.dtype.kind in "SU":
        flat = [v.decode("latin-1") if isinstance(v, bytes) else v for v in flat]
        dtype = "string"
    else:
        dtype = arr.dtype.name
    return {"dtype": dtype, "shape": list(arr.shape), "value": flat}


def record(tf, fn, errors_module):
    """Build `fn`'s graph in a fresh graph; run its steps in one session. String
    handles fetched by a step are fed to `handle` in the next ones (the feedable
    iterator's choice): a feed "@key" is the value the key's fetch last gave."""
    from tf_error_text import error_record

    with tf.Graph().as_default() as g:
        things, steps = fn(tf)
        names = {key: [n for _, n in flatten(thing)] for key, thing in things.items()}
        graph_def = g.as_graph_def()
        results = []
        with tf.Session() as sess:
            fetched = {}
            for keys, feeds in steps:
                fetches = [g.as_graph_element(n) for key in keys for n in names[key]]
                feed = {g.as_graph_element(names[k][0]): fetched[v[1:]] if isinstance(
                    v, str) and v.startswith("@") else v for k, v in feeds.items()}
                try:
                    got = sess.run(fetches, feed)
                    results.append({"values": [plain(v) for v in got]})
                    if len(keys) == len(got):
                        fetched.update(zip(keys, got, strict=True))
                except errors_module.OpError as e:
                    results.append(error_record(e))
    step_records = [{"fetch": keys, "feed": {k: v if isinstance(v, str) else plain(v)
                                              for k, v in feeds.items()}}
                    for keys, feeds in steps]
    return {"graph_def": graph_def.SerializeToString().hex(), "names": names,
            "steps": step_records, "results": results}


def main():
    sys.path.insert(0, str(HERE))
    import tensorflow as tf
    from tensorflow.python.framework import errors as tf_errors
    from tensorflow.python.framework import op_def_registry

    v1 = tf.compat.v1
    write_files(tf)
    saved_model = write_saved_model(tf)
    v1.disable_eager_execution()
    out = {"tensorflow": tf.__version__, "opdefs": {}, "programs": {},
           "records": read_records(tf, tf_errors), "record_list": [r.hex() for r in RECORDS]}
    for name in OPS:
        out["opdefs"][name] = op_def_registry.get(name).SerializeToString().hex()
    for name, fn in PROGRAMS.items():
        out["programs"][name] = record(v1, fn, tf_errors)
    out["tf2_graphs"] = {"functions": record(v1, lambda _: tf2_functions(tf), tf_errors),
                         "saved_model": saved_model}
    (HERE / "data_tf.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
