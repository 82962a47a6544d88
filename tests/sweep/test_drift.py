"""A sweep says which configs its cells differ in beyond the grid: Kafka's defaults that
follow the release move with a `protocol.profile` grid (epochsim.sweep.drift)."""

from __future__ import annotations

from epochsim.sweep.cells import expand
from epochsim.sweep.drift import default_drift
from epochsim.sweep.spec import load_spec
from tests.sweep import TINY, write_spec

PROFILES = '[grid]\n"protocol.profile" = ["2.4", "2.5", "3.7"]\n'


def drift(tmp_path, grid: str, scenario: str = TINY) -> list[str]:
    path = write_spec(tmp_path, f'scenarios = ["base.toml"]\nseeds = 2\n{grid}', scenario)
    return default_drift(expand(load_spec(path)))


def test_a_profile_grid_names_the_defaults_that_move_with_it(tmp_path):
    lines = drift(tmp_path, PROFILES)
    assert lines == [
        'tiny: cluster.zk_session_timeout_ms is 6000 for protocol.profile = "2.4"; 18000 for '
        'protocol.profile = "2.5" / protocol.profile = "3.7"',
        'tiny: cluster.broker_session_timeout_ms is 6000 for protocol.profile = "2.4"; 18000 '
        'for protocol.profile = "2.5" / protocol.profile = "3.7"',
        'tiny: cluster.replica_lag_time_max_ms is 10000 for protocol.profile = "2.4"; 30000 '
        'for protocol.profile = "2.5" / protocol.profile = "3.7"']


def test_options_written_in_the_base_or_set_by_the_grid_do_not_drift(tmp_path):
    pinned = TINY.replace("[[topics]]", "[cluster]\nzk_session_timeout_ms = 6000\n"
                          "broker_session_timeout_ms = 6000\nreplica_lag_time_max_ms = 10000\n\n"
                          "[[topics]]")
    assert drift(tmp_path, PROFILES, pinned) == []
    grid = PROFILES + '"cluster.replica_lag_time_max_ms" = [10000]\n'
    lines = drift(tmp_path, grid, pinned.replace("replica_lag_time_max_ms = 10000\n", ""))
    assert lines == []
    # a grid of switches alone moves no default
    assert drift(tmp_path, '[grid]\n"protocol.produce_epoch_check" = [false, true]\n') == []


def test_a_client_profile_moves_that_client_s_defaults(tmp_path):
    lines = drift(tmp_path, '[grid]\n"producers[0].profile" = ["2.0", "2.1"]\n')
    assert lines == ['tiny: producers[0].retries is 0 for producers[0].profile = "2.0"; '
                     '2147483647 for producers[0].profile = "2.1"']
