"""Every invariant in the catalogue has a good and a bad hand-built trace in this package."""

from __future__ import annotations

import importlib
import pkgutil

import tests.invariants as package
from invariants.registry import INVARIANTS


def _test_names() -> set[str]:
    names = set()
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("test_"):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            names.update(n for n in vars(module) if n.startswith("test_"))
    return names


def test_every_invariant_has_a_holds_and_a_violated_test():
    """Good traces are `test_<invariant>_holds...`, bad ones any other `test_<invariant>_...`
    (`idempotence_mode_violated` already ends in the word)."""
    names = _test_names()
    missing = []
    for inv in INVARIANTS:
        mine = [n for n in names if n.startswith(f"test_{inv}_")]
        if not any(n.startswith(f"test_{inv}_holds") for n in mine):
            missing.append(f"{inv}: good trace")
        if not any(not n.startswith(f"test_{inv}_holds") for n in mine):
            missing.append(f"{inv}: bad trace")
    assert not missing, f"hand-built traces missing for {missing}"


def test_every_invariant_declares_its_rule_and_handlers():
    for name, cls in INVARIANTS.items():
        assert cls.name == name
        assert cls.rule in ("safety", "liveness", "sanity"), name
        assert cls.__doc__, f"{name} states its rule in its docstring"
