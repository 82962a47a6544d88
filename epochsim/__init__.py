"""epochsim: the composition root (CLI and run/suite/explore/sweep orchestration)."""

__version__ = "0.2.0"
