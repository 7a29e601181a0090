"""The host memory policy (aioflow/runtime/allocator.py): large buffers freed by a step are
kept for the next one, also when worker threads allocate them (kernels on the executor's
pool allocate their outputs there), so a steady step does not page-fault its tensors in
again. Run in a fresh process: glibc's options must be set before threads allocate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")

_PROBE = textwrap.dedent("""
    import json, resource, threading
    import numpy as np
    from aioflow.runtime.allocator import retain_freed_memory

    applied = retain_freed_memory()
    faults = []

    def step():
        # three 25 MiB outputs alive at once (ResNet50's at batch 8), then freed
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        outs = [np.ones(25 << 18, np.float32) for _ in range(3)]
        del outs
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)

    def two_steps():
        step()
        step()

    for target in (step, step, two_steps):  # new threads, and one thread twice
        t = threading.Thread(target=target)
        t.start()
        t.join()
    print(json.dumps({"applied": applied, "faults": faults}))
""")


def _probe(**env) -> dict:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         check=True, env={**os.environ, **env}, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_worker_threads_reuse_freed_large_buffers():
    result = _probe()
    assert result["applied"] is True
    first, *later = result["faults"]
    # 75 MiB is ~19,200 pages: the first step faults them in (less with huge pages); the
    # later ones, on other threads or the same, reuse the kept heap (glibc's defaults:
    # 780-1,830 faults each, the threads' arenas unmapped when they empty).
    assert first > 100
    assert all(f < 50 for f in later), result["faults"]


def test_policy_off_leaves_malloc_alone():
    result = _probe(AIOFLOW_RETAIN_HOST_MEMORY="0")
    assert result["applied"] is False
