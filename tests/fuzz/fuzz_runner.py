"""Runs one fuzz case (import, session, run) and classifies how it ended.

A case ends in one outcome class: "ok", "OpError:<Class>" (one of TF's error classes),
"client:ValueError" / "client:TypeError" (a deliberate client-side check, as TF's Python
client raises them), or a failure: "FAIL:<ExceptionClass>" (a raw Python exception),
"FAIL:hang" (past the per-case timeout), "FAIL:hang-uncancellable" (the run ignored its
cancellation), "FAIL:loop-blocked" (the event loop was held past the timeout). Harness
bugs are "HARNESS:<Class>" and are never blamed on aioflow. See README.md for the rules.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import dis
import importlib.util
import io
import json
import os
import pathlib
import resource
import sys
import threading
import time
import traceback

import numpy as np
from google.protobuf.message import DecodeError

import aioflow as af
from aioflow.framework import errors

# Where a deliberate client-side ValueError/TypeError may be raised (paths relative to the
# aioflow package): TF's Python client raises these for bad GraphDefs, feeds and fetches.
_CLIENT_MODULES = ("framework/", "client/", "api.py", "__init__.py")
_DEEP_MODULES = ("runtime/", "graph/", "passes/", "kernels/")
_AIOFLOW_ROOT = pathlib.Path(af.__file__).resolve().parent
_KERNELS_ROOT = pathlib.Path(importlib.util.find_spec("aioflow.kernels").origin).resolve().parent
# Client-side classes acceptable per stage: TF's import_graph_def turns every bad GraphDef
# into ValueError; TF's Session.run raises TypeError/ValueError for feeds and fetches it
# cannot use (it turns KeyError into ValueError, so KeyError is never acceptable).
_CLIENT_OK = {"import": (ValueError,), "run": (ValueError, TypeError),
              "run2": (ValueError, TypeError)}
# Raw exceptions TF 2.21's client raises in the same place with the same words (checked
# side by side): a Python int feed beyond int64 (`np.asarray` of it; FINDINGS.md).
_SAME_AS_TF = {("OverflowError", "client/session.py:convert_feed_value",
                "Python int too large to convert to C long")}
@dataclasses.dataclass
class FuzzCase:
    """One input: GraphDef bytes, feed values by tensor name, wanted fetches and targets.

    Fetches that do not exist after import are dropped; when none is left, the runner
    fetches the first outputs of the last ops instead (see `pick_fetches`). Placeholders
    without a feed get a synthesized value (`synth_feed`)."""

    kind: str
    graph_def: bytes
    feeds: dict = dataclasses.field(default_factory=dict)
    fetches: list = dataclasses.field(default_factory=list)
    targets: list = dataclasses.field(default_factory=list)
    note: str = ""
    cpus: int = 1            # CPU devices of the session (2: cross-device partitions)

    def save(self, directory: str | os.PathLike) -> pathlib.Path:
        """Write the case as case.pb, feeds.npz and case.json (a reproducer); feeds that
        are not arrays (ragged lists, big ints: JSON values) go in case.json."""
        path = pathlib.Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        (path / "case.pb").write_bytes(self.graph_def)
        arrays = {k: v for k, v in self.feeds.items() if isinstance(v, np.ndarray)}
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        (path / "feeds.npz").write_bytes(buf.getvalue())
        meta = {"kind": self.kind, "fetches": self.fetches, "targets": self.targets,
                "note": self.note, "cpus": self.cpus,
                "python_feeds": {k: v for k, v in self.feeds.items() if k not in arrays}}
        (path / "case.json").write_text(json.dumps(meta, indent=1))
        return path

    @classmethod
    def load(cls, directory: str | os.PathLike) -> FuzzCase:
        path = pathlib.Path(directory)
        meta = json.loads((path / "case.json").read_text())
        with np.load(path / "feeds.npz", allow_pickle=True) as npz:
            feeds = {k: npz[k] for k in npz.files}
        feeds.update(meta.get("python_feeds", {}))
        return cls(meta["kind"], (path / "case.pb").read_bytes(), feeds, meta["fetches"],
                   meta["targets"], meta.get("note", ""), meta.get("cpus", 1))


@dataclasses.dataclass
class Outcome:
    """How one case ended: its class, the stage, and for failures where (fingerprint)."""

    cls: str
    stage: str
    message: str = ""
    tail: str = ""           # last frames of the traceback (failures and client errors)
    where: str = ""          # innermost aioflow frame "path:function" (failures)
    wrapped: str = ""        # raw exception class an OpError wraps ("" if none)
    idle: bool = False       # a deadline expired while the process hardly used the CPU
    seconds: float = 0.0

    @property
    def acceptable(self) -> bool:
        return not self.cls.startswith(("FAIL:", "HARNESS:"))

    @property
    def fingerprint(self) -> str:
        """Identifies a distinct failure: class, stage and raising place."""
        return f"{self.cls}@{self.stage}@{self.where}"

    def report(self) -> str:
        return (f"{self.cls} at stage {self.stage} ({self.where}): {self.message[:500]}\n"
                f"{self.tail}")


class Limits:
    """Per-case limits: the run deadline TF's RunOptions carries, the asyncio timeout,
    and the extra wait after which the event loop counts as blocked."""

    def __init__(self, run_timeout_ms: int = 2000, case_timeout_s: float = 10.0,
                 guard_s: float = 5.0, synth_feed_max_elements: int = 1 << 16):
        self.run_timeout_ms = run_timeout_ms
        self.case_timeout_s = case_timeout_s
        self.guard_s = guard_s
        self.synth_feed_max_elements = synth_feed_max_elements


# -- classification -------------------------------------------------------------------


def _rel(filename: str) -> str | None:
    """`filename` relative to the aioflow package ("kernels/..." for kernels), or None."""
    path = pathlib.Path(filename).resolve()
    for root, prefix in ((_AIOFLOW_ROOT, ""), (_KERNELS_ROOT, "kernels/")):
        with contextlib.suppress(ValueError):
            return prefix + str(path.relative_to(root))
    return None


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(exc.__traceback__))


def _where(frames: list[traceback.FrameSummary]) -> str:
    """The innermost aioflow frame as "path:function", a comprehension or lambda named
    with its enclosing function ("common_shapes.py:transpose.<listcomp>")."""
    project = [(f, _rel(f.filename)) for f in frames]
    project = [(f, rel) for f, rel in project if rel is not None]
    if not project:
        return f"{pathlib.Path(frames[-1].filename).name}:{frames[-1].name}" if frames else "?"
    frame, rel = project[-1]
    name = frame.name
    if name.startswith("<") and len(project) > 1 and project[-2][1] == rel:
        name = f"{project[-2][0].name}.{name}"
    return f"{rel}:{name}"


def _innermost_project_frame(exc: BaseException) -> str:
    return _where(_frames(exc))


def _raise_site(exc: BaseException) -> str | None:
    """The aioflow module (relative path) whose `raise` statement raised `exc`; None when
    it came from elsewhere (NumPy, protobuf) or from a failing expression (`int(...)`,
    an attribute of None, an index out of range) rather than a `raise`."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    rel = _rel(tb.tb_frame.f_code.co_filename)
    if rel is None:
        return None
    for instruction in dis.get_instructions(tb.tb_frame.f_code):
        if instruction.offset == tb.tb_lasti:
            return rel if instruction.opname == "RAISE_VARARGS" else None
    return None


def _raised_deliberately(exc: BaseException) -> bool:
    """The exception comes from a `raise` statement in aioflow's client-side modules, and
    did not pass through the runtime, the graph IR, the passes or the kernels."""
    site = _raise_site(exc)
    if site is None or not site.startswith(_CLIENT_MODULES):
        return False
    return not any((_rel(f.filename) or "").startswith(_DEEP_MODULES) for f in _frames(exc))


def _tail(exc: BaseException, limit: int = 6) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-limit,
                                       chain=False)
    return "".join(lines)[-3000:]


def _raw_cause(exc: BaseException) -> BaseException | None:
    """The first exception behind `exc` that is neither an OpError nor raised by a
    `raise` in aioflow: a raw exception some layer wrapped (the executor wraps kernel
    exceptions in InvalidArgumentError/UnknownError, the importer shape-function
    errors in ValueError). protobuf's DecodeError is the expected cause of a parse error."""
    def behind(e):  # `raise ... from None` deliberately hides the context
        return e.__cause__ or (None if e.__suppress_context__ else e.__context__)

    seen = set()
    cause = behind(exc)
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if not isinstance(cause, (errors.OpError, DecodeError)) and _raise_site(cause) is None:
            return cause
        cause = behind(cause)
    return None


def _oom(exc: BaseException, raw: BaseException) -> bool:
    """A MemoryError behind TF's OOM class: the runtime's allocator failing, as TF's."""
    return isinstance(raw, MemoryError) and isinstance(exc, errors.ResourceExhaustedError)


def _wrapped_failure(exc: BaseException, raw: BaseException, stage: str) -> Outcome:
    """A TF class (or a client error) standing for a raw exception: the input was not
    checked where TF checks it, so the words are Python's, not TF's: a failure
    ("FAIL:wrapped-<raw class>", fingerprinted where the raw exception was raised)."""
    return Outcome(f"FAIL:wrapped-{type(raw).__name__}", stage,
                   f"{type(exc).__name__}: {str(exc)[:2000]}", _tail(raw),
                   where=_innermost_project_frame(raw), wrapped=type(raw).__name__)


def classify(exc: BaseException, stage: str) -> Outcome:
    """The outcome class of an exception raised at `stage` ("import", "session", "run",
    "run2", "close")."""
    if isinstance(exc, errors.OpError):
        raw = _raw_cause(exc)
        if raw is None or _oom(exc, raw):
            return Outcome(f"OpError:{type(exc).__name__}", stage, str(exc)[:2000],
                           wrapped=type(raw).__name__ if raw is not None else "",
                           where=_innermost_project_frame(raw) if raw is not None else "",
                           tail=_tail(raw) if raw is not None else "")
        return _wrapped_failure(exc, raw, stage)
    where = _innermost_project_frame(exc)
    if (type(exc).__name__, where, str(exc)) in _SAME_AS_TF and stage.startswith("run"):
        return Outcome(f"client:{type(exc).__name__}", stage, str(exc), _tail(exc, 3),
                       where=where)
    ok_types = _CLIENT_OK.get(stage, ())
    if type(exc) in ok_types and _raised_deliberately(exc):
        raw = _raw_cause(exc)
        if raw is None:
            return Outcome(f"client:{type(exc).__name__}", stage, str(exc)[:2000],
                           _tail(exc, 3), where=_innermost_project_frame(exc))
        return _wrapped_failure(exc, raw, stage)
    return Outcome(f"FAIL:{type(exc).__name__}", stage, str(exc)[:2000], _tail(exc),
                   where=_innermost_project_frame(exc))


# -- feeds and fetches ----------------------------------------------------------------


def synth_feed(tensor, max_elements: int):
    """A value for a placeholder nobody fed: zeros-ish of its dtype and static shape
    (unknown dims 2); a one-element vector when the shape is too big to build here."""
    dtype = tensor.dtype
    shape = tensor.shape
    dims = [2 if d is None else d for d in shape.as_list()] if shape.rank is not None else [2]
    if any(d < 0 or d > max_elements for d in dims) or \
            int(np.prod(dims, dtype=object)) > max_elements:
        dims = [1]  # also [0, 2**62]: no elements, yet too big a shape for NumPy
    if dtype == af.string:
        return np.full(dims, b"a", dtype=object)
    np_dtype = dtype.as_numpy_dtype
    return np.ones(dims, dtype=np_dtype)


def pick_fetches(graph, case: FuzzCase) -> tuple[list[str], list[str]]:
    """The case's fetches and targets that exist in `graph`; fallback: last ops' outputs."""
    ops = {op.name: op for op in graph.get_operations()}

    def exists(name: str) -> bool:
        node, _, index = name.rpartition(":")
        op = ops.get(node)
        return op is not None and index.isdigit() and int(index) < len(op.outputs)

    fetches = [f for f in case.fetches if exists(f)]
    targets = [t for t in case.targets if t in ops]
    if not fetches and not targets:
        for op in reversed(graph.get_operations()):
            if op.outputs:
                fetches.append(op.outputs[0].name)
            if len(fetches) >= 2:
                break
        if not fetches and ops:
            targets = [graph.get_operations()[-1].name]
    return fetches, targets


def pick_feeds(graph, case: FuzzCase, limits: Limits) -> dict:
    """Feed values keyed by tensor name: the case's (where the tensor exists), then a
    synthesized value for every other Placeholder of a feedable dtype."""
    feeds = {}
    for name, value in case.feeds.items():
        with contextlib.suppress(KeyError, ValueError, TypeError):
            feeds[graph.get_tensor_by_name(name).name] = value
    for op in graph.get_operations():
        if op.type != "Placeholder" or not op.outputs:
            continue
        tensor = op.outputs[0]
        if tensor.name in feeds:
            continue
        dtype = tensor.dtype
        if dtype.is_numpy_compatible or dtype == af.string:
            feeds[tensor.name] = synth_feed(tensor, limits.synth_feed_max_elements)
    return feeds


# -- running --------------------------------------------------------------------------


class _HarnessError(Exception):
    """A bug of the harness itself (choosing feeds/fetches), not of aioflow."""


async def run_case_async(case: FuzzCase, limits: Limits, progress: dict) -> Outcome:
    """Import, open a Session, run (twice when the first succeeds), close."""
    progress["stage"] = "import"
    graph = af.Graph()
    try:
        with graph.as_default():
            af.import_graph_def(case.graph_def, name="")
    except Exception as e:  # noqa: BLE001 - everything is classified
        return classify(e, "import")
    progress["stage"] = "plan"
    try:
        fetches, targets = pick_fetches(graph, case)
        feeds = pick_feeds(graph, case, limits)
    except Exception as e:  # noqa: BLE001
        raise _HarnessError(f"{type(e).__name__}: {e}") from e
    progress["stage"] = "session"
    try:
        config = af.ConfigProto(device_count={"CPU": case.cpus}) if case.cpus > 1 else None
        sess = af.Session(graph=graph, config=config)
    except Exception as e:  # noqa: BLE001
        return classify(e, "session")
    outcome = Outcome("ok", "run")
    options = af.RunOptions(timeout_in_ms=limits.run_timeout_ms)
    try:
        for stage in ("run", "run2"):
            progress["stage"] = stage
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                await sess.run(fetches + targets, feed_dict=feeds, options=options)
            except Exception as e:  # noqa: BLE001
                outcome = classify(e, stage)
                if isinstance(e, errors.DeadlineExceededError):
                    # A graph that loops forever keeps the CPU busy until its deadline;
                    # a run that stalled (nothing ready, nothing running) does not.
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    outcome.idle = cpu < 0.2 * wall
                break
    finally:
        progress["stage"] = "close"
        try:
            await sess.close()
        except Exception as e:  # noqa: BLE001
            if outcome.acceptable:
                outcome = classify(e, "close")
    return outcome


_ABANDONED: list = []


class CaseRunner:
    """Runs cases on an event loop in a helper thread, so that a case that holds the
    loop (a blocking kernel, an endless importer loop) is reported, not waited for: the
    blocked thread is abandoned and the next case gets a fresh loop."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.abandoned = 0

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="fuzz-loop", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    def _abandon(self) -> None:
        """Leave a blocked loop behind (its thread is a daemon); stop it if it ever frees."""
        loop = self._loop
        self._loop = self._thread = None
        self.abandoned += 1
        if loop is not None:
            _ABANDONED.append(loop)  # its pending tasks are not collected (and not logged)
            loop.call_soon_threadsafe(loop.stop)

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            if not thread.is_alive():
                loop.close()

    def _responsive(self, loop, wait_s: float = 1.0) -> bool:
        pinged = threading.Event()
        loop.call_soon_threadsafe(pinged.set)
        return pinged.wait(wait_s)

    def _loop_stack(self) -> tuple[str, str]:
        """Where the blocked loop thread is now: its stack's tail and innermost aioflow
        frame (the fingerprint of a loop-blocked failure)."""
        frame = sys._current_frames().get(self._thread.ident) if self._thread else None
        if frame is None:
            return "", "?"
        stack = traceback.extract_stack(frame)
        return "".join(traceback.format_list(stack[-8:])), _where(list(stack))

    def run(self, case: FuzzCase) -> Outcome:
        """The outcome of `case`; never raises for aioflow's behaviour."""
        return self.run_coroutine(lambda progress: run_case_async(case, self.limits, progress))

    def run_coroutine(self, make_coro) -> Outcome:
        """Run `make_coro(progress)` under the per-case timeout and the loop guard."""
        limits = self.limits
        loop = self._ensure_loop()
        progress = {"stage": "start"}

        async def guarded():
            try:
                return await asyncio.wait_for(make_coro(progress), limits.case_timeout_s)
            except TimeoutError:
                return Outcome("FAIL:hang", progress["stage"],
                               f"no outcome after {limits.case_timeout_s} s")

        start = time.perf_counter()
        future = asyncio.run_coroutine_threadsafe(guarded(), loop)
        try:
            outcome = future.result(limits.case_timeout_s + limits.guard_s)
        except concurrent.futures.TimeoutError:
            stage = progress["stage"]
            if self._responsive(loop):
                outcome = Outcome("FAIL:hang-uncancellable", stage,
                                  f"the run ignored its cancellation after "
                                  f"{limits.case_timeout_s} s")
            else:
                outcome = Outcome("FAIL:loop-blocked", stage,
                                  f"the event loop was held for more than "
                                  f"{limits.case_timeout_s + limits.guard_s} s")
                outcome.tail, outcome.where = self._loop_stack()
            future.cancel()
            self._abandon()
        except _HarnessError as e:
            outcome = Outcome("HARNESS:error", progress["stage"], str(e), _tail(e.__cause__))
        except Exception as e:  # noqa: BLE001 - an escape of the outer machinery
            outcome = classify(e, progress["stage"])
        outcome.seconds = time.perf_counter() - start
        return outcome


# -- memory ---------------------------------------------------------------------------


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def address_space_limit(headroom_bytes: int):
    """Cap this process's address space at its current size plus `headroom_bytes`, so
    that a memory bomb aioflow does not refuse ends in MemoryError (a failure of the
    case) instead of taking the machine; the previous limit is restored afterwards."""
    if not sys.platform.startswith("linux"):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _vm_size() + headroom_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def main(argv: list[str] | None = None) -> int:
    """`python tests/fuzz/fuzz_runner.py CASE_DIR...`: rerun saved reproducers; exit
    status 1 when one is not acceptable."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("cases", nargs="+", help="directories written by FuzzCase.save")
    parser.add_argument("--timeout", type=float, default=10.0, help="per-case timeout (s)")
    parser.add_argument("--guard", type=float, default=5.0, help="loop guard after it (s)")
    parser.add_argument("--run-timeout-ms", type=int, default=5000)
    parser.add_argument("--mem-mb", type=int, default=2048, help="address-space headroom")
    args = parser.parse_args(argv)
    runner = CaseRunner(Limits(run_timeout_ms=args.run_timeout_ms,
                               case_timeout_s=args.timeout, guard_s=args.guard))
    bad = 0
    serving = None
    with address_space_limit(args.mem_mb << 20):
        for directory in args.cases:
            case = FuzzCase.load(directory)
            if case.kind.startswith(("http:", "grpc:")):  # (fuzz_serving.py's targets)
                if serving is None:
                    from fuzz_serving import ServingRunner

                    serving = ServingRunner()
                outcome = serving.run(case)
            else:
                outcome = runner.run(case)
            bad += not outcome.acceptable
            print(f"{directory}: {outcome.report()}", flush=True)
    if runner.abandoned:
        os._exit(1)  # a blocked loop thread is still running: do not wait for it
    runner.close()
    if serving is not None:
        serving.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
