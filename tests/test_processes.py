"""The worker pool of ``generate -j`` and ``verify -j`` (graphgen.processes.WorkerPool):
results and errors come back, a slow job holds up no other, and ending the pool never
waits on a worker that died or was killed mid-result."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path

import pytest

from graphgen.processes import RemoteTraceback, WorkerDied, WorkerPool, worker_pool

WAIT = 60  # seconds: a bound for a result that comes at once when the pool works


def _fail(text: str) -> None:
    raise KeyError(text)


def _unpicklable() -> object:
    return threading.Lock()


def _die_while_sending(size: int) -> bytes:
    # The kill lands while the large result is being pickled or written to the pipe.
    threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGKILL)).start()
    return b"x" * size


def _wait_for(path: str) -> str:
    while not os.path.exists(path):
        time.sleep(0.01)
    return "slow"


_SETUP: list[int] = []


def _remember(n: int) -> None:
    _SETUP.append(n)


def _setup_seen() -> list[int]:
    return list(_SETUP)


def test_results_come_back_in_order_and_setup_runs_in_each_worker() -> None:
    with worker_pool(2, _remember, (7,)) as pool:
        assert list(pool.imap(abs, range(-20, 0))) == list(range(20, 0, -1))
        assert [pool.submit(_setup_seen).result(WAIT) for _ in range(4)] == [[7]] * 4


def test_an_error_comes_back_with_its_type_and_the_workers_traceback() -> None:
    with worker_pool(2) as pool:
        with pytest.raises(KeyError, match="bad key") as caught:
            pool.submit(_fail, "bad key").result(WAIT)
        assert isinstance(caught.value.__cause__, RemoteTraceback)
        assert "_fail" in str(caught.value.__cause__)
        with pytest.raises(RuntimeError, match="could not be sent back"):
            pool.submit(_unpicklable).result(WAIT)
        assert pool.submit(abs, -3).result(WAIT) == 3  # the pool still works


def test_a_job_that_never_goes_out_leaves_no_worker_idle() -> None:
    """One worker: a job whose argument does not pickle fails, a cancelled one is
    skipped, and the jobs queued behind them still run."""
    with worker_pool(1) as pool:
        slow = pool.submit(time.sleep, 0.5)
        bad = pool.submit(abs, threading.Lock())
        dropped = pool.submit(abs, -1)
        assert dropped.cancel()
        after = [pool.submit(abs, -n) for n in range(3)]
        assert slow.result(WAIT) is None
        with pytest.raises(TypeError):
            bad.result(WAIT)
        assert [f.result(WAIT) for f in after] == [0, 1, 2]


def test_a_slow_job_holds_up_no_other(tmp_path: Path) -> None:
    """Jobs go to whichever worker is idle: twenty quick jobs all finish while one
    worker is held by a job that waits for them."""
    flag = tmp_path / "go"
    with worker_pool(2) as pool:
        slow = pool.submit(_wait_for, str(flag))
        quick = [pool.submit(abs, -n) for n in range(20)]
        assert [f.result(WAIT) for f in quick] == list(range(20))
        assert not slow.done()
        flag.touch()
        assert slow.result(WAIT) == "slow"


def test_a_worker_that_dies_mid_result_breaks_the_pool_and_it_still_ends() -> None:
    pool = WorkerPool(2)
    try:
        doomed = pool.submit(_die_while_sending, 64 << 20)
        with pytest.raises(WorkerDied, match=r"exit code -9\) while running _die_while_sending"):
            doomed.result(WAIT)
        with pytest.raises(RuntimeError, match="broken"):
            pool.submit(abs, 1)
    finally:
        ended = threading.Thread(target=pool.terminate, daemon=True)
        ended.start()
        ended.join(WAIT)
    assert not ended.is_alive(), "terminate() hung on a dead worker"
    assert all(w.process.exitcode is not None for w in pool._workers)


def test_terminate_cancels_what_is_queued() -> None:
    pool = WorkerPool(1)
    running = pool.submit(time.sleep, 30)
    queued = pool.submit(abs, -1)
    deadline = time.monotonic() + WAIT
    while not running.running() and time.monotonic() < deadline:
        time.sleep(0.01)
    pool.terminate()
    with pytest.raises(CancelledError):
        queued.result(WAIT)
    assert running.done()  # failed, not left waiting
    assert running.exception() is not None


_STRESS = """
import sys, time
from graphgen.processes import WorkerPool

def big(i):
    time.sleep(0.002)
    return b"x" * 1_000_000

if __name__ == "__main__":
    for r in range(int(sys.argv[1])):
        pool = WorkerPool(4)
        futures = [pool.submit(big, i) for i in range(200)]
        for f in futures[:3]:
            f.result()
        pool.terminate()
    print("done", flush=True)
"""


def test_terminating_busy_workers_never_hangs(tmp_path: Path) -> None:
    """Workers killed while they write large results: with one shared result queue and
    its lock (``multiprocessing.Pool``) this hung within about 75 rounds."""
    script = tmp_path / "stress.py"
    script.write_text(_STRESS, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script), "40"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "done"
