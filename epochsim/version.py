"""The harness version, recorded in every trace header and verdict (`harness_version`).

Its own module so that the modules recording it need not import the `epochsim` package,
whose `__init__` offers the Python API (`epochsim.api`) built on them.
"""

__version__ = "0.2.0"
