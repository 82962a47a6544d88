"""HTML reports: self-contained pages for runs, suites and sweeps, checked in a browser too."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import types
from html.parser import HTMLParser

import pytest

from epochsim.cli import main as cli_main
from reports.html import write_report
from tests.reports import KIP570, run_to_dir

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Page(HTMLParser):
    """Collects tags, image sources and links; fails on tags closed out of order."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self, text: str):
        super().__init__()
        self.stack: list[str] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()
        assert self.stack == [], f"unclosed tags: {self.stack}"

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag == "a":
            self.links.append(attrs.get("href", ""))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(path) -> Page:
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    # self-contained: nothing fetched from the network
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    return Page(text)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("kip570")
    run_to_dir(KIP570, out)
    return str(out)


@pytest.fixture(scope="module")
def run_page(run_dir):
    return write_report(run_dir)


def test_run_page_has_verdict_repro_pictures_story_and_events(run_page):
    page = parse(run_page)
    text = " ".join(page.text)
    assert "VIOLATED: stop_replica_out_of_order" in text
    assert "epochsim run" in text and "--seed 1" in text
    assert "issued at leader epoch 2" in text
    assert len(page.images) == 2
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == PNG_SIGNATURE


def test_report_command_defaults_to_dir_report_html(run_dir, tmp_path, capsys):
    out = tmp_path / "elsewhere.html"
    assert cli_main(["report", run_dir, "-o", str(out)]) == 0
    assert out.exists()
    assert cli_main(["report", str(tmp_path / "missing")]) == 2
    assert cli_main(["report", str(tmp_path)]) == 2  # holds nothing to report on
    err = capsys.readouterr().err
    assert "not a directory" in err and "holds no trace.jsonl" in err


def test_suite_page_links_a_page_for_each_run_that_missed(tmp_path, capsys):
    with open(KIP570, encoding="utf-8") as fh:
        text = fh.read().replace('expect = "violation:stop_replica_out_of_order"',
                                 'expect = "pass"')
    scenario = tmp_path / "kip570-expecting-pass.toml"
    scenario.write_text(text.replace('name = "kip570-stop-replica-reorder-legacy"',
                                     'name = "kip570-expecting-pass"'), encoding="utf-8")
    suite_dir = tmp_path / "suite"
    assert cli_main(["suite", str(scenario), "--out", str(suite_dir), "--jobs", "1"]) == 1
    assert cli_main(["report", str(suite_dir)]) == 0
    page = parse(suite_dir / "report.html")
    assert "0/1 scenarios met their expectation" in " ".join(page.text)
    judged = json.loads((suite_dir / "suite.json").read_text())["rows"][0]["liveness_judged"]
    assert "/".join(str(judged[k]) for k in ("under_replicated_after_heal",
                                             "produce_stalled_after_heal",
                                             "consume_stalled_after_heal")) in page.text
    assert page.links == ["kip570-expecting-pass/seed-1/report.html"]
    assert "seed 1 (missed)" in " ".join(page.text)
    assert parse(suite_dir / page.links[0]).images


def test_suite_page_keeps_and_links_the_story_of_each_violation_scenario(tmp_path):
    """The first run of a scenario that expects a violation is kept and linked (its story),
    later seeds are not; the page groups scenarios by the KIP their names start with."""
    smoke = os.path.join(os.path.dirname(KIP570), "smoke.toml")
    suite_dir = tmp_path / "suite"
    assert cli_main(["suite", KIP570, smoke, "--seeds", "2", "--out", str(suite_dir),
                     "--jobs", "1"]) == 0
    assert sorted(os.listdir(suite_dir / "kip570-stop-replica-reorder-legacy")) == ["seed-1"]
    assert not (suite_dir / "smoke").exists()  # a passing scenario keeps nothing
    assert cli_main(["report", str(suite_dir)]) == 0
    page = parse(suite_dir / "report.html")
    assert page.links == ["kip570-stop-replica-reorder-legacy/seed-1/report.html"]
    text = " ".join(page.text)
    assert "seed 1 (story)" in text and "KIP-570" in text and "smoke" in text
    assert parse(suite_dir / page.links[0]).images


@pytest.mark.parametrize("name, group", [("kip570-stop-replica-reorder-legacy", "KIP-570"),
                                         ("kafka13972-stray-replica-fixed", "KAFKA-13972"),
                                         ("mix-delayed-metadata", "mix"), ("kipx-y", "kipx")])
def test_suite_groups_by_the_kip_or_ticket_a_name_starts_with(name, group):
    from reports.html import suite_group
    assert suite_group(name) == group


def test_explore_page_links_the_counterexample_and_draws_coverage(tmp_path, capsys):
    """An explore directory's page says what the search found, links the shrunk
    counterexample and shows the coverage curve above the replayed run; explore lists every
    file it wrote."""
    out = tmp_path / "ex"
    assert cli_main(["explore", KIP570, "--budget", "3", "--out", str(out)]) == 1
    wrote = [line for line in capsys.readouterr().out.splitlines() if "wrote" in line][0]
    assert all(f"{out}/{f}" in wrote for f in ("counterexample.toml", "coverage.png",
                                                 "explore.json", "trace.jsonl", "verdict.json"))
    assert cli_main(["report", str(out)]) == 0
    page = parse(out / "report.html")
    text = " ".join(page.text)
    assert "Explore kip570-stop-replica-reorder-legacy: stop_replica_out_of_order broken" in text
    assert "counterexample.toml" in page.links and "Coverage over time" in text
    assert len(page.images) >= 2  # the coverage curve, then the run's own pictures


def test_sweep_section_comes_from_the_sweep_module(tmp_path, monkeypatch):
    (tmp_path / "sweep.json").write_text("{}", encoding="utf-8")
    fake = types.ModuleType("reports.sweep_report")
    fake.render_sweep_section = lambda d, out_dir, write_page: f"<h1>Sweep of {os.path.basename(d)}</h1>"
    monkeypatch.setitem(sys.modules, "reports.sweep_report", fake)
    assert "Sweep of" in " ".join(parse(write_report(str(tmp_path))).text)
    monkeypatch.setitem(sys.modules, "reports.sweep_report", None)  # the module is absent
    assert "not available" in " ".join(parse(write_report(str(tmp_path))).text)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


CHECK_IMAGES = """<script>
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var bad = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); });
  var mark = document.createElement("p");
  mark.id = "image-check";
  mark.textContent = "IMAGES " + (bad.length ? "BROKEN" : "LOADED") + " " + imgs.length;
  document.body.appendChild(mark);
});
</script>"""


@pytest.mark.skipif(_chromium() is None,
                    reason="headless Chromium is not installed (apt-get install -y chromium)")
def test_run_page_renders_in_headless_chromium(run_page, tmp_path):
    """The page renders with every picture decoded; its screenshot is not blank."""
    with open(run_page, encoding="utf-8") as fh:
        probe = fh.read().replace("</body>", CHECK_IMAGES + "\n</body>")
    probed = tmp_path / "probe.html"
    probed.write_text(probe, encoding="utf-8")
    base = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--no-first-run", "--window-size=1400,2000"]
    dom = subprocess.run(base + [f"--user-data-dir={tmp_path / 'profile-a'}",
                                 "--virtual-time-budget=10000", "--dump-dom",
                                 probed.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert "IMAGES LOADED 2" in dom.stdout, dom.stderr[-2000:]
    shot = tmp_path / "shot.png"
    subprocess.run(base + [f"--user-data-dir={tmp_path / 'profile-b'}", f"--screenshot={shot}",
                           f"file://{os.path.abspath(run_page)}"],
                   capture_output=True, timeout=120)
    data = shot.read_bytes()
    assert data[:8] == PNG_SIGNATURE and len(data) > 50_000  # a blank page is a few kB


def test_run_page_names_the_per_node_versions():
    from reports.html import _versions_text
    assert _versions_text({"profile": "2.6"}) == ""
    header = {"profile": "2.6", "inter_broker_protocol": "2.5",
              "nodes": {"b1": {"profile": "2.5"}, "p1": {"profile": "1.0"}}}
    assert _versions_text(header) == ", IBP 2.5; b1 2.5, p1 1.0"
