"""Client backoff by version (`client_backoff`): a constant retry.backoff.ms before 3.7, and
KIP-580's exponential backoff from 3.7 for retried batches and for metadata refreshes, which
also back off while Metadata answers bring no newer leader epoch (ref §0, §3.1)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from sim.kafka.client_metadata import ClientMetadata
from sim.kafka.client_refresh import MetadataRefresher
from sim.kafka.messages import MetadataResponse
from sim.kafka.options import ProducerOptions
from sim.kafka.profiles import resolve_protocol
from sim.kafka.rules.backoff import exponential_backoff_us
from sim.kafka.rules.client_producer import retry_backoff_us


class _Client(MetadataRefresher):
    """The least a client must supply to the refresher; records what it sends and arms."""

    def __init__(self, profile: str):
        self.protocol = resolve_protocol(profile)
        self.meta = ClientMetadata(self, self.protocol)
        self.bootstrap = (1, 2, 3)
        self.now_us, self.corr, self.meta_inflight, self.meta_node = 0, 0, None, -1
        self.sent, self.timers = [], []
        self.spec = ProducerOptions(name="p1", topic="t", metadata_max_age_ms=300_000)
        self.init_refresh()

    def emit(self, kind, fields):
        pass

    def rng(self, name):
        return random.Random(name)

    def in_flight_to(self, node):
        return 0

    def in_flight_limit(self):
        return 5

    def retry_backoff_us(self):
        return 100_000

    def retry_backoff_max_us(self):
        return 1_000_000

    def request_timeout_us(self):
        return 30_000_000

    def send(self, dst, kind, body):
        self.sent.append((self.now_us, body.corr))

    def set_timer(self, wait_us, name, data=None):
        self.timers.append((name, wait_us))

    def after_metadata(self):
        pass

    def answer(self, epoch: int) -> None:
        """The Metadata request in flight is answered: t-0 led by b1 at `epoch`."""
        msg = SimpleNamespace(body=MetadataResponse(self.meta_inflight, (1, 2, 3),
                                                    (("t-0", 7, 1, epoch),)), src="b1")
        self._on_metadata_response(msg)

    def gaps_ms(self, epochs: list[int]) -> list[int]:
        """Ask for metadata after each answer (as a client whose sends keep failing does) and
        return how long each next request waited after the previous answer."""
        self.request_update()
        gaps = []
        for epoch in epochs:
            self.answer(epoch)
            answered = self.now_us
            self.request_update()
            while self.meta_inflight is None:  # the refresh is armed: let its timer fire
                name, wait = self.timers[-1]
                assert name == "refresh"
                self.now_us += wait
                self.maybe_refresh()
            gaps.append((self.now_us - answered) // 1000)
        return gaps


def test_before_3_7_metadata_refreshes_wait_retry_backoff_ms_whatever_the_answers():
    assert _Client("3.4.1").gaps_ms([5, 5, 5, 5, 5, 5]) == [100] * 6


def test_from_3_7_equivalent_answers_back_metadata_refreshes_off_exponentially():
    gaps = _Client("3.7").gaps_ms([5, 5, 5, 5, 5, 5])
    # the first answer is news (the first epoch seen); then 1, 2, ... equivalent answers
    for gap, nominal in zip(gaps, (100, 100, 200, 400, 800, 1000)):
        assert 0.8 * nominal <= gap <= min(1.2 * nominal, 1000), gaps
    assert gaps[-1] > 2 * gaps[1]


def test_a_newer_leader_epoch_resets_the_equivalent_answer_backoff():
    gaps = _Client("3.7").gaps_ms([5, 5, 5, 5, 6])
    assert gaps[3] >= 0.8 * 400 and gaps[4] <= 1.2 * 100, gaps


def test_expired_metadata_resets_the_equivalent_answer_backoff():
    client = _Client("3.7")
    client.gaps_ms([5, 5, 5, 5])
    assert client.meta_equivalent == 3
    client.now_us += 300_000_000  # metadata.max.age.ms after the last answer
    client.on_metadata_timer("meta_age", None)
    assert client.meta_equivalent == 0


def test_metadata_expires_max_age_after_the_last_successful_refresh():
    """`Metadata.timeToNextUpdate` counts metadata.max.age.ms from `lastSuccessfulRefreshMs`
    (0.11.0-3.7.0): a refresh an error asked for puts off the periodic one, which then comes
    a full max age after that refresh, not on a fixed period from the client's start."""
    client = _Client("3.4.1")
    client.arm_metadata_expiry()  # at 0: expires at 300 s unless refreshed
    client.now_us = 100_000_000
    client.request_update()
    client.answer(5)  # an error-driven refresh at 100 s
    client.now_us = 300_000_000
    client.timers.clear()
    client.on_metadata_timer("meta_age", None)  # the clock armed at the start fires
    assert client.need_update is False and client.timers == [("meta_age", 100_000_000)]
    client.now_us = 400_000_000
    client.on_metadata_timer("meta_age", None)  # 300 s after the refresh: expired
    assert client.meta_inflight is not None and ("meta_age", 300_000_000) in client.timers


def test_a_failed_refresh_counts_as_an_attempt_only_from_3_7():
    for profile, nominal in (("3.4.1", 100), ("3.7", 200)):
        client = _Client(profile)
        client.request_update()
        client.metadata_failed()
        client.metadata_failed()  # two failures in a row: backoff(1) from 3.7
        assert 0.8 * nominal <= client.refresh_backoff_us() // 1000 <= 1.2 * nominal


def test_exponential_backoff_doubles_up_to_its_maximum_after_the_jitter():
    assert [exponential_backoff_us(100, 1000, n, 1.0) // 1000 for n in range(6)] == \
        [100, 200, 400, 800, 1000, 1000]
    assert exponential_backoff_us(100, 1000, 3, 1.2) == 960_000
    assert exponential_backoff_us(100, 1000, 4, 1.2) == 1_000_000  # capped after the jitter


@pytest.mark.parametrize("profile,expected", [
    ("2.6", [100, 100, 100, 100, 100]), ("3.7", [100, 200, 400, 800, 1000])])
def test_retried_batches_back_off_as_their_client_version_does(profile, expected):
    proto, stream = resolve_protocol(profile), random.Random("backoff")
    waits = [retry_backoff_us(proto, 100, 1000, n, lambda: stream.uniform(0.8, 1.2)) // 1000
             for n in range(1, 6)]
    for wait, nominal in zip(waits, expected):
        assert 0.8 * nominal <= wait <= min(1.2 * nominal, 1000), waits
    if profile == "2.6":
        assert waits == expected  # no jitter before KIP-580
