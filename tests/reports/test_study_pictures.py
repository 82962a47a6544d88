"""The KIP-951 study's picture: per scenario, the three modes in one figure."""

from __future__ import annotations

import os

from epochsim.study import MODES, WARMUP_US
from epochsim.study_plot import _figure, plot_latency
from reports import style as S

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def fake_results() -> list[dict]:
    """Two scenarios x three modes x two seeds, with a spike that differs by mode."""
    out = []
    for name in ("move-all", "rolling"):
        for mode in MODES:
            for seed in (1, 2):
                spike = {"metadata": 130.0, "kip951": 6.0, "refresh_no_backoff": 40.0}[mode]
                series = [[t / 10, 2.0, spike if t == 30 else 4.0] for t in range(0, 60)]
                out.append({"scenario": name, "mode": mode, "seed": seed,
                            "series": {"produce": series, "e2e": []},
                            "faults": [[3_000_000, "move_leader", "t-0"]]})
    return out


def test_one_figure_per_scenario_with_the_three_modes(tmp_path):
    paths = plot_latency(fake_results(), str(tmp_path))
    assert [os.path.basename(p) for p in paths] == ["latency-move-all.png", "latency-rolling.png"]
    for p in paths:
        with open(p, "rb") as fh:
            assert fh.read(8) == PNG_SIGNATURE
    again = plot_latency(fake_results(), str(tmp_path / "again"))
    assert open(paths[0], "rb").read() == open(again[0], "rb").read()


def test_modes_share_their_axes_and_the_warm_up_is_labelled():
    runs = [r for r in fake_results() if r["scenario"] == "move-all" and r["seed"] == 1]
    with S.drawing():
        fig = _figure("move-all", runs)
        axes = fig.axes
        assert [ax.get_title(loc="left") for ax in axes] == [f"leader_discovery = {m}"
                                                            for m in MODES]
        assert len({ax.get_ylim() for ax in axes}) == 1  # one scale: spikes compare
        assert axes[0].get_ylim()[1] >= 130.0
        for ax in axes:
            words = " ".join(t.get_text() for t in ax.texts)
            assert "warm-up" in words and f"{WARMUP_US / 1e6:g} s" in words
