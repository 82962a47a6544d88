"""epochsim: the composition root (CLI and run/suite/explore/sweep orchestration).

The Python API (`epochsim.api`, taught in docs/api.md) is offered here by name: `epochsim.load`,
`epochsim.run`, ... Its names are looked up on first use, so `import epochsim` (and every
`epochsim.<module>` import, the CLI's included) stays cheap and loads no model.
"""

import importlib

from epochsim.version import __version__

#: the names of `epochsim.api` offered as `epochsim.<name>`
API = ("load", "parse", "build", "run", "suite", "scenario_files", "Run", "Scenario",
       "ScenarioError", "RunWriteError", "Violation")

__all__ = ["__version__", *API]


def __getattr__(name: str):
    """`epochsim.load` and the rest of `API`: imported from `epochsim.api` when first asked."""
    if name in API:
        return getattr(importlib.import_module("epochsim.api"), name)
    raise AttributeError(f"module 'epochsim' has no attribute {name!r}")
