"""Traps a new user meets in the first minutes, each turned into a clear message."""

import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
