"""TFRecord files both ways with TensorFlow 2.21 (tests/data/data_files/, written by
make_data_fixtures_tf.py; what TF's tf_record_iterator read is in data_tf.json):
aioflow reads TF's files, uncompressed, GZIP and ZLIB, record for record; the files
aioflow writes are TF's byte for byte (so TF reads them); corrupted and truncated files
fail with TF's DataLossError and message, in Python and in a TFRecordDataset."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

import aioflow as af
import aioflow.compat.v1 as tf
from aioflow.framework import errors

DATA = Path(__file__).parent / "data"
FILES = DATA / "data_files"
FIXTURE = json.loads((DATA / "data_tf.json").read_text())
READ = FIXTURE["records"]
RECORDS = [bytes.fromhex(r) for r in FIXTURE["record_list"]]
OPTIONS = {"records.tfrecord": None, "records.gz": "GZIP", "records.zlib": "ZLIB"}


@pytest.mark.parametrize("name", sorted(READ))
def test_tf_record_iterator_reads_tfs_files(name):
    want = READ[name]
    got = []
    try:
        for record in tf.python_io.tf_record_iterator(str(FILES / name), want["options"]):
            got.append(record.hex())
    except errors.DataLossError as e:
        assert want.get("error") == "DataLossError", name
        assert e.message == want["message"]
    else:
        assert "error" not in want, name
    assert got == want["records"]


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_written_files_are_tfs_byte_for_byte(tmp_path, name):
    path = tmp_path / name
    with tf.io.TFRecordWriter(str(path), options=OPTIONS[name]) as writer:
        for record in RECORDS:
            writer.write(record)
    assert path.read_bytes() == (FILES / name).read_bytes()


@pytest.mark.parametrize("options", [None, "GZIP", "ZLIB", tf.python_io.TFRecordOptions(
    tf.python_io.TFRecordCompressionType.GZIP)])
def test_write_then_read_back(tmp_path, options):
    path = str(tmp_path / "x.tfrecord")
    records = [b"a" * n for n in (0, 1, 1000, 70000)]
    with af.io.TFRecordWriter(path, options) as writer:
        for r in records:
            writer.write(r)
    assert list(af.io.tf_record_iterator(path, options)) == records


def test_unknown_compression_is_invalid():
    with pytest.raises(errors.InvalidArgumentError, match="Unsupported compression_type"):
        tf.python_io.TFRecordOptions("LZ4")


async def test_dataset_reads_what_aioflow_wrote(tmp_path):
    path = str(tmp_path / "w.gz")
    with af.io.TFRecordWriter(path, "GZIP") as writer:
        for r in RECORDS:
            writer.write(r)
    graph = af.Graph()
    with graph.as_default():
        nxt = af.data.make_one_shot_iterator(af.data.TFRecordDataset(
            path, compression_type="GZIP")).get_next()
    async with af.Session(graph=graph) as sess:
        got = [await sess.run(nxt) for _ in RECORDS]
        with pytest.raises(errors.OutOfRangeError):
            await sess.run(nxt)
    assert got == RECORDS


async def test_missing_file_is_not_found(tmp_path):
    graph = af.Graph()
    with graph.as_default():
        nxt = af.data.make_one_shot_iterator(af.data.TFRecordDataset(
            str(tmp_path / "nope.tfrecord"))).get_next()
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.NotFoundError, match="nope.tfrecord; No such file"):
            await sess.run(nxt)


async def test_a_run_cancelled_while_a_block_is_read_loses_nothing(tmp_path, monkeypatch):
    """Blocks are read on the pool, one ahead; a run cancelled while it waits for one
    leaves the read going, and the next runs get every record once, in order."""
    from aioflow.kernels.data import file_kernels

    path = str(tmp_path / "many.tfrecord")
    records = [b"%d" % i for i in range(3 * file_kernels.BLOCK_RECORDS + 5)]
    with af.io.TFRecordWriter(path) as writer:
        for r in records:
            writer.write(r)
    entered, gate = threading.Event(), threading.Event()
    read_many = file_kernels._TFRecordReader.read_many

    def held(self, limit):
        entered.set()
        gate.wait(30)
        return read_many(self, limit)

    monkeypatch.setattr(file_kernels._TFRecordReader, "read_many", held)
    graph = af.Graph()
    with graph.as_default():
        nxt = af.data.make_one_shot_iterator(af.data.TFRecordDataset(path)).get_next()
    async with af.Session(graph=graph) as sess:
        run = asyncio.ensure_future(sess.run(nxt))
        await asyncio.get_running_loop().run_in_executor(None, entered.wait, 30)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        gate.set()
        got = [await sess.run(nxt) for _ in records]
        with pytest.raises(errors.OutOfRangeError):
            await sess.run(nxt)
    assert got == records
