"""TF 1's standard hooks (basic_session_run_hooks): StopAtStepHook, CheckpointSaverHook
(with its listeners), StepCounterHook, SummarySaverHook, LoggingTensorHook,
NanTensorHook, FinalOpsHook, FeedFnHook, and the SecondOrStepTimer they trigger by. They
work in af.train's awaitable monitored sessions and compat.v1's blocking ones alike: their
session work goes through session_run_hook.session_run / resolve."""

from __future__ import annotations

import logging
import os
import time

import numpy as np
from google.protobuf import text_format

from aioflow.framework import ops
from aioflow.proto import event_pb2, summary_pb2
from aioflow.summary.writer_cache import FileWriterCache
from aioflow.train import training_util
from aioflow.train.session_run_hook import (
    SessionRunArgs,
    SessionRunHook,
    awaitable_session,
    resolve,
    session_run,
)

_log = logging.getLogger("aioflow.train")


class SecondOrStepTimer:
    """Triggers every N seconds or every N steps (exactly one of them)."""

    def __init__(self, every_secs=None, every_steps=None):
        self._every_secs, self._every_steps = every_secs, every_steps
        self.reset()
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")

    def reset(self) -> None:
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step: int) -> bool:
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None and \
                time.time() >= self._last_triggered_time + self._every_secs:
            return True
        return self._every_steps is not None and \
            step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step: int):
        """(seconds, steps) since the last trigger (None, None the first time)."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed

    def last_triggered_step(self):
        return self._last_triggered_step


def _global_step_read(hook: str):
    step = training_util._get_or_create_global_step_read()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook}.")
    return step


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches last_step (or num_steps more)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step_tensor = _global_step_read("StopAtStepHook")

    def after_create_session(self, session, coord) -> None:
        if self._last_step is None:
            step = session_run(session, self._global_step_tensor)
            self._last_step = step + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values) -> None:
        if run_values.results + 1 >= self._last_step:
            # the latest global step: another worker may have moved it
            step = session_run(run_context.session, self._global_step_tensor)
            if step >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Called around each checkpoint a CheckpointSaverHook writes."""

    def begin(self) -> None:
        pass

    def before_save(self, session, global_step_value) -> None:
        pass

    def after_save(self, session, global_step_value):
        """True to request a stop."""

    def end(self, session, global_step_value) -> None:
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint every N seconds or steps, at creation and at the end."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename: str = "model.ckpt", scaffold=None, listeners=None,
                 save_graph_def: bool = True):
        _log.info("Create CheckpointSaverHook.")
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = listeners or []
        self._steps_per_run = 1
        self._save_graph_def = save_graph_def

    def begin(self) -> None:
        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        self._global_step_tensor = training_util.get_global_step()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use CheckpointSaverHook.")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord) -> None:
        global_step = session_run(session, self._global_step_tensor)
        if self._save_graph_def:
            graph = ops.get_default_graph()
            _write_graph_pbtxt(graph, self._checkpoint_dir)
            self._summary_writer.add_graph(graph)
        self._save(session, global_step)
        self._timer.update_last_triggered_step(global_step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values) -> None:
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + self._steps_per_run):
            global_step = session_run(run_context.session, self._global_step_tensor)
            if self._timer.should_trigger_for_step(global_step):
                self._timer.update_last_triggered_step(global_step)
                if self._save(run_context.session, global_step):
                    run_context.request_stop()

    def end(self, session) -> None:
        last_step = session_run(session, self._global_step_tensor)
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _save(self, session, step) -> bool:
        _log.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        resolve(self._get_saver().save(awaitable_session(session), self._save_path,
                                       global_step=int(step),
                                       write_meta_graph=self._save_graph_def))
        self._summary_writer.add_session_log(
            event_pb2.SessionLog(status=event_pb2.SessionLog.CHECKPOINT,
                                 checkpoint_path=self._save_path), int(step))
        should_stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                _log.info("A CheckpointSaverListener requested that training be stopped.")
                should_stop = True
        return should_stop

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = ops.get_collection("savers")
        if not savers:
            raise RuntimeError("No items in collection savers. Please add a saver to the "
                               "collection or provide a saver or scaffold.")
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection savers. Please indicate "
                               "which one to use by passing it to the constructor.")
        self._saver = savers[0]
        return savers[0]


def _write_graph_pbtxt(graph, directory: str) -> None:
    """graph.pbtxt: the GraphDef as text (TF's training_util.write_graph)."""
    os.makedirs(directory, exist_ok=True)
    text = text_format.MessageToString(graph.as_graph_def(add_shapes=True))
    with open(os.path.join(directory, "graph.pbtxt"), "w") as f:
        f.write(text)


class StepCounterHook(SessionRunHook):
    """Writes (and logs) the global steps per second under `<global_step>/sec`."""

    def __init__(self, every_n_steps: int = 100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be "
                             "provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None
        self._steps_per_run = 1

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor = _global_step_read("StepCounterHook")
        self._summary_tag = training_util.get_global_step().op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values) -> None:
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + self._steps_per_run):
            global_step = stale_global_step + 1
            elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
            if elapsed_time is not None and elapsed_time > 0:
                steps_per_sec = elapsed_steps / elapsed_time
                if self._summary_writer is not None:
                    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(
                        tag=self._summary_tag, simple_value=steps_per_sec)])
                    self._summary_writer.add_summary(summary, int(global_step))
                _log.info("%s: %g", self._summary_tag, steps_per_sec)
        if self._last_global_step is not None and \
                stale_global_step == self._last_global_step:
            _log.debug("The global step did not increase in this run.")
        self._last_global_step = stale_global_step


class SummarySaverHook(SessionRunHook):
    """Writes the summaries (the scaffold's, or summary_op) every N seconds or steps."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _global_step_read("SummarySaver")

    def before_run(self, run_context):
        self._request_summary = self._next_step is None or \
            self._timer.should_trigger_for_step(self._next_step)
        requests = {"global_step": self._global_step_tensor}
        if self._request_summary:
            summary_op = self._get_summary_op()
            if summary_op is not None:
                requests["summary"] = summary_op
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values) -> None:
        if not self._summary_writer:
            return
        stale_global_step = run_values.results["global_step"]
        global_step = stale_global_step + 1
        if self._next_step is None or self._request_summary:
            global_step = session_run(run_context.session, self._global_step_tensor)
        if self._next_step is None:
            self._summary_writer.add_session_log(
                event_pb2.SessionLog(status=event_pb2.SessionLog.START), int(global_step))
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(summary, int(global_step))
        self._next_step = global_step + 1

    def end(self, session=None) -> None:
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_op(self):
        summary_op = self._summary_op if self._summary_op is not None \
            else self._scaffold.summary_op
        if summary_op is None:
            return None
        return summary_op if isinstance(summary_op, list) else [summary_op]


class LoggingTensorHook(SessionRunHook):
    """Logs the values of tensors every N iterations or seconds (and at the end)."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end: bool = False,
                 formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and "
                             "every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        else:
            self._tag_order = sorted(tensors)
        self._tensors = tensors
        self._formatter = formatter
        self._timer = None if only_log_at_end else SecondOrStepTimer(
            every_secs=every_n_secs, every_steps=every_n_iter)
        self._log_at_end = at_end

    def begin(self) -> None:
        if self._timer is not None:
            self._timer.reset()
        self._iter_count = 0
        graph = ops.get_default_graph()
        self._current_tensors = {
            tag: graph.as_graph_element(t) if isinstance(t, str) else t
            for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer is not None and \
            self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def _log_tensors(self, tensor_values) -> None:
        elapsed_secs, _ = self._timer.update_last_triggered_step(self._iter_count) \
            if self._timer is not None else (None, None)
        if self._formatter:
            _log.info(self._formatter(tensor_values))
        else:
            stats = ", ".join(f"{tag} = {tensor_values[tag]}" for tag in self._tag_order)
            if elapsed_secs is not None:
                _log.info("%s (%.3f sec)", stats, elapsed_secs)
            else:
                _log.info("%s", stats)

    def after_run(self, run_context, run_values) -> None:
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session) -> None:
        if self._log_at_end:
            self._log_tensors(session_run(session, self._current_tensors))


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self) -> str:
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Stops (raising NanLossDuringTrainingError by default) when the loss is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss: bool = True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values) -> None:
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                _log.error(message)
                raise NanLossDuringTrainingError
            _log.warning(message)
            run_context.request_stop()


class FinalOpsHook(SessionRunHook):
    """Runs `final_ops` when the session ends; their values in final_ops_values."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session) -> None:
        if self._final_ops is not None:
            self._final_ops_values = session_run(session, self._final_ops,
                                                 self._final_ops_feed_dict)


class FeedFnHook(SessionRunHook):
    """Feeds feed_fn()'s dict to each run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())


class GlobalStepWaiterHook(SessionRunHook):
    """Holds this worker's first step until the global step reaches `wait_until_step`
    (another worker trains meanwhile), polling it every 0.5 s; hooks run on a worker
    thread, so the wait does not hold the event loop."""

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self) -> None:
        self._worker_is_started = False
        self._global_step_tensor = _global_step_read("_GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        logging.info("Waiting for global step %d before starting training.",
                     self._wait_until_step)
        last_logged_step = 0
        while True:
            current_step = session_run(run_context.session, self._global_step_tensor)
            if current_step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if current_step - last_logged_step > 1000:
                logging.info("Waiting for global step %d before starting training. Current "
                             "step is %d.", self._wait_until_step, current_step)
                last_logged_step = current_step
            time.sleep(0.5)
