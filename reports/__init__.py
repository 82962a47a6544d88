"""Reports drawn from stored runs: failover timelines, sequence diagrams, stories, HTML pages.

Contract: everything here reads traces (`trace.jsonl`), verdicts (`verdict.json`), suite and
sweep tables only, never live model objects, so a report can be drawn from a run made
elsewhere. The Kafka words come from `sim.kafka.vocab`; matplotlib is imported where a
picture is drawn. The guide to reading the pictures is docs/reports.md.
"""
