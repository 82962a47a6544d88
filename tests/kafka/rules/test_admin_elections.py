"""`rules.admin_elections`' broker purgatory rows: which waiting partitions the metadata cache
now shows elected (`DelayedElectLeader.updateWaiting`), and the answer once it lets go
(`onComplete`), read at 2.4.0 and 3.7.0."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.rules.admin_elections import completed_answer, seen_in_cache


@pytest.mark.parametrize("waiting,cache,seen", [
    ({"t-0": 2}, {"t-0": (1, 2, 5)}, ["t-0"]),                     # the cache names the leader
    ({"t-0": 2}, {"t-0": (1, 1, 4)}, []),                          # still the old one
    ({"t-0": 2}, {}, []),                                          # not in the cache at all
    ({"t-1": 3, "t-0": 2}, {"t-0": (1, 2, 5), "t-1": (1, 3, 1)}, ["t-0", "t-1"]),
])
def test_seen_in_cache(waiting, cache, seen):
    assert seen_in_cache(waiting, cache) == seen


def test_completed_answer_times_out_what_still_waits():
    answer = completed_answer({"t-0": 2}, {"t-1": E.NONE, "t-2": E.ELECTION_NOT_NEEDED})
    assert answer == {"t-0": E.REQUEST_TIMED_OUT, "t-1": E.NONE, "t-2": E.ELECTION_NOT_NEEDED}
