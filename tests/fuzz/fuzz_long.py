"""The long fuzz profile: subprocess workers fuzz for as long as asked, each under an
address-space cap, and the parent counts outcomes per class and keeps reproducers.

    python tests/fuzz/fuzz_long.py --seconds 1200 --out /tmp/aioflow-fuzz
    AIOFLOW_FUZZ=long AIOFLOW_FUZZ_SECONDS=1200 python -m pytest tests/fuzz -q -s

A worker draws cases with hypothesis (generation only, a new seed per batch), runs each
with the CaseRunner, and appends one JSON line per outcome. Before a case it saves the
case as `inflight-<pid>/`, so when a worker dies (a crash, the kernel's OOM killer) or
stops answering (the GIL held past the guard) the parent blames that case, saves it,
and starts a new worker. The report (JSON) has `counts` per outcome class, `failures`
(each distinct fingerprint with its count, a message and a saved reproducer), and
`wrapped` (raw exceptions the executor wrapped in an OpError).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
_WORKER_EXIT_ABANDONED = 3  # the worker left a blocked loop thread behind: restart it
_WORKER_EXIT_RECYCLE = 4  # the worker used up its address-space cap (or its case quota)
_CASES_PER_WORKER = 4000  # a fresh process now and then: the cap is on address space, and
# kernels abandoned at a deadline (a huge Pad still filling) keep theirs until they end


def _out_of_memory(exc: BaseException) -> bool:
    """Whether drawing or running a case failed for want of address space (the worker's
    cap), not because of a bug: MemoryError, protobuf's "Arena alloc failed", and the
    hypothesis errors such a failure turns into."""
    seen, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, MemoryError) or "Arena alloc failed" in str(e):
            return True
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return False
_MAX_SAVED_PER_FINGERPRINT = 3


def _fingerprint_dir(fingerprint: str) -> str:
    return hashlib.sha1(fingerprint.encode()).hexdigest()[:12]


# -- worker ---------------------------------------------------------------------------


def worker(seed: int, seconds: float, out: pathlib.Path, mem_mb: int, batch: int) -> int:
    """Fuzz until `seconds` have passed; one JSON line per case in outcomes-<pid>.jsonl."""
    from fuzz_runner import CaseRunner, Limits, address_space_limit
    from fuzz_serving import ServingRunner, serving_cases
    from fuzz_strategies import graphdef_cases, single_op_cases
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    deadline = time.monotonic() + seconds
    pid = os.getpid()
    inflight = out / f"inflight-{pid}"
    log = open(out / f"outcomes-{pid}.jsonl", "a", buffering=1)  # noqa: SIM115
    saved: collections.Counter = collections.Counter()
    runner = CaseRunner(Limits(run_timeout_ms=5000, case_timeout_s=10.0, guard_s=5.0))
    serving = ServingRunner()  # (its server: REST on both front ends, and gRPC)
    state = {"abandoned": False, "cases": 0}

    def body(case):
        if time.monotonic() > deadline or state["abandoned"] or state["cases"] >= \
                _CASES_PER_WORKER:
            return
        state["cases"] += 1
        case.save(inflight)
        outcome = (serving if case.kind.startswith(("http:", "grpc:")) else runner).run(case)
        record = {"cls": outcome.cls, "stage": outcome.stage, "where": outcome.where,
                  "wrapped": outcome.wrapped or ("idle" if outcome.idle else ""),
                  "kind": case.kind,
                  "seconds": round(outcome.seconds, 4), "message": outcome.message[:300]}
        if not outcome.acceptable or outcome.wrapped or outcome.idle:
            detail = outcome.wrapped or "idle"
            fp = outcome.fingerprint if not outcome.acceptable else \
                f"{outcome.cls}[{detail}]@{outcome.stage}@{outcome.where}"
            record["fingerprint"] = fp
            key = _fingerprint_dir(fp)
            if saved[key] < _MAX_SAVED_PER_FINGERPRINT:
                path = case.save(out / "cases" / key / f"{pid}-{saved[key]}")
                (path / "outcome.txt").write_text(f"{fp}\n\n{outcome.report()}")
                record["saved"] = str(path)
                saved[key] += 1
        log.write(json.dumps(record) + "\n")
        if runner.abandoned:
            state["abandoned"] = True

    cases = st.one_of(graphdef_cases(), graphdef_cases(), single_op_cases(), serving_cases())
    with address_space_limit(mem_mb << 20):
        n = 0
        while time.monotonic() < deadline and not state["abandoned"] and \
                state["cases"] < _CASES_PER_WORKER:
            run = settings(max_examples=batch, phases=[Phase.generate], database=None,
                           deadline=None, suppress_health_check=list(HealthCheck))(
                hseed(seed * 100_003 + n)(given(cases)(body)))
            try:
                run()
            except Exception as e:
                if not _out_of_memory(e):
                    raise
                state["cases"] = _CASES_PER_WORKER  # recycle: a fresh process goes on
            n += 1
    log.close()
    serving.close()
    shutil.rmtree(inflight, ignore_errors=True)
    if state["abandoned"]:
        os._exit(_WORKER_EXIT_ABANDONED)  # a blocked loop thread is still running
    if state["cases"] >= _CASES_PER_WORKER:
        os._exit(_WORKER_EXIT_RECYCLE)  # pool threads of abandoned kernels may still run
    return 0


# -- parent ---------------------------------------------------------------------------


def _spawn(seed: int, seconds: float, out: pathlib.Path, mem_mb: int, batch: int):
    env = dict(os.environ, MALLOC_ARENA_MAX="2", PYTHONPATH=os.pathsep.join(
        [str(HERE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", "--seed",
           str(seed), "--seconds", str(max(seconds, 1.0)), "--out", str(out), "--mem-mb",
           str(mem_mb), "--batch", str(batch)]
    # Fuzzed ops write files at fuzzed paths (SaveV2 with prefix "a" writes a.index): the
    # worker runs in a scratch folder of its own, never in the caller's checkout.
    scratch = out / f"scratch-{seed}"
    scratch.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(cmd, env=env, cwd=scratch, stdout=subprocess.DEVNULL,
                            stderr=open(out / f"worker-{seed}.err", "w"))  # noqa: SIM115


def _blame(out: pathlib.Path, proc, cls: str, message: str) -> None:
    """Record the in-flight case of a worker that died or stopped answering."""
    inflight = out / f"inflight-{proc.pid}"
    record = {"cls": cls, "stage": "?", "where": "", "wrapped": "", "kind": "?",
              "seconds": 0, "message": message}
    if (inflight / "case.json").exists():
        record["kind"] = json.loads((inflight / "case.json").read_text())["kind"]
        record["fingerprint"] = f"{cls}@?@{record['kind'].split(':')[0]}"
        dest = out / "cases" / _fingerprint_dir(record["fingerprint"]) / f"{proc.pid}-dead"
        shutil.copytree(inflight, dest, dirs_exist_ok=True)
        record["saved"] = str(dest)
        shutil.rmtree(inflight, ignore_errors=True)
    with open(out / f"outcomes-{proc.pid}.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")


def drive(seconds: float, out: str | os.PathLike, workers: int = 1, mem_mb: int = 2048,
          seed: int = 0, batch: int = 50, stall_s: float = 60.0) -> dict:
    """Fuzz with `workers` subprocesses for `seconds`; returns (and writes) the report."""
    out = pathlib.Path(out).resolve()  # workers run in their own scratch folder
    out.mkdir(parents=True, exist_ok=True)
    end = time.monotonic() + seconds
    next_seed = seed
    procs = []
    for _ in range(workers):
        procs.append(_spawn(next_seed, seconds, out, mem_mb, batch))
        next_seed += 1
    restarts = 0
    while procs:
        time.sleep(1.0)
        for proc in list(procs):
            rc = proc.poll()
            inflight = out / f"inflight-{proc.pid}" / "case.json"
            if rc is None:
                if inflight.exists() and time.time() - inflight.stat().st_mtime > stall_s:
                    proc.kill()
                    proc.wait()
                    _blame(out, proc, "FAIL:stalled", f"no progress for {stall_s} s (the GIL "
                                                      f"or the process held); killed")
                else:
                    continue
            elif rc < 0:
                _blame(out, proc, "FAIL:crash", f"worker died: signal {signal.Signals(-rc).name}")
            elif rc not in (0, _WORKER_EXIT_ABANDONED, _WORKER_EXIT_RECYCLE):  # harness error
                err = (out / f"worker-{proc.args[proc.args.index('--seed') + 1]}.err")
                _blame(out, proc, "HARNESS:worker-error", err.read_text()[-2000:])
            procs.remove(proc)
            left = end - time.monotonic()
            if left > 5:
                restarts += 1
                procs.append(_spawn(next_seed, left, out, mem_mb, batch))
                next_seed += 1
    report = summarize(out)
    report.update(seconds=seconds, workers=workers, mem_mb=mem_mb, restarts=restarts, seed=seed)
    (out / "report.json").write_text(json.dumps(report, indent=1))
    return report


def summarize(out: pathlib.Path) -> dict:
    """Counts per outcome class; distinct failures (with the known-open finding each
    matches, if any), and distinct places where an acceptable outcome wraps a raw
    exception, each with a count and reproducers."""
    from known_findings import known

    counts: collections.Counter = collections.Counter()
    wrapped: collections.Counter = collections.Counter()
    sections: dict = {"failures": {}, "wrapped_sites": {}}
    for path in sorted(out.glob("outcomes-*.jsonl")):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            counts[rec["cls"]] += 1
            if rec.get("wrapped"):
                wrapped[f"{rec['cls']}[{rec['wrapped']}]"] += 1
            fp = rec.get("fingerprint")
            if not fp:
                continue
            section = "failures" if rec["cls"].startswith(("FAIL:", "HARNESS:")) \
                else "wrapped_sites"
            entry = sections[section].setdefault(fp, {"count": 0, "message": rec["message"],
                                                      "kinds": [], "saved": []})
            entry["count"] += 1
            if section == "failures" and "known" not in entry:
                finding = known(fp)
                entry["known"] = finding.id if finding is not None else None
            if rec["kind"] not in entry["kinds"] and len(entry["kinds"]) < 5:
                entry["kinds"].append(rec["kind"])
            if rec.get("saved") and len(entry["saved"]) < 3:
                entry["saved"].append(rec["saved"])
    return {"total": sum(counts.values()), "counts": dict(counts.most_common()),
            "wrapped": dict(wrapped.most_common()), **sections}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float,
                        default=float(os.environ.get("AIOFLOW_FUZZ_SECONDS", 600)))
    parser.add_argument("--out", default=os.environ.get("AIOFLOW_FUZZ_OUT", "fuzz-out"))
    parser.add_argument("--workers", type=int,
                        default=int(os.environ.get("AIOFLOW_FUZZ_WORKERS", 1)))
    parser.add_argument("--mem-mb", type=int,
                        default=int(os.environ.get("AIOFLOW_FUZZ_MEM_MB", 2048)))
    parser.add_argument("--seed", type=int, default=int(os.environ.get(
        "AIOFLOW_FUZZ_SEED", int(time.time()) % 100_000)))
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.seed, args.seconds, pathlib.Path(args.out), args.mem_mb, args.batch)
    report = drive(args.seconds, args.out, args.workers, args.mem_mb, args.seed, args.batch)
    print(json.dumps({k: report[k] for k in ("seed", "total", "counts", "wrapped")}, indent=1))
    for section in ("failures", "wrapped_sites"):
        print(f"{section}:")
        for fp, entry in sorted(report[section].items(), key=lambda kv: -kv[1]["count"]):
            tag = f"  [known: {entry['known']}]" if entry.get("known") else ""
            print(f"{entry['count']:6d}  {fp}{tag}\n        {entry['message'][:160]!r}\n"
                  f"        {entry['saved'][:1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
