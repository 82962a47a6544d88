"""How much a scenario may ask for: the sizes the model runs in reasonable time and memory.

Contract: `check_counts(raw)` refuses (raises `scenarios.tables.Bad`, naming the section and
the limit) a parsed scenario with more tables in a section than the model runs, before any of
them is validated; `check_partitions(topics)` refuses more partitions in all than
MAX_PARTITIONS. Each limit is many times what a scenario of the library uses: a 1.2M-topic
file took 9 GB, and 735k scripted faults 77 s and 2.4 GB, before they were refused.
"""

from __future__ import annotations

from scenarios.tables import Bad

MAX_SCENARIO_BYTES = 4 << 20  # a scenario is a page of TOML; the largest shipped is 10 KB
MAX_PARTITIONS = 20_000  # topics x partitions, created topics included
MAX_COUNTS = {"faults": 10_000, "mix": 1_000, "producers": 1_000, "consumers": 1_000,
              "topics": MAX_PARTITIONS}


def check_counts(raw: dict) -> None:
    """Refuse more tables than the model can run, before validating any of them (validating
    hundreds of thousands of them alone took minutes)."""
    for section, cap in MAX_COUNTS.items():
        value = raw.get(section)
        if isinstance(value, list) and len(value) > cap:
            raise Bad(section, f"has {len(value):,} tables, more than the {cap:,} the model "
                      "runs", f"split the scenario, or use at most {cap:,}")


def check_partitions(topics: dict[str, int]) -> None:
    """Refuse more partitions in all than MAX_PARTITIONS (a Fetch walks them all)."""
    total = sum(topics.values())
    if total > MAX_PARTITIONS:
        raise Bad("topics", f"{len(topics):,} topics with {total:,} partitions in all, more "
                  f"than the {MAX_PARTITIONS:,} the model runs", "use fewer topics or partitions")
