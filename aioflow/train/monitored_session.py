"""TF 1's training sessions (monitored_session): Scaffold, ChiefSessionCreator,
MonitoredSession, SingularMonitoredSession and MonitoredTrainingSession, with hooks.

The session is created from a finalized Scaffold: restored from the latest checkpoint of
`checkpoint_dir` when there is one, else initialized; then hooks see each run (adding
fetches and feeds, requesting a stop) and the end. In af.train these sessions are
awaitable: `async with af.train.MonitoredTrainingSession(...) as sess: while not
sess.should_stop(): await sess.run(train_op)`; the hooks then run on a worker thread (so
that a hook may block) while the runs themselves are awaited on the loop. In
aioflow.compat.v1 they block, as TF 1's (BlockingMonitoredSession & co. here).
"""

from __future__ import annotations

import asyncio
import logging
import time

from aioflow.checkpoint import checkpoint_management
from aioflow.checkpoint.saver import Saver
from aioflow.framework import errors, ops
from aioflow.ops import array_ops, lookup_ops, variables
from aioflow.summary import summary_ops
from aioflow.train import basic_session_run_hooks as hooks_lib
from aioflow.train import session_creation, session_run_hook
from aioflow.train.queue_runner import Coordinator, start_queue_runners
from aioflow.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunValues

_log = logging.getLogger("aioflow.train")
USE_DEFAULT = object()


class Scaffold:
    """The init, ready and local-init ops, the summary op and the saver of a training
    session, made from the graph's collections (or given) when finalized."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold=None, local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            init_op = init_op or copy_from_scaffold.init_op
            init_feed_dict = init_feed_dict or copy_from_scaffold._init_feed_dict
            init_fn = init_fn or copy_from_scaffold._user_init_fn
            ready_op = ready_op or copy_from_scaffold.ready_op
            local_init_op = local_init_op or copy_from_scaffold.local_init_op
            summary_op = summary_op or copy_from_scaffold.summary_op
            saver = saver or copy_from_scaffold.saver
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> Scaffold:
        """Make what was not given (TF's defaults, kept in the graph's collections)."""
        if self._init_op is None:
            self._init_op = _get_or_make("init_op",
                                         lambda: variables.global_variables_initializer())
        if self._ready_op is None:
            self._ready_op = _get_or_make("ready_op",
                                          lambda: variables.report_uninitialized_variables())
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = _get_or_make(
                "ready_for_local_init_op",
                lambda: variables.report_uninitialized_variables(variables.global_variables()))
        if self._local_init_op is None:
            self._local_init_op = _get_or_make("local_init_op", lambda: array_ops.group(
                variables.local_variables_initializer(), lookup_ops.tables_initializer()))
        if self._summary_op is None:
            self._summary_op = _get_or_make("summary_op", summary_ops.merge_all,
                                            allow_none=True)
        if self._saver is None:
            self._saver = _get_or_make("savers", lambda: Saver(sharded=True,
                                                               allow_empty=True))
        return self

    @property
    def init_op(self):
        return self._init_op

    @property
    def init_feed_dict(self):
        return self._init_feed_dict

    @property
    def init_fn(self):
        return self._init_fn

    @property
    def ready_op(self):
        return self._ready_op

    @property
    def ready_for_local_init_op(self):
        return self._ready_for_local_init_op

    @property
    def local_init_op(self):
        return self._local_init_op

    @property
    def local_init_feed_dict(self):
        return self._local_init_feed_dict

    @property
    def summary_op(self):
        return self._summary_op

    @property
    def saver(self):
        return self._saver

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        return _get_or_make(collection_key, default_constructor)


def _get_or_make(key: str, make, allow_none: bool = False):
    found = ops.get_collection(key)
    if found:
        if len(found) > 1:
            raise RuntimeError(f"More than one item in the collection \"{key}\". Please "
                               f"indicate which one to use by passing it to the tf.Scaffold "
                               f"constructor as:  tf.Scaffold({key}=item to use)")
        return found[0]
    made = make()
    if made is not None or not allow_none:
        ops.add_to_collection(key, made)
    return made


class SessionCreator:
    """Makes a ready session (blocking or awaitable as the monitored session asks)."""

    def create_session(self, runner):
        raise NotImplementedError


class ChiefSessionCreator(SessionCreator):
    """The chief's session: restored from the latest checkpoint, else initialized."""

    def __init__(self, scaffold=None, master: str = "", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self, runner):
        self._scaffold.finalize()
        sess = runner.new_session(self._master, self._config)
        scaffold = self._scaffold
        path = self._checkpoint_filename_with_path
        if path is None and self._checkpoint_dir:
            path = checkpoint_management.latest_checkpoint(self._checkpoint_dir)
        if path is not None:
            runner.wait(scaffold.saver.restore(runner.awaitable, path))
        else:
            if scaffold.init_op is not None:
                runner.wait(runner.awaitable.run(scaffold.init_op, scaffold.init_feed_dict))
            if scaffold.init_fn is not None:
                session_run_hook.resolve(scaffold.init_fn(sess))
        if scaffold.local_init_op is not None:
            runner.wait(runner.awaitable.run(scaffold.local_init_op,
                                             scaffold.local_init_feed_dict))
        if scaffold.ready_op is not None:
            not_ready = runner.wait(runner.awaitable.run(scaffold.ready_op))
            if len(not_ready):
                names = ", ".join(n.decode() if isinstance(n, bytes) else str(n)
                                  for n in not_ready)
                raise RuntimeError(f"Init operations did not make model ready.  Init op: "
                                   f"{_op_name(scaffold.init_op)}, init fn: "
                                   f"{scaffold.init_fn}, local_init_op: "
                                   f"{_op_name(scaffold.local_init_op)}, error: Variables "
                                   f"not initialized: {names}")
        return sess


def _op_name(op) -> str:
    return getattr(op, "name", str(op))


class WorkerSessionCreator(SessionCreator):
    """A non-chief worker's session (TF's SessionManager.wait_for_session): it waits, a
    new session every `recovery_wait_secs` (30 s, as TF's), until the chief has
    initialized the model (ready_for_local_init_op reports nothing), runs
    local_init_op, and checks ready_op; DeadlineExceededError after `max_wait_secs`."""

    def __init__(self, scaffold=None, master: str = "", config=None,
                 max_wait_secs: float = 30 * 60, recovery_wait_secs: float = 30):
        self._scaffold = scaffold or Scaffold()
        self._master = master
        self._config = config
        self._max_wait_secs = max_wait_secs
        self._recovery_wait_secs = recovery_wait_secs

    @staticmethod
    def _not_ready(runner, op) -> list:
        if op is None:
            return []
        return list(runner.wait(runner.awaitable.run(op)))

    def create_session(self, runner):
        self._scaffold.finalize()
        scaffold = self._scaffold
        start = time.time()
        while True:
            sess = runner.new_session(self._master, self._config)
            not_ready = self._not_ready(runner, scaffold.ready_for_local_init_op)
            if not not_ready:
                if scaffold.local_init_op is not None:
                    runner.wait(runner.awaitable.run(scaffold.local_init_op,
                                                     scaffold.local_init_feed_dict))
                not_ready = self._not_ready(runner, scaffold.ready_op)
                if not not_ready:
                    return sess
            runner.close_session()
            remaining = self._max_wait_secs - (time.time() - start)
            if remaining < self._recovery_wait_secs:
                raise errors.DeadlineExceededError(
                    None, None, f"Session was not ready after waiting "
                    f"{self._max_wait_secs} secs.")
            names = ", ".join(n.decode() if isinstance(n, bytes) else str(n)
                              for n in not_ready)
            logging.info("Waiting for model to be ready. Not ready: %s", names)
            time.sleep(self._recovery_wait_secs)


class _Runner:
    """How the core waits: a blocking session's loop, or the awaitable one's loop from a
    worker thread."""

    def __init__(self, graph, blocking: bool, loop=None):
        self.graph = graph
        self.blocking = blocking
        self.loop = loop
        self.session = None       # what hooks and the caller see
        self.awaitable = None     # the awaitable Session behind it

    def new_session(self, master, config):
        self.session = session_creation.new_session(self.blocking, master, self.graph,
                                                    config)
        self.awaitable = self.session._session if self.blocking else self.session
        self.enter_hooks()
        return self.session

    def wait(self, coro):
        if self.blocking:
            return self.session._call(coro)
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close_session(self) -> None:
        """Close the session new_session made (a worker's that was not ready)."""
        sess, self.session, self.awaitable = self.session, None, None
        if sess is not None:
            if self.blocking:
                sess.close()
            else:
                self.wait(sess.close())

    def enter_hooks(self) -> None:
        """Hooks on this thread resolve awaitables on the session's loop."""
        if self.blocking:
            if self.session is not None:
                session_run_hook._current.loop = self.session._loop
        else:
            session_run_hook._current.loop = self.loop


class _Core:
    """The hooked session, run on one thread (the caller's, or a worker's)."""

    def __init__(self, session_creator, hooks, graph, runner):
        self._creator = session_creator
        self._hooks = list(hooks or [])
        self._graph = graph
        self._runner = runner
        self._should_stop = False
        self._sess = None
        self._coord = None
        with graph.as_default():
            for hook in self._hooks:
                hook.begin()

    def create(self) -> None:
        self._runner.enter_hooks()
        with self._graph.as_default():
            self._sess = self._creator.create_session(self._runner)
            self._coord = Coordinator()
            if ops.get_collection("queue_runners"):
                async def start():
                    return start_queue_runners(self._runner.awaitable, self._coord)
                self._runner.wait(start())
            for hook in self._hooks:
                session_run_hook.resolve(hook.after_create_session(self._sess, self._coord))

    def should_stop(self) -> bool:
        return self._sess is None or self._should_stop or self._coord.should_stop()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        if self._should_stop:
            raise RuntimeError("Run called even after should_stop requested.")
        self._runner.enter_hooks()
        with self._graph.as_default():
            context = SessionRunContext(SessionRunArgs(fetches, feed_dict), self._sess)
            actual_fetches = {"caller": fetches}
            feeds = dict(feed_dict or {})
            user_feeds = set(feeds)
            hook_args = []
            for hook in self._hooks:
                args = session_run_hook.resolve(hook.before_run(context))
                hook_args.append(args)
                if args is None:
                    continue
                if args.fetches is not None:
                    actual_fetches[id(hook)] = args.fetches
                for key, value in (args.feed_dict or {}).items():
                    if key in feeds:
                        where = "a SessionRunHook and user" if key in user_feeds \
                            else "two hooks"
                        raise RuntimeError(f"Same tensor is fed by {where}.")
                    feeds[key] = value
            outputs = self._runner.wait(self._runner.awaitable.run(
                actual_fetches, feeds or None, options, run_metadata))
            for hook in self._hooks:
                session_run_hook.resolve(hook.after_run(context, SessionRunValues(
                    results=outputs.get(id(hook)), options=options,
                    run_metadata=run_metadata)))
            self._should_stop = self._should_stop or context.stop_requested
            return outputs["caller"]

    def close(self, exception_type=None) -> None:
        self._runner.enter_hooks()
        try:
            if self._sess is not None and exception_type is None:
                with self._graph.as_default():
                    for hook in self._hooks:
                        session_run_hook.resolve(hook.end(self._sess))
        finally:
            if self._coord is not None:
                self._coord.request_stop()
            sess, self._sess = self._sess, None
            if sess is not None:
                if self._runner.blocking:
                    sess.close()
                else:
                    self._runner.wait(sess.close())


# -- awaitable (af.train) -------------------------------------------------------------------
class MonitoredSession:
    """An awaitable session with hooks: `async with MonitoredSession(...) as sess`."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120,
                 graph=None):
        self._graph = graph or ops.get_default_graph()
        self._creator = session_creator or ChiefSessionCreator()
        self._hooks = hooks
        self._core = None

    async def __aenter__(self) -> MonitoredSession:
        runner = _Runner(self._graph, blocking=False, loop=asyncio.get_running_loop())
        self._core = _Core(self._creator, self._hooks, self._graph, runner)
        await asyncio.to_thread(self._core.create)
        return self

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        await asyncio.to_thread(self._core.close, _unhandled(exc_type))
        return exc_type is not None and issubclass(exc_type, errors.OutOfRangeError)

    @property
    def graph(self):
        return self._graph

    def should_stop(self) -> bool:
        return self._core.should_stop()

    async def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        return await asyncio.to_thread(self._core.run, fetches, feed_dict, options,
                                       run_metadata)

    async def close(self) -> None:
        await asyncio.to_thread(self._core.close)


class SingularMonitoredSession(MonitoredSession):
    """A MonitoredSession of a chief with a Scaffold (no other workers)."""

    def __init__(self, hooks=None, scaffold=None, master: str = "", config=None,
                 checkpoint_dir=None, stop_grace_period_secs=120,
                 checkpoint_filename_with_path=None):
        super().__init__(ChiefSessionCreator(scaffold, master, config, checkpoint_dir,
                                             checkpoint_filename_with_path), hooks,
                         stop_grace_period_secs)

    def raw_session(self):
        return self._core._sess


def _unhandled(exc_type):
    """An OutOfRangeError ends training as normal (hooks' end still runs), as TF's."""
    if exc_type is None or issubclass(exc_type, errors.OutOfRangeError):
        return None
    return exc_type


def _training_hooks(is_chief, checkpoint_dir, scaffold, hooks, chief_only_hooks,
                    save_checkpoint_secs, save_summaries_steps, save_summaries_secs,
                    log_step_count_steps, save_checkpoint_steps, summary_dir,
                    save_graph_def) -> list:
    """The hooks MonitoredTrainingSession adds, as TF's (chief: step counter, summary
    saver, checkpoint saver)."""
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    all_hooks = list(hooks or [])
    if not is_chief:
        return all_hooks
    all_hooks = list(chief_only_hooks or []) + all_hooks
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(hooks_lib.StepCounterHook(output_dir=summary_dir,
                                                       every_n_steps=log_step_count_steps))
        if (save_summaries_steps and save_summaries_steps > 0) or \
                (save_summaries_secs and save_summaries_secs > 0):
            all_hooks.append(hooks_lib.SummarySaverHook(
                scaffold=scaffold, save_steps=save_summaries_steps,
                save_secs=save_summaries_secs, output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0) or
                           (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(hooks_lib.CheckpointSaverHook(
            checkpoint_dir, save_steps=save_checkpoint_steps,
            save_secs=save_checkpoint_secs, scaffold=scaffold,
            save_graph_def=save_graph_def))
    return all_hooks


def MonitoredTrainingSession(master: str = "", is_chief: bool = True,  # noqa: N802
                             checkpoint_dir=None, scaffold=None, hooks=None,
                             chief_only_hooks=None, save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None, save_graph_def: bool = True,
                             _blocking: bool = False):
    """A monitored session for training, as TF 1's (awaitable here; compat.v1's blocks)."""
    scaffold = scaffold or Scaffold()
    all_hooks = _training_hooks(is_chief, checkpoint_dir, scaffold, hooks, chief_only_hooks,
                                save_checkpoint_secs, save_summaries_steps,
                                save_summaries_secs, log_step_count_steps,
                                save_checkpoint_steps, summary_dir, save_graph_def)
    if is_chief:
        creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir,
                                      master=master, config=config)
    else:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
    cls = BlockingMonitoredSession if _blocking else MonitoredSession
    return cls(session_creator=creator, hooks=all_hooks,
               stop_grace_period_secs=stop_grace_period_secs)


# -- blocking (aioflow.compat.v1) -----------------------------------------------------------
class BlockingMonitoredSession:
    """tf.compat.v1.train.MonitoredSession: created at once, `run` blocks."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120,
                 graph=None):
        self._graph = graph or ops.get_default_graph()
        runner = _Runner(self._graph, blocking=True)
        self._core = _Core(session_creator or ChiefSessionCreator(), hooks, self._graph,
                           runner)
        self._core.create()

    @property
    def graph(self):
        return self._graph

    def should_stop(self) -> bool:
        return self._core.should_stop()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        return self._core.run(fetches, feed_dict, options, run_metadata)

    def close(self) -> None:
        self._core.close()

    def __enter__(self) -> BlockingMonitoredSession:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._core.close(_unhandled(exc_type))
        return exc_type is not None and issubclass(exc_type, errors.OutOfRangeError)


class BlockingSingularMonitoredSession(BlockingMonitoredSession):
    """tf.compat.v1.train.SingularMonitoredSession (blocking)."""

    def __init__(self, hooks=None, scaffold=None, master: str = "", config=None,
                 checkpoint_dir=None, stop_grace_period_secs=120,
                 checkpoint_filename_with_path=None):
        super().__init__(ChiefSessionCreator(scaffold, master, config, checkpoint_dir,
                                             checkpoint_filename_with_path), hooks,
                         stop_grace_period_secs)

    def raw_session(self):
        return self._core._sess


def BlockingMonitoredTrainingSession(*args, **kwargs):  # noqa: N802
    """tf.compat.v1.train.MonitoredTrainingSession (blocking)."""
    return MonitoredTrainingSession(*args, **kwargs, _blocking=True)

