"""A command-line profile moves Kafka's release defaults with the switches: run, suite and
explore name what it moved (`epochsim.common.profile_note`)."""

from __future__ import annotations

from tests.cli.test_cli import cli

MOVED = """
name = "moved"
expect = "pass"
[run]
duration_ms = 300
settle_ms = 100
[protocol]
profile = "3.7"
[cluster]
brokers = 1
[[topics]]
name = "t"
replication_factor = 1
[[producers]]
topic = "t"
"""


def test_a_command_line_profile_names_the_release_defaults_it_moves(tmp_path):
    """`--profile` changes the defaults a scenario leaves out with the switches; run says
    which, so a result is not read as the switches' alone. A value set on the command line,
    or none moved, says nothing."""
    path = tmp_path / "moved.toml"
    path.write_text(MOVED)
    code, _, err = cli("run", str(path), "--profile", "2.4", "--no-plot", "--out",
                       str(tmp_path / "r1"))
    assert code == 0 and err.startswith(f"note: {path}: protocol.profile = 2.4 moves"), err
    assert 'producers[0].acks "all" -> 1' in err and "zk_session_timeout_ms 18000 -> 6000" in err
    code, _, err = cli("run", str(path), "--profile", "2.4", "--set", "producers.0.acks=1",
                       "--no-plot", "--out", str(tmp_path / "r2"))
    assert code == 0 and "acks" not in err and "replica_lag_time_max_ms 30000 -> 10000" in err
    code, _, err = cli("run", str(path), "--profile", "3.6", "--no-plot", "--out",
                       str(tmp_path / "r3"))
    assert code == 0 and not err.strip(), err
