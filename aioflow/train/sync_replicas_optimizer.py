"""SyncReplicasOptimizer (TF 1's tf.train.SyncReplicasOptimizer): synchronous training
by between-graph replication, built as TF builds it.

Every worker builds the same graph. apply_gradients gives each variable a conditional
accumulator on the variable's device (shared by all workers through
shared_name=<var>/grad_accum): a worker's train_op applies its gradients there, tagged
with its local step (a worker-local variable), then waits for a token from the sync token
queue (on the global step's device, shared as "sync_token_q") and takes the token's value
as its next local step. The chief's queue runner runs sync_op in a loop: take
`replicas_to_aggregate` gradients from each accumulator (their mean), apply them with the
wrapped optimizer (incrementing the global step; each accumulator's step advances too, so
gradients of earlier steps are dropped as stale), then put `max(total_num_replicas,
replicas_to_aggregate)` tokens valued with the new global step in the queue.
`make_session_run_hook(is_chief)` runs the initialization a MonitoredTrainingSession needs:
on the chief chief_init_op (local step and the accumulators' global step), the initial
tokens and the queue runner; on the others local_step_init_op."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.ops import array_ops, control_flow_ops, state_ops, variables
from aioflow.ops.accumulator_ops import ConditionalAccumulator, SparseConditionalAccumulator
from aioflow.ops.queue_ops import FIFOQueue
from aioflow.train import queue_runner
from aioflow.train.optimizer import Optimizer
from aioflow.train.session_run_hook import SessionRunHook, awaitable_session


class SyncReplicasOptimizer(Optimizer):
    """Wraps an optimizer: gradients of `replicas_to_aggregate` replicas are averaged and
    applied once per global step (TF's semantics; see the module docstring)."""

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None,
                 variable_averages=None, variables_to_average=None, use_locking=False,
                 name="sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(use_locking, name)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._gradients_applied = False
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulator_list = []

    def compute_gradients(self, *args, **kwargs):
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """train_op: apply this replica's gradients to the accumulators, then take a
        token (its value becomes the local step). Builds sync_op and chief_init_op."""
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        local_anchor = control_flow_ops.no_op()
        with ops.colocate_with(local_anchor):  # on this worker, never on a ps
            self._local_step = variables.Variable(
                initial_value=0, trainable=False,
                collections=[variables.GraphKeys.LOCAL_VARIABLES],
                dtype=global_step.dtype.base_dtype, name="sync_rep_local_step")
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = variables.report_uninitialized_variables(
            variables.global_variables())
        with ops.name_scope(None, self._name):
            train_ops, aggregated = self._accumulate(grads_and_vars)
            with ops.device(global_step.device), ops.name_scope(""):
                update_op = self._opt.apply_gradients(
                    zip(aggregated, [v for _, v in grads_and_vars], strict=True),
                    global_step)
                self._sync_token_queue = FIFOQueue(
                    -1, global_step.dtype.base_dtype, shapes=(), name="sync_token_q",
                    shared_name="sync_token_q")
            with ops.device(global_step.device), ops.name_scope(""):
                with ops.control_dependencies(train_ops):
                    token = self._sync_token_queue.dequeue()
                train_op = state_ops.assign(self._local_step, token)
                with ops.control_dependencies([update_op]):
                    tokens = array_ops.fill([self._tokens_per_step], global_step)
                    sync_op = self._sync_token_queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with ops.control_dependencies([sync_op]), ops.name_scope(""):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                self._chief_queue_runner = queue_runner.QueueRunner(self._sync_token_queue,
                                                                    [sync_op])
            for accum, device in self._accumulator_list:
                with ops.device(device):
                    chief_init_ops.append(accum.set_global_step(global_step,
                                                                name="SetGlobalStep"))
            self.chief_init_op = control_flow_ops.group(*chief_init_ops)
            self._gradients_applied = True
            return train_op

    def _accumulate(self, grads_and_vars):
        """Per variable, on its device: an accumulator, this replica's apply op and the
        aggregate's take op."""
        train_ops, aggregated = [], []
        for grad, var in grads_and_vars:
            with ops.device(var.device):
                if grad is None:
                    aggregated.append(None)
                    continue
                if isinstance(grad, ops.Tensor):
                    accum = ConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                                   shared_name=var.name + "/grad_accum")
                    train_ops.append(accum.apply_grad(grad, local_step=self._local_step))
                    aggregated.append(accum.take_grad(self._replicas_to_aggregate))
                elif isinstance(grad, IndexedSlices):
                    accum = SparseConditionalAccumulator(
                        grad.dtype, shape=(), shared_name=var.name + "/grad_accum")
                    train_ops.append(accum.apply_indexed_slices_grad(
                        grad, local_step=self._local_step))
                    aggregated.append(accum.take_indexed_slices_grad(
                        self._replicas_to_aggregate))
                else:
                    raise ValueError("Unknown grad type!")
                self._accumulator_list.append((accum, var.device))
        return train_ops, aggregated

    def get_chief_queue_runner(self):
        """The chief's QueueRunner of sync_op."""
        if self._gradients_applied is False:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def variables(self):
        return self._opt.variables()

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def get_init_tokens_op(self, num_tokens=-1):
        """The op filling the token queue for the first step (`replicas_to_aggregate`
        tokens unless told)."""
        if self._gradients_applied is False:
            raise ValueError("get_init_tokens_op() should be called after "
                             "apply_gradients().")
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < tokens_needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) "
                             f"vs {tokens_needed} (needed)")
        if num_tokens > 0:
            with ops.device(self._global_step.device), ops.name_scope(""):
                tokens = array_ops.fill([num_tokens], self._global_step)
                return self._sync_token_queue.enqueue_many((tokens,))
        return control_flow_ops.no_op(name="no_init_tokens")

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        """The hook that initializes a MonitoredTrainingSession for this optimizer."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


class _SyncReplicasOptimizerHook(SessionRunHook):
    """After the session is made: the model must be ready (else RuntimeError, as TF's);
    then the local init op, and on the chief the initial tokens and the queue runner."""

    def __init__(self, sync_optimizer, is_chief, num_tokens):
        self._sync_optimizer = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self):
        opt = self._sync_optimizer
        if opt._gradients_applied is False:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before "
                             "using the hook.")
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None

    async def after_create_session(self, session, coord):
        sess = awaitable_session(session)
        not_ready = await sess.run(self._ready_for_local_init_op)
        if len(not_ready):
            names = ", ".join(n.decode() if isinstance(n, bytes) else str(n)
                              for n in not_ready)
            raise RuntimeError(
                f"Init operations did not make model ready for SyncReplicasOptimizer "
                f"local_init. Init op: {self._local_init_op.name}, error: Model is not "
                f"ready for SyncReplicasOptimizer local init. Variables not initialized: "
                f"{names}")
        await sess.run(self._local_init_op)
        if self._init_tokens_op is not None:
            await sess.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_tasks(sess, coord=coord)
