"""tf.data.experimental's names that TF 1.x programs use."""

from aioflow.data.dataset_ops import AUTOTUNE, INFINITE, UNKNOWN
from aioflow.data.iterator_ops import make_saveable_from_iterator
from aioflow.data.optional_ops import Optional, get_next_as_optional
from aioflow.data.structure import DatasetSpec


def cardinality(dataset):
    """tf.data.experimental.cardinality: DatasetCardinality of the dataset."""
    return dataset.cardinality()


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """tf.data.experimental.shuffle_and_repeat, for Dataset.apply: the fused
    ShuffleAndRepeatDataset TF 1 graphs build."""
    def apply(dataset):
        return dataset._shuffle_and_repeat(buffer_size, count, seed)
    return apply


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """tf.data.experimental.parallel_interleave, for Dataset.apply."""
    def apply(dataset):
        return dataset._legacy_parallel_interleave(
            map_func, cycle_length, block_length, sloppy, buffer_output_elements,
            prefetch_input_elements)
    return apply


INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "make_saveable_from_iterator", "cardinality", "shuffle_and_repeat",
           "parallel_interleave", "DatasetSpec", "Optional", "get_next_as_optional"]
