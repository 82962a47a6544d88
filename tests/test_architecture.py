"""Layering rules, checked on the source: the core knows nothing of Kafka, and invariants and
reports read only the trace vocabulary of the model."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

KAFKA_WORDS = ("kafka", "broker", "leader", "epoch", "produce", "controller", "replica", "isr")
# whole words, also inside identifiers (leader_epoch, LeaderAndIsr), with plural/agent endings
_WORD_RE = re.compile(r"^(?:%s)(?:s|r|rs)?$" % "|".join(KAFKA_WORDS))
_SPLIT_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


# -- checkers ----------------------------------------------------------------------------

def _resolve(module: str | None, level: int, package: str) -> str:
    """Absolute name of `from <level dots><module> import ...` inside `package`."""
    if level == 0:
        return module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    return ".".join(base + ([module] if module else []))


def imported_modules(source: str, package: str = "") -> list[tuple[int, str]]:
    """(line, absolute module path) for every import in `source`: `from X import name` counts
    as `X.name` (the name may be a submodule), `from X import *` as `X`, and string arguments
    of `importlib.import_module` / `__import__` count too."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node.module, node.level, package)
            for alias in node.names:
                if alias.name == "*":
                    out.append((node.lineno, base))
                else:
                    out.append((node.lineno, f"{base}.{alias.name}" if base else alias.name))
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
            if (name in ("import_module", "__import__") and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                out.append((node.lineno, node.args[0].value))
    return out


def kafka_imports(source: str, package: str = "") -> list[str]:
    """Imports of any module whose dotted path contains "kafka"."""
    return [f"line {line}: imports {mod}" for line, mod in imported_modules(source, package)
            if "kafka" in mod.lower()]


# What trace readers may import of the model, none of which loads an actor: the event
# vocabulary, the options a header records (their fields and limits) and the fault catalogue
# (plain data about each fault action: its words, its timeline window).
TRACE_MODULES = ("sim.kafka.vocab", "sim.kafka.options", "sim.kafka.faults")


def model_imports(source: str, package: str = "", allowed: tuple = TRACE_MODULES) -> list[str]:
    """Imports of `sim.kafka` (or below) other than the `allowed` modules and what is below
    them."""
    bad = []
    for line, mod in imported_modules(source, package):
        if mod == "sim.kafka" or mod.startswith("sim.kafka."):
            if any(mod == ok or mod.startswith(ok + ".") for ok in allowed):
                continue
            bad.append(f"line {line}: imports {mod}")
    return bad


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                ids.add(id(body[0].value))
    return ids


def _names_and_strings(tree: ast.AST):
    docstrings = _docstring_nodes(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                yield line, node.value
        elif isinstance(node, ast.Name):
            yield line, node.id
        elif isinstance(node, ast.Attribute):
            yield line, node.attr
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield line, node.name
        elif isinstance(node, ast.arg):
            yield line, node.arg
        elif isinstance(node, ast.keyword) and node.arg:
            yield line, node.arg
        elif isinstance(node, ast.alias):
            yield line, node.name
            if node.asname:
                yield line, node.asname
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield line, node.module
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                yield line, name


def kafka_words(source: str) -> list[str]:
    """Kafka words in identifiers and string literals (comments and docstrings excluded)."""
    found = []
    for line, text in _names_and_strings(ast.parse(source)):
        for word in _SPLIT_RE.findall(text):
            if _WORD_RE.match(word.lower()):
                found.append(f"line {line}: {word!r} in {text!r}")
    return found


# -- the checkers on synthetic sources ----------------------------------------------------

@pytest.mark.parametrize("source", [
    "import sim.kafka",
    "import kafka",
    "from sim.kafka.broker import Broker",
    "from sim import kafka",
    "from ..kafka import vocab",
    "import importlib\nimportlib.import_module('sim.kafka.vocab')",
    "def f():\n    from sim.kafka import vocab\n",
])
def test_kafka_import_checker_flags(source):
    assert kafka_imports(source, package="sim.core")


@pytest.mark.parametrize("source", [
    "import simpy\nfrom sim.core.trace import Trace\nfrom . import rng",
    "# import sim.kafka\n'''from sim.kafka import x'''",
    "from .network import Network",
])
def test_kafka_import_checker_passes(source):
    assert kafka_imports(source, package="sim.core") == []


@pytest.mark.parametrize("source, bad", [
    ("from sim.kafka.vocab import EVENT_KINDS", False),
    ("from sim.kafka.options import ClusterOptions, limit", False),
    ("from sim.kafka import vocab", False),
    ("import sim.kafka.vocab as v", False),
    ("from sim.kafka.vocab import x\nfrom sim.kafka import profiles", True),
    ("from sim.kafka import vocab, broker", True),
    ("import sim.kafka", True),
    ("from sim.kafka.broker import Broker", True),
    ("from sim import kafka", True),
    ("from sim.kafka import *", True),
    ("from ..sim.kafka import broker", True),
    ("from sim.core.trace import read_trace", False),
])
def test_model_import_checker(source, bad):
    assert bool(model_imports(source, package="invariants")) is bad


@pytest.mark.parametrize("source", [
    "leader = 1",
    "def bump_epoch(x):\n    pass",
    "class LeaderAndIsr:\n    pass",
    "x = {'kind': 'Produce'}",
    "f(replicas=[])",
    "obj.isr = []",
    "msg = f'to {dst} broker'",
    "import kafka",
    "CONTROLLER_ID = 0",
])
def test_word_checker_flags(source):
    assert kafka_words(source)


@pytest.mark.parametrize("source", [
    "'''The leader epoch is not mentioned here.'''\nx = 1",
    "def f():\n    '''a broker docstring'''\n    return 0  # leader comment",
    "net.partition([['a'], ['b']])\nreason = 'partition'",
    "isolate = 1\nleading = 2\nreproduce = 3\nepochal = 4",
    "derive_seed = 1\nheader_digest_part = 2",
])
def test_word_checker_passes(source):
    assert kafka_words(source) == []


# -- the rules on the tree ----------------------------------------------------------------

def _modules(package: str) -> list[Path]:
    base = ROOT.joinpath(*package.split("."))
    return sorted(base.rglob("*.py")) if base.is_dir() else []


def _package_of(path: Path) -> str:
    """The package a module's relative imports start from (its directory as a dotted path)."""
    return ".".join(path.relative_to(ROOT).parent.parts)


def test_core_modules_exist():
    assert _modules("sim.core"), "sim/core not found"


def test_core_does_not_import_kafka():
    problems = [f"{p.relative_to(ROOT)}: {msg}" for p in _modules("sim.core")
                for msg in kafka_imports(p.read_text(encoding="utf-8"), _package_of(p))]
    assert problems == []


def test_core_has_no_kafka_words():
    problems = [f"{p.relative_to(ROOT)}: {msg}" for p in _modules("sim.core")
                for msg in kafka_words(p.read_text(encoding="utf-8"))]
    assert problems == []


@pytest.mark.parametrize("package", ["invariants", "reports"])
def test_trace_readers_import_only_the_vocabulary(package):
    problems = [f"{p.relative_to(ROOT)}: {msg}" for p in _modules(package)
                for msg in model_imports(p.read_text(encoding="utf-8"), _package_of(p))]
    assert problems == []


@pytest.mark.parametrize("module", TRACE_MODULES)
def test_what_a_trace_means_loads_no_actor(module):
    """The modules trace readers may import stand on sim.core, one another and the protocol's
    switch table (a pure module) only, so reading a trace never loads the model's actors."""
    paths = _modules(module) or [ROOT.joinpath(*module.split(".")).with_suffix(".py")]
    allowed = (*TRACE_MODULES, "sim.kafka.profiles")
    problems = [f"{p.relative_to(ROOT)}: {msg}" for p in paths
                for msg in model_imports(p.read_text(encoding="utf-8"), _package_of(p), allowed)]
    assert problems == []
    profiles = ROOT / "sim" / "kafka" / "profiles.py"
    assert model_imports(profiles.read_text(encoding="utf-8"), "sim.kafka", ()) == []
