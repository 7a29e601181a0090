"""af.data: TF 1.x's tf.data (Dataset, Iterator, the file datasets) building TF's graph
ops, whose kernels (kernels/data/) run on the event loop; plus `iterate`, an `async for`
over a dataset in a session. See docs/data.md."""

from aioflow.data import experimental
from aioflow.data.dataset_ops import AUTOTUNE, INFINITE, UNKNOWN, Dataset, DatasetV1
from aioflow.data.iterator_ops import (
    Iterator,
    iterate,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from aioflow.data.readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset

__all__ = ["AUTOTUNE", "INFINITE", "UNKNOWN", "Dataset", "DatasetV1", "Iterator",
           "experimental", "iterate", "make_initializable_iterator",
           "make_one_shot_iterator", "TFRecordDataset", "TextLineDataset",
           "FixedLengthRecordDataset"]
