"""The aioflow pytest plugin (entry point `pytest11: aioflow`): fixtures for graph tests
and shuffled schedules.

- `af_graph`: a fresh Graph, the default graph while the test runs.
- `af_session`: an open `af.Session` on `af_graph` (async; closed after the test).
- `af_schedule_seed`: the ready-order seed this test runs under, or None.

`--aioflow-shuffle-schedules=N` runs each graph test (one using any of these fixtures)
N times, each with a seed (`--aioflow-shuffle-seed=S` gives the first, S, S+1, ...;
otherwise a random one, printed in the header): every session step the test starts runs
on the single-threaded executor with its ready nodes taken in the order that seed
shuffles them (aioflow.runtime.executor_factory.schedule_override), as trio's shuffled
scheduling does for tasks. A graph whose result depends on the order of unordered nodes
(two assigns to one variable without a control edge between them, say) then fails under
some seed; the test id names it (`[seed=S]`) and the failure report says how to rerun it.
Mark a test `@pytest.mark.aioflow_fixed_schedule` to keep it out of the shuffle.
"""

from __future__ import annotations

import inspect
import random

import pytest

import aioflow as af
from aioflow.runtime.executor_factory import schedule_override

SHUFFLE_EXECUTOR = "SINGLE_THREADED_EXECUTOR"
_SEEDS = pytest.StashKey[list]()
_FIXTURES = frozenset({"af_graph", "af_session", "af_schedule_seed"})
_STRICT_HINT = (
    "this async test has no asyncio marker, and pytest-asyncio runs in strict mode (its "
    "default), so pytest could not run it ('async def functions are not natively "
    "supported'). Mark it @pytest.mark.asyncio, or set asyncio_mode = auto in pytest.ini / "
    "[tool.pytest.ini_options]. (Tests using af_graph / af_session are marked by the "
    "aioflow plugin itself.)")

try:  # async fixtures work in pytest-asyncio's strict mode too
    import pytest_asyncio

    _async_fixture = pytest_asyncio.fixture
except ImportError:  # pragma: no cover - pytest-asyncio is how aioflow's tests run
    _async_fixture = pytest.fixture


def pytest_addoption(parser):
    group = parser.getgroup("aioflow", "aioflow graph tests")
    group.addoption("--aioflow-shuffle-schedules", type=int, default=0, metavar="N",
                    help="run each aioflow graph test under N shuffled schedules (seeds)")
    group.addoption("--aioflow-shuffle-seed", type=int, default=None, metavar="S",
                    help="the first seed of the shuffled schedules (default: random)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "aioflow_fixed_schedule: never run this test under shuffled schedules")
    n = config.getoption("--aioflow-shuffle-schedules")
    if n < 0:
        raise pytest.UsageError("--aioflow-shuffle-schedules must be >= 0")
    base = config.getoption("--aioflow-shuffle-seed")
    if base is None:
        base = random.SystemRandom().randrange(1_000_000)
    config.stash[_SEEDS] = [base + i for i in range(n)]


def pytest_report_header(config):
    seeds = config.stash.get(_SEEDS, [])
    if seeds:
        return (f"aioflow: each graph test under {len(seeds)} shuffled schedule"
                f"{'s' if len(seeds) > 1 else ''}, seeds {seeds[0]}..{seeds[-1]}")
    return None


def pytest_generate_tests(metafunc):
    """Parametrize each graph test by the seeds, when shuffling."""
    seeds = metafunc.config.stash.get(_SEEDS, [])
    if not seeds or "af_schedule_seed" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("aioflow_fixed_schedule") is not None:
        return
    metafunc.parametrize("af_schedule_seed", seeds, indirect=True,
                         ids=[f"seed={s}" for s in seeds])


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """In pytest-asyncio's strict mode, an async test using the aioflow fixtures gets the
    asyncio marker it would otherwise need by hand (auto mode marks every async test)."""
    if (inspect.iscoroutinefunction(obj) and collector.funcnamefilter(name)
            and _FIXTURES & set(inspect.signature(obj).parameters)
            and not any(m.name == "asyncio" for m in getattr(obj, "pytestmark", []))):
        pytest.mark.asyncio(obj)


def _unmarked_async_test(item) -> bool:
    func = getattr(item, "obj", None)
    if not inspect.iscoroutinefunction(func) or item.get_closest_marker("asyncio"):
        return False
    try:
        return item.config.getini("asyncio_mode") == "strict"
    except ValueError:  # pytest-asyncio is not installed
        return False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing shuffled test's report says how to run that schedule again; an async test
    pytest could not run says what to set."""
    report = yield
    if report.failed and _unmarked_async_test(item):
        report.sections.append(("aioflow: async test not run", _STRICT_HINT))
    callspec = getattr(item, "callspec", None)
    if report.failed and callspec is not None and "af_schedule_seed" in callspec.params:
        seed = callspec.params["af_schedule_seed"]
        report.sections.append((
            "aioflow shuffled schedule",
            f"failed under schedule seed {seed}; run it again with: pytest "
            f"'{item.nodeid}' --aioflow-shuffle-schedules=1 --aioflow-shuffle-seed={seed}"))
    return report


@pytest.fixture
def af_schedule_seed(request):
    """The seed of this test's shuffled schedule (None: the executor's own schedule).
    While the test runs, every session step it starts is shuffled by it."""
    seed = getattr(request, "param", None)
    if seed is None:
        yield None
        return
    with schedule_override(SHUFFLE_EXECUTOR, seed):
        yield seed


@pytest.fixture
def af_graph(af_schedule_seed):
    """A fresh Graph, the default graph for the test."""
    graph = af.Graph()
    with graph.as_default():
        yield graph


@_async_fixture
async def af_session(af_graph):
    """An open af.Session on `af_graph`, closed when the test ends."""
    async with af.Session(graph=af_graph) as session:
        yield session
