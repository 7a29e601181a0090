"""The aioflow pytest plugin, as a user's project meets it: tests/plugin_project is run by
pytest in a subprocess (the plugin loaded through its pytest11 entry point), once on the
executor's own schedule, where every test passes, and once under shuffled schedules, where
the deliberately order-dependent graph fails under some seeds and the ordered one never."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

PROJECT = Path(__file__).parent / "plugin_project"


def _pytest(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
                           *args], cwd=PROJECT, capture_output=True, text=True,
                          timeout=300, env=env)


def _outcomes(out: str) -> dict[str, str]:
    """{test id: PASSED / FAILED} from pytest's -rA summary."""
    return {m.group(2): m.group(1)
            for m in re.finditer(r"^(PASSED|FAILED) (\S+)", out, re.MULTILINE)}


def test_plugin_is_registered_through_its_entry_point():
    (entry,) = [e for e in metadata.entry_points(group="pytest11") if e.name == "aioflow"]
    assert entry.value == "aioflow.testing.pytest_plugin"


def test_without_shuffling_every_test_passes():
    proc = _pytest()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outcomes = _outcomes(proc.stdout)
    assert "checks_order.py::test_last_assign_wins" in outcomes
    assert set(outcomes.values()) == {"PASSED"} and len(outcomes) == 8
    assert "shuffled schedule" not in proc.stdout


def test_shuffled_schedules_expose_the_order_dependent_graph():
    proc = _pytest("--aioflow-shuffle-schedules=8", "--aioflow-shuffle-seed=100")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "aioflow: each graph test under 8 shuffled schedules, seeds 100..107" in proc.stdout
    outcomes = _outcomes(proc.stdout)
    seeds = [f"seed={s}" for s in range(100, 108)]

    def by_seed(test, module="checks_order"):
        return {s: outcomes[f"{module}.py::{test}[{s}]"] for s in seeds}

    # The buggy graph fails under some schedules (and not all: it is order, not a crash) ...
    for test in ("test_last_assign_wins", "test_last_assign_wins_sync"):
        results = set(by_seed(test).values())
        assert results == {"PASSED", "FAILED"}, (test, by_seed(test))
    # ... while the graph with its control edge passes under every one.
    assert set(by_seed("test_ordered_assigns").values()) == {"PASSED"}
    assert outcomes["checks_order.py::test_kept_out_of_the_shuffle"] == "PASSED"
    seeded = by_seed("test_schedule_seed_is_none_unless_shuffling", "checks_fixtures")
    assert set(seeded.values()) == {"PASSED"}
    failed = sorted(k for k, v in outcomes.items() if v == "FAILED")
    assert all("test_last_assign_wins" in k for k in failed)
    # A failure says how to run its schedule again; doing so fails again, alone.
    first = failed[0]
    seed = re.search(r"seed=(\d+)", first).group(1)
    assert (f"run it again with: pytest '{first}' --aioflow-shuffle-schedules=1 "
            f"--aioflow-shuffle-seed={seed}") in proc.stdout
    again = _pytest(first, "--aioflow-shuffle-schedules=1", f"--aioflow-shuffle-seed={seed}")
    assert again.returncode == 1 and _outcomes(again.stdout) == {first: "FAILED"}, again.stdout


def test_bad_option_is_a_usage_error():
    proc = _pytest("--aioflow-shuffle-schedules=-1")
    assert proc.returncode == 4
    assert "--aioflow-shuffle-schedules must be >= 0" in proc.stderr


def _code(text: str) -> str:
    """Python source without imports and blank lines."""
    return "\n".join(line for line in text.splitlines()
                     if line.strip() and not line.startswith(("import ", "from ")))


def test_the_docs_examples_are_the_projects_tests():
    """Each Python block of docs/testing.md is code of tests/plugin_project, which the
    tests above run: the documented examples run and do what the page says."""
    docs = (PROJECT.parents[1] / "docs" / "testing.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", docs, re.DOTALL)
    sources = _code("\n".join(p.read_text() for p in sorted(PROJECT.glob("checks_*.py"))))
    assert len(blocks) == 3
    for block in blocks:
        assert _code(block) in sources, block


def test_fixtures_work_in_pytest_asyncios_strict_mode():
    """pytest-asyncio's default mode is strict: the plugin marks the async tests that use
    its fixtures itself, so a new project needs no asyncio_mode setting for them."""
    proc = _pytest("-o", "asyncio_mode=strict")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outcomes = _outcomes(proc.stdout)
    assert set(outcomes.values()) == {"PASSED"} and len(outcomes) == 8


def test_an_unmarked_async_test_in_strict_mode_says_what_to_set(tmp_path):
    (tmp_path / "test_plain.py").write_text(
        "import aioflow as af\n\nasync def test_plain():\n    af.Graph()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "-o", "asyncio_mode=strict", "test_plain.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Mark it @pytest.mark.asyncio, or set asyncio_mode = auto" in proc.stdout
