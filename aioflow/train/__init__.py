"""af.train: checkpoints in TensorFlow's V2 format (reading, the `checkpoint` state file).

The Saver lives beside these; it writes and reads bundles through
aioflow.framework.tensor_bundle (BundleWriter / BundleReader) or the SaveV2 / RestoreV2
ops, and keeps the state file with update_checkpoint_state_internal.
"""

from aioflow.train.checkpoint_management import (
    CheckpointState,
    checkpoint_exists,
    generate_checkpoint_state_proto,
    get_checkpoint_state,
    latest_checkpoint,
    remove_checkpoint,
    update_checkpoint_state,
    update_checkpoint_state_internal,
)
from aioflow.train.checkpoint_utils import (
    CheckpointReader,
    NewCheckpointReader,
    list_variables,
    load_checkpoint,
    load_variable,
)

__all__ = [
    "CheckpointReader", "CheckpointState", "NewCheckpointReader", "checkpoint_exists",
    "generate_checkpoint_state_proto", "get_checkpoint_state", "latest_checkpoint",
    "list_variables", "load_checkpoint", "load_variable", "remove_checkpoint",
    "update_checkpoint_state", "update_checkpoint_state_internal",
]
