"""Models and their versions: which versions to serve (TF Serving's version policies:
the latest N, all, specific ones), polling the base path for new ones, and swapping
without failing a request: a new version is loaded and warmed up (its executors built)
while the old one serves; requests then resolve to it; the old version is unloaded once
the requests that resolved to it have finished (TF Serving's availability-preserving
policy: a version leaves only when another one is available, or its directory is gone).

A version directory is one whose name is a non-negative integer (ASCII digits, an
int64, as TF Serving's), under the model's base path. Each `ModelVersion` goes START ->
LOADING -> AVAILABLE -> UNLOADING -> END (END with an error status if its load failed; a
failed version is not retried until the server restarts, as TF Serving gives up after
its load retries).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field

from aioflow.framework import errors
from aioflow.proto.serving import get_model_status_pb2
from aioflow.serving.loader import LoadOptions, Servable, load_servable

_log = logging.getLogger("aioflow.serving")
State = get_model_status_pb2.ModelVersionStatus.State


@dataclass(frozen=True)
class VersionPolicy:
    """Which versions to serve: kind "latest" (the `num_versions` highest), "all", or
    "specific" (`versions`)."""

    kind: str = "latest"
    num_versions: int = 1
    versions: frozenset = frozenset()

    def aspired(self, on_disk: list[int]) -> set[int]:
        if self.kind == "all":
            return set(on_disk)
        if self.kind == "specific":
            return set(on_disk) & set(self.versions)
        return set(sorted(on_disk)[-max(self.num_versions, 1):])


@dataclass
class ModelConfig:
    """One served model: name, base path, version policy, version labels, and how its
    versions load (`loader(path, options)` -> Servable; load_servable by default)."""

    name: str
    base_path: str
    policy: VersionPolicy = field(default_factory=VersionPolicy)
    labels: dict[str, int] = field(default_factory=dict)
    load_options: LoadOptions = field(default_factory=LoadOptions)
    loader: object = None


class ModelVersion:
    """One version of a model: its state, servable, and the requests using it."""

    def __init__(self, model: str, version: int, path: str):
        self.model = model
        self.version = version
        self.path = path
        self.state = State.START
        self.error: errors.OpError | None = None
        self.servable: Servable | None = None
        self.in_flight = 0
        self.batchers: dict = {}
        self._released = asyncio.Event()

    def release(self) -> None:
        """A request that resolved to this version has finished."""
        self.in_flight -= 1
        if self.in_flight == 0:
            self._released.set()


def list_versions(base_path: str) -> list[int]:
    """The version numbers under `base_path` (blocking; [] when it does not exist)."""
    try:
        names = os.listdir(base_path)
    except FileNotFoundError:
        return []
    return sorted(int(n) for n in names
                  if is_version_name(n) and os.path.isdir(os.path.join(base_path, n)))


def is_version_name(name: str) -> bool:
    """A version directory's name: ASCII digits making an int64, as TF Serving parses
    it (str.isdigit takes "²" and "١", which int() refuses or reads as 1)."""
    return name.isascii() and name.isdigit() and int(name) < 1 << 63


class ModelRegistry:
    """The models a server serves; `acquire` resolves a request to a loaded version."""

    def __init__(self, configs: list[ModelConfig], poll_seconds: float = 1.0, metrics=None):
        names = [c.name for c in configs]
        if len(set(names)) != len(names):
            raise ValueError(f"model names must be unique: {names}")
        self.configs = {c.name: c for c in configs}
        self.versions: dict[str, dict[int, ModelVersion]] = {n: {} for n in names}
        self.poll_seconds = poll_seconds
        self.metrics = metrics
        self._latest: dict[str, ModelVersion] = {}  # latest AVAILABLE version, by model
        # (dropped whenever a version of the model changes state)
        self._poller: asyncio.Task | None = None
        self._unloads: set[asyncio.Task] = set()
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Load every model's aspired versions, then poll for changes."""
        await self.poll_once()
        if self.poll_seconds > 0:
            self._poller = asyncio.get_running_loop().create_task(self._poll_forever())

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.poll_seconds)
            try:
                await self.poll_once()
            except Exception:  # a bad poll must not stop polling
                _log.exception("polling for model versions failed")

    async def poll_once(self) -> None:
        """Bring every model to its aspired versions: load new ones, then unload the
        ones no longer aspired."""
        async with self._lock:
            for name in self.configs:
                await self._reconcile(self.configs[name])

    async def _reconcile(self, config: ModelConfig) -> None:
        on_disk = await asyncio.to_thread(list_versions, config.base_path)
        aspired = config.policy.aspired(on_disk)
        versions = self.versions[config.name]
        for v in sorted(aspired - versions.keys()):
            await self._load(config, v)
        available = {v for v, mv in versions.items()
                     if mv.state == State.AVAILABLE and v in aspired}
        for v, mv in list(versions.items()):
            if mv.state == State.AVAILABLE and v not in aspired and (
                    available or v not in on_disk):
                self._start_unload(mv)

    async def _load(self, config: ModelConfig, version: int) -> None:
        path = os.path.join(config.base_path, str(version))
        mv = ModelVersion(config.name, version, path)
        self.versions[config.name][version] = mv
        self._set_state(mv, State.LOADING)
        loader = config.loader or load_servable
        try:
            mv.servable = await loader(path, config.load_options)
        except Exception as e:
            mv.error = e if isinstance(e, errors.OpError) else errors.UnknownError(
                None, None, f"{type(e).__name__}: {e}")
            _log.error("loading %s version %d from %s failed: %s", config.name, version,
                       path, mv.error)
            self._set_state(mv, State.END)
            return
        _log.info("serving %s version %d from %s", config.name, version, path)
        self._set_state(mv, State.AVAILABLE)

    def _start_unload(self, mv: ModelVersion) -> None:
        self._set_state(mv, State.UNLOADING)
        task = asyncio.get_running_loop().create_task(self._unload(mv))
        self._unloads.add(task)
        task.add_done_callback(self._unloads.discard)

    async def _unload(self, mv: ModelVersion) -> None:
        if mv.in_flight:
            mv._released.clear()
            await mv._released.wait()
        for batcher in mv.batchers.values():
            await batcher.drain()
        servable, mv.servable = mv.servable, None
        if servable is not None:
            await servable.close()
        _log.info("unloaded %s version %d", mv.model, mv.version)
        self._set_state(mv, State.END)

    def _set_state(self, mv: ModelVersion, state) -> None:
        old, mv.state = mv.state, state
        self._latest.pop(mv.model, None)
        if self.metrics is not None:
            gauge = self.metrics.version_state
            gauge.labels(mv.model, str(mv.version), State.Name(old)).set(0)
            gauge.labels(mv.model, str(mv.version), State.Name(state)).set(1)

    # -- requests -------------------------------------------------------------------------
    def acquire(self, name: str, version: int | None = None,
                label: str | None = None) -> ModelVersion:
        """The version serving a request (its in-flight count taken: `release` it):
        the latest available one, a specific one, or the one a label names."""
        versions = self.versions.get(name)
        if label is not None and versions is not None:
            if label not in self.configs[name].labels:
                raise errors.InvalidArgumentError(
                    None, None, f"Unrecognized servable version label: {label}")
            version = self.configs[name].labels[label]
        if version is None:
            mv = self._latest.get(name)
            if mv is None:
                candidates = [mv for mv in (versions or {}).values()
                              if mv.state == State.AVAILABLE]
                if not candidates:
                    raise errors.NotFoundError(
                        None, None, f"Servable not found for request: Latest({name})")
                mv = self._latest[name] = max(candidates, key=lambda m: m.version)
        else:
            mv = (versions or {}).get(version)
            if mv is None or mv.state != State.AVAILABLE:
                raise errors.NotFoundError(
                    None, None, f"Servable not found for request: Specific({name}, {version})")
        mv.in_flight += 1
        return mv

    def status(self, name: str, version: int | None = None) -> list[ModelVersion]:
        """The versions a status request reports (TF Serving's NotFound errors)."""
        versions = self.versions.get(name)
        if not versions:
            raise errors.NotFoundError(None, None,
                                       f"Could not find any versions of model {name}")
        if version is None:
            return [versions[v] for v in sorted(versions, reverse=True)]
        if version not in versions:
            raise errors.NotFoundError(
                None, None, f"Could not find version {version} of model {name}")
        return [versions[version]]

    def unservable(self) -> dict[str, errors.OpError]:
        """The models with no available version whose versions failed to load, with the
        last error (a model with no version yet is not in it: it waits for one)."""
        out = {}
        for name, versions in self.versions.items():
            if versions and not any(mv.state == State.AVAILABLE for mv in versions.values()):
                errs = [mv.error for mv in versions.values() if mv.error is not None]
                if errs:
                    out[name] = errs[-1]
        return out

    async def close(self) -> None:
        """Stop polling and unload every version once its requests are done."""
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        async with self._lock:
            for versions in self.versions.values():
                for mv in versions.values():
                    if mv.state == State.AVAILABLE:
                        self._start_unload(mv)
        await asyncio.gather(*self._unloads, return_exceptions=True)
