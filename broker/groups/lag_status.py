"""Is a consumer group healthy? Burrow's lag evaluator, judged over a window of observations.

Pure functions: no Kafka client, no Django. The caller hands over, per partition of one group, the
observations it has (oldest first) and, ideally, the log-end offset read at request time, so a
consumer that stopped never shows the lag it had when it was last seen.

An observation is one sample of (time, committed offset, log-end offset). Consecutive samples that
repeat the same committed offset and log end are still separate samples: they are not merged.

Partition rules, checked in this order (``W`` = the last ``rules.window`` observations, oldest
``first``, newest ``last``; ``span = last.at_ms - first.at_ms``; "allowed" = ``rules.allowed_lag``):

1. No observation at all: NOT_EVALUATED, current lag unknown (``None``).
2. Current lag = ``max(0, current_log_end - last.committed)`` when the log end at request time is
   given, else ``last.lag``.
3. Window incomplete (fewer than ``rules.window`` observations, or ``span < rules.min_span_ms``):
   OK when current lag <= allowed ("caught up"), else NOT_EVALUATED.
4. Current lag <= allowed: OK.
5. STOP when both hold, measured to ``now_ms``:

   * the committed offset has not moved for longer than the span:
     ``now_ms - last_move > span``, where ``last_move`` is the ``at_ms`` of the newest observation of
     ``W`` whose committed offset differs from the observation before it in ``W``, or ``first.at_ms``
     when the offset never changes inside ``W``;
   * messages have been waiting for longer than the span: no observation of ``W`` with lag <= allowed
     is ``span`` or less old, i.e. ``now_ms - caught_up > span`` for the newest such observation
     ``caught_up`` (vacuously true when there is none).

   The second condition is Burrow's "unless the log end was caught up within the window": a consumer
   that stopped committing because there was nothing to read is given one window's time to pick up
   messages that arrived since. Bounding it by time (not only by "is in ``W``") means a history whose
   last observation is old still reads STOP once the catch-up is older than the span.
   When a live member is assigned the partition (``consumed_now``), the same conditions, or a window whose
   committed offsets are all equal, read STALL instead: samples cannot tell "commits the same offset again"
   from "does not commit", membership can, and a group with a live member never reads STOP on its way to
   STALL.
6. REWIND: some committed offset in ``W`` is lower than the one before it and no later committed
   offset in ``W`` gets back to at least that earlier value.

   Rules 6 to 8 read ``W`` as Burrow's ring of commits would hold it: one observation per change of the
   committed offset (the first sample that saw it). Samples taken after a consumer stopped committing add
   nothing there: their lag grows only because nothing reads, and Burrow says OK until it says STOP.
7. STALL: no observation of ``W`` has lag <= allowed, and every committed offset in ``W`` is the same.
8. WARN: no observation of ``W`` has lag <= allowed, the committed offset moved within ``W``, and the
   lag at its commits never decreased and did rise (a consumer one record behind at every commit keeps up).
9. Otherwise OK.

When several hold, the first in the order above wins: STOP > REWIND > STALL > WARN > OK.

Judged over commits (``commits=True``: the observations are the group's own commits read from the offsets
topic, each at its commit time, as Burrow's ring holds them), two rules read as Burrow wrote them: rule 5 is
STOP when ``now_ms - last.at_ms > span`` (no commit for longer than the window took; a group that commits the
same offset again is alive, and reads STALL by rule 7, whatever its membership) unless a log end read lately
(``recent_ends``, Burrow's ring of broker offsets) was at or below the last committed offset; and rules 6 to 8
take every commit of ``W`` (no merging). The statuses then change when Burrow's do, not a window of samples later.

Group rules: ERR if any partition is STOP, STALL or REWIND; else WARN if any is WARN; else OK
(NOT_EVALUATED counts as OK). ``total_lag`` sums the current lags (unknown counts 0); ``worst`` is
the partition with the most severe status (STOP > REWIND > STALL > WARN > OK = NOT_EVALUATED), ties
broken by the highest current lag, then by topic and partition; ``complete`` is the lowest
completeness of any partition.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise

__all__ = [
    "GroupVerdict",
    "Observation",
    "PartitionVerdict",
    "Rules",
    "Status",
    "evaluate_group",
    "evaluate_partition",
    "format_duration",
]


class Status(StrEnum):
    """Partition statuses (OK, WARN, STOP, STALL, REWIND, NOT_EVALUATED) and group statuses (OK, WARN, ERR)."""

    OK = "OK"
    WARN = "WARN"
    ERR = "ERR"
    STOP = "STOP"
    STALL = "STALL"
    REWIND = "REWIND"
    NOT_EVALUATED = "NOT_EVALUATED"


# How bad a partition status is, for picking a group's worst partition.
_SEVERITY: dict[str, int] = {
    Status.OK.value: 0,
    Status.NOT_EVALUATED.value: 0,
    Status.WARN.value: 1,
    Status.STALL.value: 2,
    Status.REWIND.value: 3,
    Status.STOP.value: 4,
}
_GROUP_ERRORS = frozenset({Status.STOP.value, Status.STALL.value, Status.REWIND.value})


def severity(status: str) -> int:
    """How bad a partition status is, for picking the worst of several: OK and NOT_EVALUATED 0 up to STOP 4."""
    return _SEVERITY.get(status, 0)


@dataclass(frozen=True)
class Observation:
    """One sample of one partition of one group."""

    at_ms: int  # when it was observed (epoch ms)
    committed: int  # the group's committed offset then
    log_end: int  # the partition's log-end offset then

    @property
    def lag(self) -> int:
        """Messages between the committed offset and the log end then; never negative."""
        return max(0, self.log_end - self.committed)


@dataclass(frozen=True)
class Rules:
    """How a window is judged. Raises ``ValueError`` for a window under 2 or a negative limit."""

    window: int = 10  # how many observations make a complete window (Burrow's intervals)
    allowed_lag: int = 0  # lag at or below this is fine
    min_span_ms: int = 0  # a window shorter than this in time is not evaluated

    def __post_init__(self) -> None:
        if self.window < 2:
            raise ValueError(f"a window needs at least 2 observations, not {self.window}")
        if self.allowed_lag < 0:
            raise ValueError(f"allowed lag cannot be negative ({self.allowed_lag})")
        if self.min_span_ms < 0:
            raise ValueError(f"minimum span cannot be negative ({self.min_span_ms} ms)")


@dataclass(frozen=True)
class PartitionVerdict:
    """The status of one partition of one group, and why."""

    topic: str
    partition: int
    status: str  # a Status value: OK, WARN, STOP, STALL, REWIND or NOT_EVALUATED
    reason: str  # one human sentence
    current_lag: int | None
    complete: float  # how full the window is, 0..1

    @property
    def name(self) -> str:
        """``topic-partition``, the way Kafka names a partition."""
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class GroupVerdict:
    """The status of a whole group (OK, WARN or ERR), its worst partition and every partition's verdict."""

    status: str  # OK / WARN / ERR
    reason: str  # why, naming the worst partition
    total_lag: int
    worst: PartitionVerdict | None
    partitions: list[PartitionVerdict]
    complete: float  # min completeness over partitions


def format_duration(ms: int) -> str:
    """A duration for people, in at most two units, rounded down: "850 ms", "42 s", "4 min 10 s",
    "2 h 5 min", "3 d 4 h". A negative duration gets a leading minus sign."""
    if ms < 0:
        return "-" + format_duration(-ms)
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms // 1000
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return _two_units(minutes, "min", seconds, "s")
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return _two_units(hours, "h", minutes, "min")
    days, hours = divmod(hours, 24)
    return _two_units(days, "d", hours, "h")


def _two_units(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big:,} {big_unit} {small} {small_unit}" if small else f"{big:,} {big_unit}"


def _messages(count: int) -> str:
    return "1 message" if count == 1 else f"{count:,} messages"


def _waiting(count: int) -> str:
    return "1 message waits" if count == 1 else f"{count:,} messages wait"


def evaluate_partition(
    topic: str,
    partition: int,
    history: Sequence[Observation],
    now_ms: int,
    current_log_end: int | None,
    rules: Rules,
    consumed_now: bool = False,
    moved_at_ms: int | None = None,
    commits: bool = False,
    recent_ends: Sequence[int] = (),
) -> PartitionVerdict:
    """The verdict for one partition from its observations (oldest first; sorted by time here anyway)
    and the log-end offset read now (``None`` when unknown), judged by the module's rules at ``now_ms``.

    ``consumed_now``: a live group member is assigned the partition at this moment. Samples of committed
    offsets cannot tell "commits the same offset" from "does not commit", but membership can: a frozen
    offset with a member still assigned is STALL (alive, not moving), never STOP; without one it is STOP.

    ``moved_at_ms``: when the committed offset last changed, when the caller knows it from further back than
    ``history`` (the reasons then say for how long it has truly not moved).

    ``commits``: ``history`` is the group's own commits (from the offsets topic, each at its commit time, with
    the lag at that commit), not samples. Then the rules are Burrow's as they stand: STOP when the time since
    the last commit is longer than the window's span (a consumer that commits the same offset again is alive:
    STALL, never STOP), and every commit counts (none is merged away); ``consumed_now`` is not needed.
    ``recent_ends`` are the log ends read lately (Burrow's ring of broker offsets, one window of the lag
    sampler's reads): one at or below the last committed offset means the group was caught up lately, not STOP.
    """
    observations = sorted(history, key=lambda o: o.at_ms)  # stable: equal times keep their order

    def verdict(status: Status, reason: str, lag: int | None, complete: float) -> PartitionVerdict:
        return PartitionVerdict(topic, partition, status.value, reason, lag, complete)

    if not observations:
        return verdict(Status.NOT_EVALUATED, "no committed offset has been observed yet", None, 0.0)

    window = observations[-rules.window :]
    first, last = window[0], window[-1]
    span = last.at_ms - first.at_ms
    allowed = rules.allowed_lag
    lag = max(0, current_log_end - last.committed) if current_log_end is not None else last.lag
    complete = min(1.0, len(window) / rules.window)
    if rules.min_span_ms > 0:
        complete = min(complete, max(0.0, span / rules.min_span_ms))

    if len(window) < rules.window or span < rules.min_span_ms:
        if lag <= allowed:
            return verdict(Status.OK, f"caught up ({_lag_phrase(lag, allowed)})", lag, complete)
        if len(window) < rules.window:
            short = f"only {len(window)} of {rules.window} observations so far"
        else:
            short = f"the window spans {format_duration(span)} of the {format_duration(rules.min_span_ms)} needed"
        return verdict(Status.NOT_EVALUATED, f"not judged yet: {short}, while {_waiting(lag)}", lag, complete)

    if lag <= allowed:
        return verdict(Status.OK, f"caught up ({_lag_phrase(lag, allowed)})", lag, complete)

    committed = [o.committed for o in window]
    last_move = next((window[i].at_ms for i in range(len(window) - 1, 0, -1) if committed[i] != committed[i - 1]), None)
    caught_up = next((o.at_ms for o in reversed(window) if o.lag <= allowed), None)
    still_since = last.at_ms if commits else first.at_ms if last_move is None else last_move
    moved = _last_move_in(observations)
    if moved_at_ms is not None and moved == observations[0].at_ms:
        moved = min(moved, moved_at_ms)  # the history passed in starts after the offset last changed
    still_for = now_ms - moved

    frozen = len(set(committed)) == 1
    waited_long = caught_up is None or now_ms - caught_up > span
    if consumed_now and not commits and waited_long and (frozen or now_ms - still_since > span):
        reason = (
            f"a member is assigned but committed offset {last.committed:,} has not moved for "
            f"{format_duration(still_for)}, while {_waiting(lag)}"
        )
        return verdict(Status.STALL, reason, lag, complete)

    caught_up_lately = any(end <= last.committed for end in recent_ends)
    if commits and now_ms - still_since > span and not caught_up_lately:
        reason = (
            f"no commit for {format_duration(now_ms - last.at_ms)}, longer than the {format_duration(span)} its "
            f"last {len(window)} commits took; committed offset {last.committed:,}, while {_waiting(lag)}"
        )
        return verdict(Status.STOP, reason, lag, complete)

    if not commits and now_ms - still_since > span and waited_long:
        reason = (
            f"committed offset {last.committed:,} has not moved for {format_duration(still_for)}, "
            f"longer than the window's {format_duration(span)}, while {_waiting(lag)}"
        )
        return verdict(Status.STOP, reason, lag, complete)

    # What Burrow's ring of commits would hold: an observation per change of the committed offset (the first
    # sample that saw it), not the samples after a consumer stopped committing, whose lag grows only because
    # nothing reads (Burrow says OK there until it says STOP; a WARN from them would be a false alarm).
    # From the offsets topic, the window is that ring already: every commit counts.
    if not commits:
        window = [o for i, o in enumerate(window) if i == 0 or o.committed != window[i - 1].committed]
    committed = [o.committed for o in window]
    lags = [o.lag for o in window]

    rewind = _unrecovered_rewind(committed)
    if rewind is not None:
        before, after = rewind
        reason = (
            f"committed offset went back from {before:,} to {after:,} ({_messages(before - after)}) "
            f"and has not got back since (now {last.committed:,}), while {_waiting(lag)}"
        )
        return verdict(Status.REWIND, reason, lag, complete)

    never_caught_up = caught_up is None
    if never_caught_up and last_move is None:
        reason = (
            f"committed offset stuck at {last.committed:,} through the whole window of {format_duration(span)}, "
            f"while {_waiting(lag)}"
        )
        return verdict(Status.STALL, reason, lag, complete)

    # WARN: moving, never caught up, and the lag at its commits never fell and did rise (a consumer that keeps
    # one record behind at every sample keeps up: that is not falling behind).
    if never_caught_up and len(window) > 1 and lags[-1] > lags[0] and all(b >= a for a, b in pairwise(lags)):
        reason = (
            f"falling behind: lag grew from {lags[0]:,} to {lags[-1]:,} over "
            f"{format_duration(window[-1].at_ms - window[0].at_ms)} although the committed offset moved "
            f"{committed[-1] - committed[0]:,}, and {_waiting(lag)} now"
        )
        return verdict(Status.WARN, reason, lag, complete)

    if caught_up is not None:
        reason = (
            f"caught up {format_duration(now_ms - caught_up)} ago, within the window's {format_duration(span)}; "
            f"{_messages(lag)} to read since"
        )
    else:
        reason = f"keeping up: lag went down within the window of {format_duration(span)}; {_waiting(lag)} now"
    return verdict(Status.OK, reason, lag, complete)


def _lag_phrase(lag: int, allowed: int) -> str:
    if allowed == 0 or lag == 0:
        return f"{_messages(lag)} behind"
    return f"{_messages(lag)} behind, within the allowed {allowed:,}"


def _last_move_in(observations: Sequence[Observation]) -> int:
    """When the committed offset was last seen to change anywhere in the history (else its first time)."""
    for i in range(len(observations) - 1, 0, -1):
        if observations[i].committed != observations[i - 1].committed:
            return observations[i].at_ms
    return observations[0].at_ms


def _unrecovered_rewind(committed: Sequence[int]) -> tuple[int, int] | None:
    """(offset before, offset after) of the newest step backwards that no later offset made up for, or None."""
    highest_from: list[int] = []  # highest_from[i] = max(committed[i:])
    running = None
    for offset in reversed(committed):
        running = offset if running is None else max(running, offset)
        highest_from.append(running)
    highest_from.reverse()
    for i in range(len(committed) - 1, 0, -1):
        before = committed[i - 1]
        if committed[i] < before and highest_from[i] < before:
            return before, committed[i]
    return None


def evaluate_group(
    partitions: Mapping[tuple[str, int], Sequence[Observation]],
    now_ms: int,
    log_ends: Mapping[tuple[str, int], int],
    rules: Rules,
    consumed_now: Collection[tuple[str, int]] = (),
    moved_at: Mapping[tuple[str, int], int] | None = None,
    from_commits: Collection[tuple[str, int]] = (),
    commits_read_to_ms: int | None = None,
    recent_ends: Mapping[tuple[str, int], Sequence[int]] | None = None,
) -> GroupVerdict:
    """The verdict for a group: every partition judged by ``evaluate_partition`` (with its log end from
    ``log_ends`` when present, whether a live member holds it from ``consumed_now``, and whether its history is
    the group's own commits from ``from_commits``: those are judged at ``commits_read_to_ms`` when earlier than
    ``now_ms``, the moment up to which every commit is known, or their last commit's time if later), sorted by topic
    and partition, rolled up into OK, WARN or ERR."""

    def judged_at(key: tuple[str, int]) -> int:
        if key not in from_commits or commits_read_to_ms is None or not partitions[key]:
            return now_ms
        return min(now_ms, max(commits_read_to_ms, max(o.at_ms for o in partitions[key])))

    verdicts = [
        evaluate_partition(
            key[0],
            key[1],
            partitions[key],
            judged_at(key),
            log_ends.get(key),
            rules,
            key in consumed_now,
            (moved_at or {}).get(key),
            key in from_commits,
            (recent_ends or {}).get(key, ()),
        )
        for key in sorted(partitions)
    ]
    total = sum(v.current_lag or 0 for v in verdicts)
    if not verdicts:
        return GroupVerdict(Status.OK.value, "no partition has a committed offset to judge", 0, None, [], 0.0)

    worst = min(verdicts, key=lambda v: (-_SEVERITY[v.status], -(v.current_lag or 0), v.topic, v.partition))
    complete = min(v.complete for v in verdicts)
    failing = [v for v in verdicts if v.status in _GROUP_ERRORS]
    warning = [v for v in verdicts if v.status == Status.WARN.value]
    count = len(verdicts)

    if failing or warning:
        status = Status.ERR if failing else Status.WARN
        others = len(failing) + len(warning)
        tail = f" ({others} of {count} partitions need attention)" if count > 1 else ""
        return GroupVerdict(
            status.value, f"{worst.name} is {worst.status}: {worst.reason}{tail}", total, worst, verdicts, complete
        )

    pending = [v for v in verdicts if v.status == Status.NOT_EVALUATED.value]
    judged = f"all {count} partitions" if count > 1 else "the only partition"
    if pending:
        head = f"no partition in trouble, {len(pending)} of {count} not judged yet (window {complete:.0%} full)"
    else:
        head = f"{judged} OK"
    if total == 0:
        reason = f"{head}, and caught up"
    else:
        reason = f"{head}; most behind is {worst.name} with {_messages(worst.current_lag or 0)}"
    return GroupVerdict(Status.OK.value, reason, total, worst, verdicts, complete)
