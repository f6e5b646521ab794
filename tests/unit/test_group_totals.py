"""A group's total lag when the log end of some partitions is unknown (their leader did not answer): the
total counts what is known, and the pages say "at least" rather than show a fall in lag."""

from __future__ import annotations

from django.template.loader import render_to_string

from broker.groups.lag import GroupLag, PartitionLag
from broker.groups.lag_status import GroupVerdict


def group(*log_ends: int | None) -> GroupLag:
    rows = [PartitionLag("orders", i, 100, end, None, None, None) for i, end in enumerate(log_ends)]
    return GroupLag("billing", "Empty", "consumer", "", [], rows)


def test_partitions_without_a_log_end_are_counted_apart() -> None:
    known = group(150, 120)
    partial = group(150, None)
    assert (known.total_lag, known.unknown_lag) == (70, 0)
    assert (partial.total_lag, partial.unknown_lag) == (50, 1)
    assert partial.as_dict()["partitions_without_log_end"] == 1


def test_the_group_page_says_at_least_and_feeds_no_false_point_to_the_chart() -> None:
    verdict = GroupVerdict(status="OK", reason="caught up", total_lag=0, worst=None, partitions=[], complete=1.0)
    html = render_to_string("groups/_group.html", {"cluster": "local", "group": group(150, None), "verdict": verdict})
    assert 'title="1 partition not counted: its leader did not answer">≥ </span>50' in html
    assert "data-total-lag" not in html
    whole = render_to_string("groups/_group.html", {"cluster": "local", "group": group(150, 120), "verdict": verdict})
    assert 'data-total-lag="70"' in whole
