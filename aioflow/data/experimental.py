"""tf.data.experimental's names that TF 1.x programs use."""

from aioflow.data.dataset_ops import AUTOTUNE, INFINITE, UNKNOWN
from aioflow.data.iterator_ops import make_saveable_from_iterator

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "make_saveable_from_iterator"]
