"""Failover timelines: the model folded from a trace, and the pictures drawn from it."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import pytest

from epochsim.cli import main as cli_main
from reports.model import build
from reports.rundata import load_run
from reports.style import ReportError
from reports.timeline import plot_trace
from tests.reports import KIP570, many_partitions_toml, run_to_dir

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def kip570_trace(tmp_path_factory):
    return run_to_dir(KIP570, tmp_path_factory.mktemp("kip570"))


def svg_text(path) -> str:
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    ET.fromstring(text)  # well-formed XML
    return text


def test_model_shows_the_out_of_order_stop_replica(kip570_trace):
    run = load_run(kip570_trace)
    model = build(run.events, run.end_us)
    b3 = [(s.start_us, s.value) for s in model.roles[("t-0", "b3")]]
    assert (4_001_000, ("follower", 3)) in b3
    assert b3[-1] == (4_002_000, ("deleted", None))
    hold = [f for f in model.faults if f.action == "rule"]
    assert [(f.start_us, f.end_us) for f in hold] == [(3_000_000, 4_002_000)]
    held = [m for m in model.messages.values() if m.held]
    # the completion's StopReplica (delete false, epoch 1) and StopReplica(delete) (epoch 2)
    assert [(m.msg, m.dst, m.outcome["t-0"][0]) for m in held] == [("StopReplica", "b3", 1),
                                                                    ("StopReplica", "b3", 2)]


def test_png_is_written(kip570_trace, tmp_path):
    out = plot_trace(kip570_trace, str(tmp_path / "timeline.png"))
    with open(out, "rb") as fh:
        assert fh.read(8) == PNG_SIGNATURE


def test_svg_names_the_violation_and_the_epochs_that_disagree(kip570_trace, tmp_path):
    text = svg_text(plot_trace(kip570_trace, str(tmp_path / "t.svg")))
    assert "stop_replica_out_of_order" in text
    assert "follower · epoch 3" in text and "log deleted" in text
    assert "issued at leader epoch 2" in text and "held by the network" in text
    assert "Zoom on t-0" in text


def test_same_trace_gives_the_same_svg(kip570_trace, tmp_path):
    a = svg_text(plot_trace(kip570_trace, str(tmp_path / "a.svg")))
    b = svg_text(plot_trace(kip570_trace, str(tmp_path / "b.svg")))
    assert a == b


def test_window_and_partition_selection(kip570_trace, tmp_path):
    out = plot_trace(kip570_trace, str(tmp_path / "w.svg"), window=(3.5, 4.5), partitions=["t-0"])
    assert "t-0 @ b3" in svg_text(out)
    with pytest.raises(ReportError, match="t-9"):
        plot_trace(kip570_trace, str(tmp_path / "x.png"), partitions=["t-9"])
    with pytest.raises(ReportError, match="window"):
        plot_trace(kip570_trace, str(tmp_path / "x.png"), window=(5.0, 4.0))
    with pytest.raises(ReportError, match=".png or .svg"):
        plot_trace(kip570_trace, str(tmp_path / "x.pdf"))


def test_many_partitions_are_aggregated(tmp_path):
    scenario = tmp_path / "many.toml"
    scenario.write_text(many_partitions_toml(40), encoding="utf-8")
    trace = run_to_dir(str(scenario), tmp_path / "run")
    text = svg_text(plot_trace(trace, str(tmp_path / "many.svg")))
    assert "leaderless (of 40)" in text
    assert 1 <= text.count("truth (controller)") <= 6
    chosen = svg_text(plot_trace(trace, str(tmp_path / "two.svg"), partitions=["m-0", "m-7"]))
    assert chosen.count("truth (controller)") == 2 and "leaderless" not in chosen


def test_plot_command(kip570_trace, tmp_path, capsys):
    out = tmp_path / "cli.svg"
    assert cli_main(["plot", kip570_trace, "-o", str(out), "--window", "3:5",
                     "--partitions", "t-0"]) == 0
    assert out.exists()
    assert cli_main(["plot", kip570_trace]) == 0  # default: timeline.png beside the trace
    assert os.path.exists(os.path.join(os.path.dirname(kip570_trace), "timeline.png"))


@pytest.mark.parametrize("args, message", [
    (["--window", "5"], "START:END"),
    (["--window", "a:b"], "numbers"),
    (["--window", "4:3"], "START < END"),
    (["--partitions", "t-7"], "not in the trace"),
    (["-o", "t.pdf"], ".png or .svg"),
])
def test_plot_command_rejects_bad_input(kip570_trace, capsys, args, message):
    assert cli_main(["plot", kip570_trace, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_plot_command_rejects_a_missing_trace(tmp_path, capsys):
    assert cli_main(["plot", str(tmp_path / "none.jsonl")]) == 2
    assert "cannot open trace" in capsys.readouterr().err


def test_run_draws_the_timeline_beside_the_trace(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli_main(["run", KIP570, "--out", str(out)]) == 1  # the violation is expected
    with open(out / "timeline.png", "rb") as fh:
        assert fh.read(8) == PNG_SIGNATURE


def test_violations_are_rechecked_without_a_matching_verdict(kip570_trace, tmp_path):
    import json
    import shutil

    alone = tmp_path / "trace.jsonl"
    shutil.copy(kip570_trace, alone)
    assert "stop_replica_out_of_order" in svg_text(plot_trace(str(alone), str(tmp_path / "a.svg")))
    # a verdict left by another run in the same directory is not believed
    (tmp_path / "verdict.json").write_text(json.dumps(
        {"trace_digest": "0" * 64, "violations": []}), encoding="utf-8")
    run = load_run(str(alone))
    assert run.verdict is None
    assert [v["invariant"] for v in run.violations][:1] == ["stop_replica_out_of_order"]


def test_a_power_loss_is_a_window_until_the_restart():
    """A power loss takes its broker down like a crash: the report draws one window from it to
    the restart of the same broker, not two unrelated instants."""
    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario
    from tests.conftest import scenario_path

    events = run_scenario(load_scenario(scenario_path("kip101-power-loss-divergence-fixed")), 1,
                          keep_events=True)["_events"]
    model = build(events, events[-1]["t"])
    lost = [(f.nodes, f.start_us, f.end_us) for f in model.faults if f.action == "power_loss"]
    restarts = {e["resolved"]: e["t"] for e in events
                if e["kind"] == "fault" and e["action"] == "restart"}
    assert lost and all(end == restarts[nodes[0]] and end > start for nodes, start, end in lost)
    assert not [f for f in model.faults if f.action == "restart"]


def test_a_named_heal_closes_only_the_window_of_its_own_cut():
    """Overlapping isolations of a mix each end at their own heal; a plain heal ends all."""
    from reports.faultspans import FaultSpans

    def fault(seq, t, action, target=None, **params):
        return {"seq": seq, "t": t, "kind": "fault", "step": seq, "action": action,
                "target": target, "resolved": target, "params": params}

    spans = FaultSpans()
    for ev in (fault(0, 100, "isolate", "b1", cut="mix0.0"), fault(1, 200, "isolate", "b2", cut="mix0.2"),
               fault(2, 300, "heal", cut="mix0.0"), fault(3, 400, "block", "b3", dst="b1"),
               fault(4, 500, "heal")):
        spans.step(ev)
    windows = {(s.action, s.nodes[:1]): (s.start_us, s.end_us) for s in spans.finish(1_000)}
    assert windows == {("isolate", ("b1",)): (100, 300), ("isolate", ("b2",)): (200, 500),
                       ("block", ("b3",)): (400, 500)}


# -- how the picture reads: labels apart, headlines in order, legend, zoom axis, client lane ----

@pytest.fixture(scope="module")
def kip570_figure(kip570_trace):
    from reports import style as S
    from reports.timeline import figure

    run = load_run(kip570_trace)
    with S.drawing():
        yield run, figure(run), figure(run, tidy=False)


def test_no_label_covers_another(kip570_figure, tmp_path):
    from reports.declutter import overlaps

    _, tidy, raw = kip570_figure
    # without the layout the StopReplica label lies over a metadata label: the check bites
    assert any("StopReplica" in a + b for a, b in overlaps(raw))
    assert overlaps(tidy) == []
    scenario = tmp_path / "many.toml"
    scenario.write_text(many_partitions_toml(40), encoding="utf-8")
    from reports import style as S
    from reports.timeline import figure

    with S.drawing():
        many = figure(load_run(run_to_dir(str(scenario), tmp_path / "run")))
        assert overlaps(many) == []


def _texts(fig, start: str):
    from reports.declutter import texts_of
    return [t for t in texts_of(fig) if t.get_text().startswith(start)]


def test_violation_headlines_are_in_time_order_and_inside_the_axes(kip570_figure):
    run, fig, _ = kip570_figure
    overview = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    box = overview.get_window_extent(renderer)
    heads = [t for t in _texts(fig, "VIOLATION ") if t.axes is overview]
    assert len(heads) == 3
    boxes = [t.get_window_extent(renderer) for t in heads]
    top_down = [t.get_text() for _, t in sorted(zip(boxes, heads), key=lambda p: -p[0].y0)]
    firsts = sorted({v["invariant"]: v["t_us"] for v in reversed(run.violations)}.items(),
                    key=lambda kv: (kv[1], kv[0]))
    assert [h.split()[1] for h in top_down] == [name for name, _ in firsts]
    for bb in boxes:
        assert box.x0 - 0.5 <= bb.x0 and bb.x1 <= box.x1 + 0.5


def test_fault_labels_start_past_their_mark(kip570_figure):
    from reports.overlays import INSTANT_MARK_PT2

    _, fig, _ = kip570_figure
    renderer = fig.canvas.get_renderer()
    labels = _texts(fig, "reassign t-0")
    assert labels
    radius_px = (INSTANT_MARK_PT2 ** 0.5) / 2 * fig.dpi / 72
    for t in labels:
        anchor_x = t.axes.transData.transform(t.xy)[0]
        assert t.get_window_extent(renderer).x0 - anchor_x > radius_px
        assert not t.get_text().startswith(" ")  # a space is narrower in some fonts


def test_zoom_axis_counts_milliseconds_from_the_zoom_start(kip570_figure):
    _, fig, _ = kip570_figure
    zoom = fig.axes[1]
    assert zoom.get_xlabel() == "ms after 3.9995s"
    fig.canvas.draw()
    ticks = [t.get_text() for t in zoom.get_xticklabels() if t.get_text()]
    assert ticks[0] == "0" and "4" in ticks and all(float(t) <= 4.5 for t in ticks)


def test_legend_says_colour_is_the_leader_epoch(kip570_figure):
    from reports import style as S

    _, fig, _ = kip570_figure
    colours, roles = fig.legends
    assert "colour = leader epoch" in colours.get_title().get_text()
    # epoch 1 lasts no time: the reassignment's completion writes 1 and 2 at once
    assert [t.get_text() for t in colours.get_texts()] == ["epoch 0", "epoch 2", "epoch 3"]
    words = " ".join(t.get_text() for t in roles.get_texts())
    assert "leader" not in words.replace("leader is down", "").replace("another leader", "")
    assert S.epoch_color(3) != S.epoch_color(2)


def test_a_client_on_the_right_leader_is_not_drawn_stale(kip570_trace):
    from reports.model import Span, behind, other_leader

    run = load_run(kip570_trace)
    model = build(run.events, run.end_us)
    client, truth = model.clients[("p1", "t-0")], model.truth["t-0"]
    assert behind(client, truth)           # p1 never learns epochs 2 and 3 ...
    assert other_leader(client, truth) == []  # ... but b1 leads throughout, and acks flow
    views = [Span(0, 10, (1, 0)), Span(10, 30, (2, 1))]
    assert other_leader(views, [Span(0, 20, (2, 1)), Span(20, 30, (2, 1))]) == [(0, 10)]
