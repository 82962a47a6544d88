"""Golden trace digests: a few (scenario, seed) runs pinned so refactors cannot change behaviour
unnoticed. Regenerate on purpose only, when a change is meant to alter behaviour:

    python -m tests.golden --update
"""

from __future__ import annotations

import json
import os
import sys

PINNED = ["smoke@7", "kip359-stale-leader-legacy@1", "kip570-stop-replica-reorder-legacy@1",
          "kafka13972-stray-replica-legacy@1", "idem-retention-spurious-0.11@1",
          "mix-reassignment-churn@3"]
GOLDEN_FILE = os.path.join(os.path.dirname(__file__), "golden_digests.json")


def compute() -> dict:
    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario
    from tests.conftest import scenario_path
    out = {}
    for key in PINNED:
        name, seed = key.rsplit("@", 1)
        out[key] = run_scenario(load_scenario(scenario_path(name)), int(seed))["trace_digest"]
    return out


if __name__ == "__main__":
    if "--update" not in sys.argv:
        sys.exit("usage: python -m tests.golden --update")
    with open(GOLDEN_FILE, "w") as fh:
        json.dump(compute(), fh, indent=2, sort_keys=True)
        fh.write("\n")
    print(f"wrote {GOLDEN_FILE}")
