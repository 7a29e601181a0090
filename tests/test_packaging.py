"""The wheel holds every package: setuptools finds packages by their __init__.py, so a
folder of modules without one would be left out silently."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_module_folder_is_a_package():
    missing = sorted(
        str(d.relative_to(ROOT)) for d in (ROOT / "aioflow").rglob("*")
        if d.is_dir() and "__pycache__" not in d.parts
        and any(d.glob("*.py")) and not (d / "__init__.py").exists())
    assert not missing, f"add an __init__.py to: {missing}"
