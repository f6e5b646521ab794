"""The pace of a run that writes records (broker.transfer.progress): a rate kept, checkpoints when due, reports
at most so often."""

from __future__ import annotations

import time

import pytest

from broker.transfer import progress as pacing
from broker.transfer.progress import Pace, Reporter, RunProgress


def test_a_rate_is_kept_and_a_checkpoint_comes_every_so_many_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pacing, "CHECKPOINT_RECORDS", 3)
    monkeypatch.setattr(pacing, "CHECKPOINT_S", 3600.0)
    pace = Pace(rate=200.0)
    started = time.monotonic()
    due = [pace.one_more(n) for n in range(1, 21)]
    took = time.monotonic() - started
    assert took >= 20 / 200 - 0.01  # 20 records at 200 a second: a tenth of a second at least
    assert [n for n, d in enumerate(due, start=1) if d] == [3, 6, 9, 12, 15, 18]


def test_a_checkpoint_is_due_after_its_seconds_whatever_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pacing, "CHECKPOINT_S", 0.05)
    pace = Pace(rate=None)
    assert pace.one_more(1) is False
    time.sleep(0.06)
    assert pace.one_more(2) is True
    assert pace.one_more(3) is False


def test_reports_come_at_most_so_often_unless_forced_and_say_the_elapsed_time() -> None:
    seen: list[float] = []
    run = RunProgress(total=10, written=4)
    report = Reporter(run, Pace(None), lambda p: seen.append(p.elapsed), every_s=60)
    report()
    report()
    assert seen == []
    report(force=True)
    assert len(seen) == 1
    assert seen[0] >= 0
    assert run.as_dict()["written"] == 4
    assert run.as_dict()["records_per_s"] is not None
