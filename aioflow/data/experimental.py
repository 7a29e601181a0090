"""tf.data.experimental's names that TF 1.x programs use."""

from aioflow.data.dataset_ops import AUTOTUNE, INFINITE, UNKNOWN

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]
