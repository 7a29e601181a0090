"""af.train: queue runners (queue_runner.py) and TF 1's queue-based input pipelines
(input.py); and, under TF's names, the Saver, meta graphs and checkpoint readers, which live
in aioflow/checkpoint/.
"""

from aioflow.checkpoint.checkpoint_init import init_from_checkpoint
from aioflow.checkpoint.checkpoint_management import (
    CheckpointState,
    checkpoint_exists,
    generate_checkpoint_state_proto,
    get_checkpoint_state,
    latest_checkpoint,
    remove_checkpoint,
    update_checkpoint_state,
    update_checkpoint_state_internal,
)
from aioflow.checkpoint.checkpoint_utils import (
    CheckpointReader,
    NewCheckpointReader,
    list_variables,
    load_checkpoint,
    load_variable,
)
from aioflow.checkpoint.meta_graph import export_meta_graph
from aioflow.checkpoint.saver import Saver, SaverDef, import_meta_graph
from aioflow.distributed.cluster_spec import ClusterSpec
from aioflow.distributed.device_setter import (
    GreedyLoadBalancingStrategy,
    byte_size_load_fn,
    replica_device_setter,
)
from aioflow.train.adadelta import AdadeltaOptimizer
from aioflow.train.adagrad import AdagradOptimizer
from aioflow.train.adagrad_da import AdagradDAOptimizer
from aioflow.train.adam import AdamOptimizer
from aioflow.train.basic_session_run_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    FeedFnHook,
    FinalOpsHook,
    GlobalStepWaiterHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    StepCounterHook,
    StopAtStepHook,
    SummarySaverHook,
)
from aioflow.train.ftrl import FtrlOptimizer
from aioflow.train.gradient_descent import GradientDescentOptimizer
from aioflow.train.graph_io import write_graph
from aioflow.train.input import (
    batch,
    batch_join,
    input_producer,
    limit_epochs,
    match_filenames_once,
    maybe_batch,
    maybe_batch_join,
    maybe_shuffle_batch,
    maybe_shuffle_batch_join,
    range_input_producer,
    shuffle_batch,
    shuffle_batch_join,
    slice_input_producer,
    string_input_producer,
)
from aioflow.train.learning_rate_decay import (
    cosine_decay,
    cosine_decay_restarts,
    exponential_decay,
    inverse_time_decay,
    linear_cosine_decay,
    natural_exp_decay,
    noisy_linear_cosine_decay,
    piecewise_constant,
    piecewise_constant_decay,
    polynomial_decay,
)
from aioflow.train.momentum import MomentumOptimizer
from aioflow.train.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    Scaffold,
    SessionCreator,
    SingularMonitoredSession,
    WorkerSessionCreator,
)
from aioflow.train.moving_averages import ExponentialMovingAverage
from aioflow.train.optimizer import Optimizer
from aioflow.train.proximal_adagrad import ProximalAdagradOptimizer
from aioflow.train.proximal_gradient_descent import ProximalGradientDescentOptimizer
from aioflow.train.queue_runner import (
    Coordinator,
    QueueRunner,
    add_queue_runner,
    start_queue_runners,
)
from aioflow.train.rmsprop import RMSPropOptimizer
from aioflow.train.session_run_hook import (
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)
from aioflow.train.snapshots import Snapshot, SnapshotPublisher, placeholders_for
from aioflow.train.sync_replicas_optimizer import SyncReplicasOptimizer
from aioflow.train.training_util import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)

__all__ = [
    "GlobalStepWaiterHook", "write_graph",
    "init_from_checkpoint",
    "ClusterSpec", "replica_device_setter", "GreedyLoadBalancingStrategy", "byte_size_load_fn",
    "CheckpointReader", "CheckpointState", "Saver", "SaverDef", "export_meta_graph",
    "import_meta_graph", "NewCheckpointReader", "checkpoint_exists",
    "generate_checkpoint_state_proto", "get_checkpoint_state", "latest_checkpoint",
    "list_variables", "load_checkpoint", "load_variable", "remove_checkpoint",
    "update_checkpoint_state", "update_checkpoint_state_internal",
    "Coordinator", "QueueRunner", "add_queue_runner", "start_queue_runners",
    "batch", "batch_join", "input_producer", "limit_epochs", "match_filenames_once", "maybe_batch",
    "maybe_batch_join", "maybe_shuffle_batch", "maybe_shuffle_batch_join",
    "range_input_producer", "shuffle_batch", "shuffle_batch_join", "slice_input_producer",
    "string_input_producer",
    # optimizers
    "Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer",
    "AdagradOptimizer", "AdagradDAOptimizer", "RMSPropOptimizer", "AdadeltaOptimizer",
    "FtrlOptimizer", "ProximalGradientDescentOptimizer", "ProximalAdagradOptimizer",
    # around the optimizers
    "ExponentialMovingAverage", "assert_global_step", "create_global_step",
    "get_global_step", "get_or_create_global_step", "global_step", "cosine_decay",
    "cosine_decay_restarts", "exponential_decay", "inverse_time_decay",
    "linear_cosine_decay", "natural_exp_decay", "noisy_linear_cosine_decay",
    "piecewise_constant", "piecewise_constant_decay", "polynomial_decay",
    # training sessions and hooks
    "ChiefSessionCreator", "WorkerSessionCreator", "MonitoredSession",
    "MonitoredTrainingSession", "Scaffold",
    "SessionCreator", "SingularMonitoredSession", "SessionRunArgs", "SessionRunContext",
    "SessionRunHook", "SessionRunValues", "CheckpointSaverHook", "CheckpointSaverListener",
    "FeedFnHook", "FinalOpsHook", "LoggingTensorHook", "NanLossDuringTrainingError",
    "NanTensorHook", "SecondOrStepTimer", "StepCounterHook", "StopAtStepHook",
    "SyncReplicasOptimizer",
    "SummarySaverHook",
    # beyond TF: training beside serving on one loop
    "Snapshot", "SnapshotPublisher", "placeholders_for",
]
