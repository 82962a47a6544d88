"""The interactive timeline: a self-contained page, and how it behaves in headless Chromium.

The browser tests drive Chromium over the DevTools protocol (tests/reports/browser.py) with
real mouse events, for the KIP-570 legacy run and a 60 s random mix (reassignment churn on
2.5, seed 1, where a StopReplica is applied out of order); they save a screenshot of
every step, and the page's load time, in their output folder (printed with -s).
"""

from __future__ import annotations

import json
import os
import re

import pytest

from epochsim.cli import main as cli_main
from reports.interactive import page_beside, write_interactive
from reports.rundata import load_run
from tests.reports import KIP570, ROOT, run_to_dir
from tests.reports.browser import Browser, chromium

# a 60 s random mix of reassignments on 2.5 (before KIP-570): about 110,000 events, and a
# StopReplica applied out of order to be found
MIX = os.path.join(ROOT, "scenarios", "mix-reassignment-churn.toml")
MIX_SETTINGS = {"run.duration_ms": 60000, "protocol.profile": "2.5"}
DATA = re.compile(r'<script type="application/json" id="epochsim-data">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def kip570_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("kip570-live")
    run_to_dir(KIP570, out)
    return out


def embedded(path) -> dict:
    text = open(path, encoding="utf-8").read()
    return json.loads(DATA.search(text).group(1))


def test_page_is_self_contained_and_holds_every_event(kip570_dir, tmp_path):
    trace = str(kip570_dir / "trace.jsonl")
    a = write_interactive(trace, str(tmp_path / "a.html"))
    b = write_interactive(trace, str(tmp_path / "b.html"))
    text = open(a, encoding="utf-8").read()
    assert text == open(b, encoding="utf-8").read()  # the same trace, the same bytes
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "<script src" not in text and "<link" not in text  # script and style are inline
    data = embedded(a)
    run = load_run(trace)
    assert len(data["events"]) == len(run.events) and data["note"] == ""
    assert [e["seq"] for e in data["events"]] == list(range(len(run.events)))
    assert [v["invariant"] for v in data["violations"]] == [v["invariant"] for v in run.violations]
    assert data["nodes"][0] == "nemesis" and data["nodes"][-1] == "harness"
    assert data["nodes"][1:-1] == ["c1", "b1", "b2", "b3", "p1"]


def test_a_long_trace_keeps_its_control_plane_and_says_what_it_left_out(kip570_dir, tmp_path):
    trace = str(kip570_dir / "trace.jsonl")
    data = embedded(write_interactive(trace, str(tmp_path / "t.html"), limit=2000))
    kinds = {e["kind"] for e in data["events"]}
    assert "replicate" not in kinds and "hw" not in kinds
    assert not [e for e in data["events"] if e.get("msg") in ("Fetch", "Produce")]
    run = load_run(trace)
    control = [e["seq"] for e in run.events if e["kind"] in ("stop_replica", "replica_state",
                                                             "fault", "partition_state")]
    kept = {e["seq"] for e in data["events"]}
    assert set(control) <= kept
    assert "data plane" in data["note"] and "2,000" in data["note"]


def test_run_and_report_write_the_page_and_the_report_links_it(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli_main(["run", KIP570, "--out", str(out)]) == 1
    assert f"{out}/timeline.html" in capsys.readouterr().out
    assert embedded(out / "timeline.html")["violations"]
    assert cli_main(["report", str(out), "-o", str(tmp_path / "pages" / "k.html")]) == 0
    assert "k-timeline.html" in capsys.readouterr().out
    page = (tmp_path / "pages" / "k.html").read_text(encoding="utf-8")
    assert 'href="k-timeline.html"' in page
    assert (tmp_path / "pages" / "k-timeline.html").is_file()
    assert page_beside("x/report.html") == os.path.join("x", "timeline.html")


# -- in a browser -------------------------------------------------------------------------

needs_chromium = pytest.mark.skipif(
    chromium() is None,
    reason="headless Chromium is not installed (`make chromium`, or apt-get install -y chromium)")


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    out = tmp_path_factory.mktemp("interactive-timeline")
    print(f"\nscreenshots and load times: {out}")
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Browser(str(tmp_path_factory.mktemp("chromium")))
    yield b
    b.close()


def open_page(browser, path, shots, name):
    page = browser.open(f"file://{os.path.abspath(path)}")
    ready_ms = page.wait_for("window.epochsimTimeline && epochsimTimeline.readyMs")
    times = shots / "load-times.json"
    known = json.loads(times.read_text()) if times.exists() else {}
    known[name] = round(ready_ms)
    times.write_text(json.dumps(known, indent=1, sort_keys=True))
    print(f"{name}: drawn {ready_ms:.0f} ms after navigation started")
    page.screenshot(str(shots / f"{name}-0-loaded.png"))
    return page


def state(page) -> dict:
    return page.eval("epochsimTimeline.state()")


def hover(page, seq):
    point = page.eval(f"epochsimTimeline.eventPoint({seq})")
    assert point is not None, f"event {seq} is not on screen"
    page.move(point["x"], point["y"])
    return state(page)["tip"]


def hide_node(page, node):
    before = state(page)
    page.click_element(f"#node-{node}")
    after = state(page)
    assert node in before["lanes"] and node not in after["lanes"]
    assert node not in after["listNodes"] and after["shown"] < before["shown"]
    page.click_element(f"#node-{node}")  # and back
    assert state(page)["shown"] == before["shown"]


@needs_chromium
def test_kip570_page_in_chromium(kip570_dir, browser, shots):
    path = write_interactive(str(kip570_dir / "trace.jsonl"), str(shots / "kip570.html"))
    page = open_page(browser, path, shots, "kip570")
    # hover: the StopReplica that deleted b3's log, with its fields
    witness = embedded(path)["violations"][0]["seqs"][-1]
    tip = hover(page, witness)
    assert f"seq{witness}" in tip and "kindstop_replica" in tip and "issued_epoch1" in tip
    assert "witness of stop_replica_out_of_order" in tip
    page.screenshot(str(shots / "kip570-1-hover.png"))
    # a filter hides a node (its lane and its rows)
    page.click_element("#node-b2")
    assert "b2" not in state(page)["lanes"]
    page.screenshot(str(shots / "kip570-2-filter.png"))
    page.click_element("#node-b2")
    hide_node(page, "p1")
    # a click on the violation zooms to its witnesses and scrolls the list to them
    before = state(page)
    page.click_element("#violations button")
    after = state(page)
    seqs = embedded(path)["violations"][0]["seqs"]
    assert after["violation"] == 0 and set(seqs) <= set(after["listSeqsInView"])
    assert not set(seqs) & set(before["listSeqsInView"])
    assert after["v1"] - after["v0"] < 0.01 * (before["v1"] - before["v0"])
    assert after["messagesDrawn"] > 0  # zoomed in: the messages are drawn as lines
    assert page.eval("document.getElementById('list').scrollTop") > 0
    page.screenshot(str(shots / "kip570-3-violation.png"))


@needs_chromium
def test_sixty_second_mix_page_in_chromium(browser, shots):
    run_dir = shots / "mix-run"
    run_to_dir(MIX, run_dir, seed=1, overrides=MIX_SETTINGS)
    path = write_interactive(str(run_dir / "trace.jsonl"), str(shots / "mix.html"))
    data = embedded(path)
    events = data["events"]
    assert len(events) > 50_000 and events[-1]["t"] == 60_000_000
    page = open_page(browser, path, shots, "mix")
    assert state(page)["shown"] == len(events)
    # zoom with the wheel around the first broker crash, then hover it
    crash = next(e for e in events if e["kind"] in ("crash", "fault_outcome", "stop_replica")
                 and e["node"].startswith("b"))
    for _ in range(4):  # the pointer put back on the event each time: pixels are whole
        point = page.eval(f"epochsimTimeline.eventPoint({crash['seq']})")
        for _ in range(2):
            page.call("Input.dispatchMouseEvent", type="mouseWheel", x=point["x"],
                      y=point["y"], deltaX=0, deltaY=-500)
    zoomed = state(page)
    assert zoomed["v0"] <= crash["t"] <= zoomed["v1"] and zoomed["v1"] - zoomed["v0"] < 1e6
    tip = hover(page, crash["seq"])
    assert f"seq{crash['seq']}" in tip and f"kind{crash['kind']}" in tip
    assert f"node{crash['node']}" in tip
    page.screenshot(str(shots / "mix-1-hover.png"))
    hide_node(page, "b2")
    page.click_element("#node-p1")
    page.screenshot(str(shots / "mix-2-filter.png"))
    page.click_element("#node-p1")
    # the partition menu keeps that partition's events and those that name none
    page.eval("var s = document.getElementById('partition'); s.value = s.options[1].value;"
              "s.dispatchEvent(new Event('change'))")
    assert state(page)["shown"] < len(events)
    page.eval("var s = document.getElementById('partition'); s.value = '';"
              "s.dispatchEvent(new Event('change'))")
    # the last violation: its witnesses come into view, the list scrolls to the first
    last = len(data["violations"]) - 1
    seqs = data["violations"][last]["seqs"]
    page.click_element(f"#violations button:nth-of-type({last + 1})")
    after = state(page)
    times = [events[s]["t"] for s in seqs]
    assert after["violation"] == last and after["v0"] <= min(times) <= max(times) <= after["v1"]
    assert min(seqs) in after["listSeqsInView"]
    page.screenshot(str(shots / "mix-3-violation.png"))
