"""af.train: checkpoints in TensorFlow's V2 format (reading, the `checkpoint` state file),
the Saver (saver.py: its graph runs SaveV2 / RestoreV2; it keeps the state file with
update_checkpoint_state_internal) and meta graphs (meta_graph.py).
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
from aioflow.train.meta_graph import export_meta_graph, import_meta_graph
from aioflow.train.queue_runner import (
    Coordinator,
    QueueRunner,
    add_queue_runner,
    start_queue_runners,
)
from aioflow.train.saver import Saver, SaverDef

__all__ = [
    "CheckpointReader", "CheckpointState", "Saver", "SaverDef", "export_meta_graph",
    "import_meta_graph", "NewCheckpointReader", "checkpoint_exists",
    "generate_checkpoint_state_proto", "get_checkpoint_state", "latest_checkpoint",
    "list_variables", "load_checkpoint", "load_variable", "remove_checkpoint",
    "update_checkpoint_state", "update_checkpoint_state_internal",
    "Coordinator", "QueueRunner", "add_queue_runner", "start_queue_runners",
]
