"""Scenario files: the TOML format, its loader and validator (`scenarios.schema`)."""
