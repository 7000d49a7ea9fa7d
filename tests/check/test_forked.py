"""Forked workers: every task's result once, the dead ones named, nothing left running."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mcpsniff.check.forked import MAX_RESULT, can_fork, run_forked
from tests.cli.test_main import _modules_loaded

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs fork")

ROOT = Path(__file__).resolve().parents[2]


def _square(task: int) -> list[int]:
    return [task, task * task, os.getpid()]


def test_every_task_is_done_once_by_a_forked_worker() -> None:
    results = dict(run_forked(list(range(20)), 3, _square))
    assert sorted(results) == list(range(20))
    assert all(r[1] == t * t for t, r in results.items())
    pids = {r[2] for r in results.values()}
    assert os.getpid() not in pids
    assert 1 <= len(pids) <= 3  # no more workers than asked for


def test_tasks_go_out_in_the_order_given() -> None:
    order = [5, 3, 9, 0]
    finished = [task for task, _ in run_forked(order, 1, _square)]
    assert finished == order


def test_a_slow_task_does_not_hold_up_the_others() -> None:
    def work(task: int) -> int:
        if task == 0:
            time.sleep(1.0)
        return task

    finished = [task for task, _ in run_forked([0, 1, 2, 3], 2, work)]
    assert finished[-1] == 0 and sorted(finished) == [0, 1, 2, 3]


def test_a_worker_that_dies_leaves_its_task_without_result_and_the_rest_go_on() -> None:
    def work(task: int) -> int:
        if task == 2:
            os._exit(9)
        return task

    results = dict(run_forked([0, 1, 2, 3, 4, 5], 2, work))
    assert results == {0: 0, 1: 1, 2: None, 3: 3, 4: 4, 5: 5}


def test_a_worker_that_always_dies_is_replaced_for_each_task() -> None:
    def work(task: int) -> int:
        raise RuntimeError("broken")

    results = list(run_forked([4, 1, 7], 1, work))
    assert sorted(results) == [(1, None), (4, None), (7, None)]


def test_a_result_too_large_counts_as_a_dead_worker() -> None:
    def work(task: int) -> str:
        return "x" * (MAX_RESULT + 10) if task == 1 else "ok"

    assert dict(run_forked([0, 1, 2], 1, work)) == {0: "ok", 1: None, 2: "ok"}


def test_leaving_early_stops_the_workers() -> None:
    pids: list[int] = []

    def work(task: int) -> int:
        if task > 0:
            time.sleep(30)
        return os.getpid()

    results = run_forked([0, 1, 2], 2, work)
    _, pid = next(results)
    pids.append(pid)
    results.close()  # the reader of the report went away
    # Reaped: no child of this process is left (no zombie either).
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_no_process_pool_is_imported_to_check_several_traces() -> None:
    """The workers are forked here: multiprocessing's start-up is not paid."""
    recordings = sorted((ROOT / "recordings").glob("*.jsonl"))[:3]
    loaded = _modules_loaded("check", "--jobs", "2", *map(str, recordings))
    assert "mcpsniff.check.forked" in loaded
    for pool in ("multiprocessing", "concurrent.futures", "pickle"):
        assert pool not in loaded, pool
