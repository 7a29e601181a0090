"""`aioflow serve --workers N`: N server processes sharing the ports (SO_REUSEPORT: the
kernel spreads new connections over them), so the server is no longer one event loop on
one core.

The parent process loads nothing itself: it starts the workers (spawned, each a whole
`aioflow serve` on the same flags), forwards SIGTERM and SIGINT to them (each drains its
requests in flight, as one server does), and exits when they have; if a worker exits
on its own (a model that failed to load, a crash), it stops the others and exits 1, for
the supervisor to restart the service. A worker whose parent is gone stops too.

Each worker loads and polls the models itself (N copies in memory; during a version
swap, workers may for a moment serve different versions), and batches only the
requests it receives. Metrics are summed over the workers (metrics.py): the workers
write prometheus_client's multiprocess files under PROMETHEUS_MULTIPROC_DIR (a fresh
temporary directory unless the operator sets one, which is emptied of *.db files at
start), so any worker answers a scrape with the whole server's numbers.
"""

from __future__ import annotations

import glob
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile

METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


def run_workers(args, serve) -> int:
    """Run args.workers worker processes, each `serve(args, worker=...)` (main.run, passed
    in so this module never imports main: main imports it), until they stop; the exit
    status."""
    if not args.port or args.rest_api_port is None:
        raise ValueError("--workers needs a fixed --port (the workers share it)")
    metrics_dir = os.environ.get(METRICS_DIR_ENV)
    own_dir = not metrics_dir
    if own_dir:
        metrics_dir = tempfile.mkdtemp(prefix="aioflow-serve-metrics-")
    else:
        os.makedirs(metrics_dir, exist_ok=True)
        for path in glob.glob(os.path.join(metrics_dir, "*.db")):
            os.remove(path)
    os.environ[METRICS_DIR_ENV] = metrics_dir  # before the workers import prometheus_client
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(serve, args, metrics_dir, os.getpid()),
                         name=f"aioflow-serve-worker-{i}") for i in range(args.workers)]
    stopping = False
    signalled = set()

    def stop(*_):
        nonlocal stopping
        stopping = True
        for p in procs:
            if p.pid is not None and p.exitcode is None and p.pid not in signalled:
                signalled.add(p.pid)
                os.kill(p.pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    status = 0
    try:
        for p in procs:
            if stopping:  # a signal came while starting them: start no more
                break
            p.start()
        if stopping:  # (one started as the signal came: it is stopped too)
            stop()
        running = [p for p in procs if p.pid is not None]
        while running:
            for sentinel in multiprocessing.connection.wait([p.sentinel for p in running]):
                p = next(p for p in running if p.sentinel == sentinel)
                p.join()
                running.remove(p)
                _mark_dead(p.pid, metrics_dir)
                if not stopping:
                    print(f"aioflow serve: worker {p.name} exited with status {p.exitcode}; "
                          "stopping the others", file=sys.stderr, flush=True)
                    status = 1
                    stop()
                elif p.exitcode != 0:
                    status = 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for p in procs:
            if p.exitcode is None and p.pid is not None:
                p.kill()
                p.join()
        if own_dir:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return status


def _mark_dead(pid: int, metrics_dir: str) -> None:
    """Drop a gone worker's live gauges (in flight, queue depth, version states)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, metrics_dir)


def _worker(serve, args, metrics_dir: str, parent: int) -> None:
    """One worker: the whole server, bound with SO_REUSEPORT."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent forwards it as SIGTERM
    sys.exit(serve(args, worker=(metrics_dir, parent)))
