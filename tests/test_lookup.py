"""Lookup tables against TF 2.21 (tests/data/lookup_tf.json, written by
tests/data/make_lookup_tf.py): the OpDefs field by field, StaticHashTable from tensors and
text files, StaticVocabularyTable's OOV buckets (TF's FarmHash buckets), MutableHashTable,
the TF 1 ref-handle ops, and the errors, in TF's words."""

from __future__ import annotations

import json

import pytest
from google.protobuf import text_format
from op_def_compare import ours, without_docs

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import op_def_pb2
from tests.conftest import DATA

TF = json.loads((DATA / "lookup_tf.json").read_text())
L = af.lookup
KEYS = TF["keys"]


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    return value.decode("latin-1") if isinstance(value, bytes) else value


@pytest.fixture
def vocab(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text(TF["vocab"])
    return str(path)


def _mutable(_):
    t = L.experimental.MutableHashTable(af.string, af.int64, -1)
    ins = t.insert(af.constant(["a", "b", "c"]), af.constant([1, 2, 3], af.int64))
    with af.control_dependencies([ins]):
        rem = t.remove(af.constant(["b", "zz"]))
    with af.control_dependencies([rem]):
        keys, values = t.export()
        return [t.lookup(af.constant(["a", "b", "c", "d"])), t.size(), keys, values]


def _twice(same):
    def build(_):
        t = L.StaticHashTable(L.KeyValueTensorInitializer(
            ["a", "b"], af.constant([1, 2], af.int64)), -1)
        again = apply_op("InitializeTableV2", table_handle=t.resource_handle,
                         keys=af.constant(["a", "b"]),
                         values=af.constant([1, 2] if same else [1, 5], af.int64))
        with af.control_dependencies([again]):
            return t.lookup(af.constant(["b"]))
    return build


def _wrong_default(_):
    t = L.StaticHashTable(L.KeyValueTensorInitializer(["a"], af.constant([1], af.int64)), -1)
    return apply_op("LookupTableFindV2", table_handle=t.resource_handle,
                    keys=af.constant(["a"]), default_value=af.constant([1, 2], af.int64))


def _size_mismatch(_):
    t = apply_op("HashTableV2", key_dtype=af.string, value_dtype=af.int64)
    init = apply_op("InitializeTableV2", table_handle=t, keys=af.constant(["a", "b"]),
                    values=af.constant([1], af.int64))
    with af.control_dependencies([init]):
        return apply_op("LookupTableSizeV2", table_handle=t)


def _v1_ops(_):
    t = apply_op("HashTable", key_dtype=af.string, value_dtype=af.int64)
    init = apply_op("InitializeTable", table_handle=t, keys=af.constant(["x", "y"]),
                    values=af.constant([4, 5], af.int64))
    with af.control_dependencies([init]):
        return [apply_op("LookupTableFind", table_handle=t, keys=af.constant(["y", "q"]),
                         default_value=af.constant(0, af.int64)),
                apply_op("LookupTableSize", table_handle=t)]


def _text(key_dtype, key_index, value_dtype, value_index, keys, default, **kw):
    return lambda p: L.StaticHashTable(L.TextFileInitializer(
        p, key_dtype, key_index, value_dtype, value_index, **kw), default).lookup(keys)


W, N = L.TextFileIndex.WHOLE_LINE, L.TextFileIndex.LINE_NUMBER
CASES = {
    "static_str_int": (lambda _: L.StaticHashTable(L.KeyValueTensorInitializer(
        ["apple", "banana", "cherry"], af.constant([1, 2, 3], af.int64)), -1).lookup(
        af.constant(KEYS)), True),
    "static_int_str_2d": (lambda _: L.StaticHashTable(L.KeyValueTensorInitializer(
        af.constant([3, 1], af.int64), ["three", "one"]), "?").lookup(
        af.constant([[1, 2], [3, 3]], af.int64)), True),
    "static_size_export": (lambda _: (lambda t: [t.size(), t.lookup(af.constant(["a"]))])(
        L.StaticHashTable(L.KeyValueTensorInitializer(["a", "b"], [1.5, 2.5]), 0.0)), True),
    "text_line_number": (lambda p: _text(af.string, W, af.int64, N, af.constant(
        ["banana\t20\tyellow", "apple"]), -1)(p), True),
    "text_columns": (lambda p: _text(af.string, 0, af.int64, 1, af.constant(KEYS), -1)(p),
                     True),
    "text_string_values": (lambda p: _text(af.string, 0, af.string, 2, af.constant(KEYS),
                                           "none")(p), True),
    "text_int_keys": (lambda p: _text(af.int64, 1, af.string, 0, af.constant(
        [20, 5, 30], af.int64), "none")(p), True),
    "text_vocab_size": (lambda p: _text(af.string, 0, af.int64, N, af.constant(KEYS), -1,
                                        vocab_size=2)(p), True),
    "text_vocab_size_too_big": (lambda p: _text(af.string, 0, af.int64, N,
                                                af.constant(KEYS), -1, vocab_size=5)(p), True),
    "text_bad_column": (lambda p: _text(af.string, 0, af.int64, 4, af.constant(KEYS),
                                        -1)(p), True),
    "text_not_int": (lambda p: _text(af.string, 0, af.int64, 2, af.constant(KEYS), -1)(p),
                     True),
    "vocab_oov_str": (lambda p: L.StaticVocabularyTable(L.TextFileInitializer(
        p, af.string, 0, af.int64, N), 3).lookup(af.constant(KEYS + ["zebra", "mango"])),
        True),
    "vocab_oov_int": (lambda _: L.StaticVocabularyTable(L.KeyValueTensorInitializer(
        af.constant([7, 9], af.int64), af.constant([0, 1], af.int64)), 4).lookup(
        af.constant([9, 7, 100, -5, 123456789], af.int64)), True),
    "mutable": (_mutable, False),
    "uninitialized": (lambda _: L.StaticHashTable(L.KeyValueTensorInitializer(
        ["a"], af.constant([1], af.int64)), -1).lookup(af.constant(["a"])), False),
    "init_twice_same": (_twice(True), True),
    "init_twice_different": (_twice(False), True),
    "duplicate_keys": (lambda _: L.StaticHashTable(L.KeyValueTensorInitializer(
        ["a", "a"], af.constant([1, 2], af.int64)), -1).lookup(af.constant(["a"])), True),
    "duplicate_keys_same_value": (lambda _: L.StaticHashTable(L.KeyValueTensorInitializer(
        ["a", "a"], af.constant([1, 1], af.int64)), -1).lookup(af.constant(["a"])), True),
    "wrong_default_shape": (_wrong_default, True),
    "size_mismatch": (_size_mismatch, False),
    "v1_ops": (_v1_ops, False),
}


def test_every_fixture_case_is_run():
    assert sorted(CASES) == sorted(TF["cases"])


@pytest.mark.parametrize("name", sorted(TF["opdefs"]))
def test_op_defs_equal_tf(name):
    assert ours(name) == without_docs(text_format.Parse(TF["opdefs"][name], op_def_pb2.OpDef()))


@pytest.mark.parametrize("case", sorted(CASES))
async def test_tables_match_tf(case, vocab):
    build, init = CASES[case]
    want = TF["cases"][case]
    with af.Graph().as_default():
        try:
            fetch = build(vocab)
        except ValueError as e:  # a shape-function error, at graph construction as TF's
            assert want["error"] == "ValueError"
            assert str(e).startswith(want["message"].split(" for ")[0])
            return
        async with af.Session() as sess:
            if "error" in want:
                with pytest.raises(errors.OpError) as e:
                    if init:
                        await sess.run(af.tables_initializer())
                    await sess.run(fetch)
                assert type(e.value).__name__ == want["error"]
                message = e.value.message.split("\n\t [[")[0]
                assert message == want["message"].replace("{vocab}", vocab)
                return
            if init:
                await sess.run(af.tables_initializer())
            got = _plain(await sess.run(fetch))
    expected = want["value"]
    if case == "mutable":  # export's order is the table's: compare sorted (key, value)s
        got = got[:2] + [sorted(zip(got[2], got[3], strict=True))]
        expected = expected[:2] + [sorted(zip(expected[2], expected[3], strict=True))]
    assert got == expected


async def test_a_table_is_shared_by_the_sessions_executors():
    with af.Graph().as_default():
        table = L.StaticHashTable(L.KeyValueTensorInitializer(
            ["a", "b"], af.constant([1, 2], af.int64)), -1)
        x = af.placeholder(af.string, [None])
        one, other = table.lookup(x), table.lookup(af.constant(["b"]))
        async with af.Session() as sess:
            await sess.run(af.tables_initializer())
            assert (await sess.run(one, {x: ["a", "q"]})).tolist() == [1, -1]
            assert (await sess.run(other)).tolist() == [2]
        async with af.Session() as fresh:  # another session: its own, uninitialized table
            with pytest.raises(errors.FailedPreconditionError, match="not initialized"):
                await fresh.run(other)


def test_builder_type_errors():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="num_oov_buckets"):
            L.StaticVocabularyTable(None, 0)
        with pytest.raises(ValueError, match="Signature mismatch"):
            L.TextFileInitializer("f", af.string, N, af.int64, 0)


async def test_text_file_errors(tmp_path):
    empty_line = tmp_path / "gap.txt"
    empty_line.write_text("a\n\nb\n")
    with af.Graph().as_default():
        gap = L.StaticHashTable(L.TextFileInitializer(str(empty_line), af.string, W,
                                                      af.int64, N), -1)
        missing = L.StaticHashTable(L.TextFileInitializer(str(tmp_path / "nope.txt"),
                                                          af.string, W, af.int64, N), -1)
        async with af.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match="empty line found at position 3"):
                await sess.run(gap.initializer)
            with pytest.raises(errors.NotFoundError, match="nope.txt"):
                await sess.run(missing.initializer)


async def test_tables_in_a_saved_model_initialize_on_load(tmp_path):
    """A SavedModel's main op (tables_initializer) runs on load: the signature looks up."""
    export = str(tmp_path / "model")
    vocab = tmp_path / "v.txt"
    vocab.write_text("x\ny\nz\n")
    g = af.Graph()
    with g.as_default():
        words = af.placeholder(af.string, [None], name="words")
        table = L.StaticVocabularyTable(L.TextFileInitializer(
            str(vocab), af.string, W, af.int64, N), 2)
        ids = af.identity(table.lookup(words), name="ids")
        main_op = af.tables_initializer()
        sig = af.saved_model.signature_def_utils.predict_signature_def({"words": words},
                                                                        {"ids": ids})
    async with af.Session(graph=g) as sess:
        builder = af.saved_model.Builder(export)
        await builder.add_meta_graph_and_variables(
            sess, ["serve"], {"serving_default": sig}, main_op=main_op)
        await builder.save()
    async with af.Session(graph=af.Graph()) as sess:
        meta = await af.saved_model.loader.load(sess, ["serve"], export)
        sig = meta.signature_def["serving_default"]
        got = await sess.run(sig.outputs["ids"].name,
                             {sig.inputs["words"].name: ["z", "x", "w"]})
    assert got[:2].tolist() == [2, 0]
    assert 3 <= got[2] < 5


async def test_a_ref_handle_fetched_is_tfs_container_and_name():
    with af.Graph().as_default():
        t = apply_op("HashTable", key_dtype=af.string, value_dtype=af.int64,
                     shared_name="vocab")
        async with af.Session() as sess:
            handle = await sess.run(t)
    assert handle.tolist() == [b"localhost", b"vocab"]
