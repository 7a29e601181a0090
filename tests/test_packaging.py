"""The wheel holds every package: each folder of aioflow/ and kernels/ with an __init__.py
is listed in pyproject.toml's [tool.setuptools] packages (the list is explicit because
kernels/ installs as aioflow.kernels)."""

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _packages_on_disk():
    found = set()
    for init in (ROOT / "aioflow").rglob("__init__.py"):
        found.add(".".join(init.parent.relative_to(ROOT).parts))
    for init in (ROOT / "kernels").rglob("__init__.py"):
        found.add(".".join(("aioflow",) + init.parent.relative_to(ROOT).parts))
    return found


def test_every_package_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    missing = sorted(_packages_on_disk() - listed)
    assert not missing, f"add to pyproject.toml's packages: {missing}"
    stale = sorted(p for p in listed if p not in _packages_on_disk())
    assert not stale, f"listed but not on disk: {stale}"
