"""af.data: TF 1.x's tf.data (Dataset, Iterator, the file datasets) building TF's graph
ops, whose kernels (kernels/data/) run on the event loop; plus `iterate`, an `async for`
over a dataset in a session. See docs/data.md."""

from aioflow.data import experimental
from aioflow.data.dataset_ops import AUTOTUNE, INFINITE, UNKNOWN, Dataset, DatasetV1
from aioflow.data.experimental import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from aioflow.data.iterator_ops import (
    Iterator,
    iterate,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from aioflow.data.readers import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset
from aioflow.data.structure import DatasetSpec


def get_output_types(dataset_or_iterator):
    """tf.compat.v1.data.get_output_types: the element's dtypes, as its structure."""
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    """tf.compat.v1.data.get_output_shapes: the element's static shapes."""
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    """tf.compat.v1.data.get_output_classes: Tensor for every component."""
    return dataset_or_iterator.output_classes


__all__ = ["AUTOTUNE", "INFINITE", "UNKNOWN", "Dataset", "DatasetV1", "Iterator",
           "experimental", "iterate", "make_initializable_iterator",
           "make_one_shot_iterator", "TFRecordDataset", "TextLineDataset",
           "FixedLengthRecordDataset", "DatasetSpec", "INFINITE_CARDINALITY",
           "UNKNOWN_CARDINALITY", "get_output_types", "get_output_shapes",
           "get_output_classes"]
