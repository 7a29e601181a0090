"""Partial runs (TF's DirectSession::PRunSetup / PRun): one step that stays alive across
calls, fed and fetched a part at a time.

`partial_run_setup` builds the executors of the signature with the second rewrite mode
(feeds arrive through client-terminated `_Recv` nodes, fetches leave through
client-terminated `_Send` nodes) and starts the step in a task of the running loop; the
step waits in its `_Recv`s for what is not fed yet. Each `partial_run` checks its feeds
and fetches against what setup declared and what was fed or fetched before (TF's
errors, in TF's order), checks that each fetch can be computed from what has been fed
so far (TF's CheckFetch, on the session's full graph), sends its feeds into the step's
rendezvous and receives its fetches from it. When every feed has been fed and every
fetch fetched, or a call fails, the step is waited for and forgotten.

A PartialRun holds:
- `pending_inputs` / `pending_outputs`: feed and fetch names of setup -> whether they
  were fed / fetched already (a failed call marks nothing);
- `ctx`: the step's StepContext (its rendezvous carries the feeds and fetches);
- `states`, `task`: the step's executor states and the task running them;
  the run is forgotten by the call that finishes or fails it, by close, or when its
  handle is dropped (the task then ends on its own, the step aborted).
Everything is touched on the loop that ran setup; a call from another loop is refused.
"""

from __future__ import annotations

import asyncio

from aioflow.framework import errors, node_def_util
from aioflow.graph.subgraph import client_rendezvous_key


def client_keys(feeds, fetches, device) -> tuple[dict, dict]:
    """The rendezvous keys of a partial run's feeds and fetches, by name: from the
    client `device` to itself (TF's GetRendezvousKey, frame and iteration 0)."""
    def key(name: str) -> str:
        node, index = node_def_util.parse_input(name)
        return client_rendezvous_key(f"{node}:{index}", device.name, device.incarnation)

    return {name: key(name) for name in feeds}, {name: key(name) for name in fetches}


class PartialRunHandle(str):
    """The handle `partial_run_setup` returns: TF's handle string. While this object
    lives the step may be continued; once nothing references it (and the step is not
    done) the step is cancelled and its state released."""


class PartialRun:
    """The state of one partial run (see the module docstring)."""

    def __init__(self, handle: str, eak, ctx, loop):
        self.handle = handle
        self.eak = eak
        self.ctx = ctx
        self.loop = loop
        self.pending_inputs = dict.fromkeys(eak.feeds, False)
        self.pending_outputs = dict.fromkeys(eak.fetches, False)
        self.task: asyncio.Task | None = None
        self.states: list = []  # the step's executor states, one per partition
        # Feed and fetch names as (node, output), parsed once.
        self._ids = {name: node_def_util.parse_input(name)
                     for name in (*eak.feeds, *eak.fetches)}

    def check_names(self, feeds, fetches) -> None:
        """TF's checks of a call's feeds and fetches against setup and earlier calls."""
        for name in feeds:
            fed = self.pending_inputs.get(name)
            if fed is None:
                raise errors.InvalidArgumentError(
                    None, None, f"The feed {name} was not specified in partial_run_setup.")
            if fed:
                raise errors.InvalidArgumentError(
                    None, None, f"The feed {name} has already been fed.")
        for name in fetches:
            fetched = self.pending_outputs.get(name)
            if fetched is None:
                raise errors.InvalidArgumentError(
                    None, None, f"The fetch {name} was not specified in partial_run_setup.")
            if fetched:
                raise errors.InvalidArgumentError(
                    None, None, f"The fetch {name} has already been fetched.")

    def check_fetch(self, by_name: dict, feeds, fetches) -> None:
        """TF's CheckFetch: no tensor a fetch depends on (in the session's full graph)
        may be a declared feed that has not been fed yet, counting this call's feeds."""
        ids = self._ids
        pending = {ids[name] for name, fed in self.pending_inputs.items()
                   if not fed and name not in feeds}
        if not pending:
            return
        stack = []
        for name in fetches:
            node = by_name.get(ids[name][0])
            if node is None:
                raise errors.NotFoundError(None, None, f"Fetch {name}: not found")
            stack.append(node)
        visited = set()
        while stack:
            node = stack.pop()
            for e in node.in_edges:
                src = e.src
                if (src.name, e.src_output) in pending:
                    raise errors.InvalidArgumentError(
                        None, None, f"Fetch {src.name}:{e.src_output} can't be computed "
                                    f"from the feeds that have been fed so far.")
                if src.id not in visited and src.is_op:
                    visited.add(src.id)
                    stack.append(src)

    def mark(self, feeds, fetches) -> bool:
        """Record a successful call; True when every feed and fetch is done."""
        for name in feeds:
            self.pending_inputs[name] = True
        for name in fetches:
            self.pending_outputs[name] = True
        return all(self.pending_inputs.values()) and all(self.pending_outputs.values())

    def send_inputs(self, feeds: dict) -> None:
        """Put the feeds into the step's rendezvous (its `_Recv`s take them)."""
        rendezvous = self.ctx.rendezvous
        keys = self.eak.feed_keys
        for name, value in feeds.items():
            try:
                rendezvous.send(keys[name], value, False)
            except errors.OpError as e:
                rendezvous.abort(e)
                raise

    async def recv_outputs(self, fetches, timeout_ms: int) -> list:
        """The fetches' values from the step's rendezvous (sent by its `_Send`s)."""
        rendezvous = self.ctx.rendezvous
        keys = self.eak.fetch_keys
        values = []
        for name in fetches:
            try:
                if timeout_ms > 0:
                    value, is_dead = await asyncio.wait_for(rendezvous.recv(keys[name]),
                                                            timeout_ms / 1000.0)
                else:
                    value, is_dead = await rendezvous.recv(keys[name])
                if is_dead:
                    raise errors.InvalidArgumentError(
                        None, None, f"The tensor returned for {name} was not valid.")
            except TimeoutError:
                err = errors.DeadlineExceededError(  # (TF's WaitForNotification's)
                    None, None, "Timed out waiting for notification")
                self.ctx.on_error(err)
                raise err from None
            except asyncio.CancelledError:
                self.abort(errors.CancelledError(None, None, "Partial run was cancelled"))
                raise
            except errors.OpError as e:
                self.ctx.on_error(self.ctx.first_error or e)
                raise (self.ctx.first_error or e) from None
            values.append(value)
        return values

    def abort(self, err: errors.OpError) -> None:
        """Stop the step (its `_Recv`s waiting for feeds are failed, its states aborted)."""
        self.ctx.on_error(err)

    async def wait_done(self) -> None:
        """Wait for the step's executors to stop (TF waits before it forgets the run);
        once every state is done the task only has its bookkeeping left."""
        if all(state.done.done() for state in self.states):
            return
        if self.task is not None and not self.task.done():
            await asyncio.shield(self.task)
