"""A newcomer's first session, as the README walks it, in a fresh directory: every step says
what it did and wrote, nothing is overwritten, and the suite report leads to the stories."""

from __future__ import annotations

import os
import re

from epochsim.cli import main as cli_main
from tests.conftest import scenario_path


def test_first_session_keeps_every_run_and_leads_to_the_stories(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    smoke = scenario_path("smoke")
    legacy, fixed = (scenario_path(f"kip570-stop-replica-reorder-{k}") for k in ("legacy", "fixed"))

    # run the same scenario twice: two runs in the store, `latest` names the second
    for _ in range(2):
        assert cli_main(["run", smoke, "--no-plot"]) == 0
    out = capsys.readouterr().out
    runs = sorted(d for d in os.listdir("runs/smoke") if d != "latest")
    assert len(runs) == 2 and os.readlink("runs/smoke/latest") == runs[1]
    written = re.findall(r"wrote (.+)", out)
    assert len(written) == 2 and all("trace.jsonl" in w and "verdict.json" in w for w in written)

    # the KIP-570 pair in the suite: the legacy story is kept, the report links it
    assert cli_main(["suite", legacy, fixed, "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "2/2 scenarios met their expectation" in out and "read their stories" in out
    assert cli_main(["report", "runs/suite"]) == 0
    page = open("runs/suite/report.html", encoding="utf-8").read()
    assert "KIP-570" in page
    assert 'href="kip570-stop-replica-reorder-legacy/seed-1/report.html"' in page
    assert os.path.isfile("runs/suite/kip570-stop-replica-reorder-legacy/seed-1/report.html")
