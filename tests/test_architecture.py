"""Architecture rules, checked on the source: imports point down the layers only and form no
cycle, the core knows nothing of Kafka, invariants and reports read only the trace vocabulary
of the model, and no module passes 400 lines.

Every import counts, wherever it stands: at module level, inside a function (a lazy import) or
under `if TYPE_CHECKING:`. A lazy import hides a cycle from the interpreter, not from the
reader: the two modules still cannot be understood, tested or split apart, and the import still
runs, only later (the network <-> world cycle was such a lazy import); an annotation-only import
is knowledge of the other module all the same. So a lazy import is no way around a layer or a
cycle; pass in what is needed, or give the lower module a protocol to work against.

The checkers live in `tests.archcheck`; they are proved here on synthetic sources and fixture
trees before they are applied to the repository.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.archcheck import (
    TRACE_MODULES,
    import_cycles,
    import_graph,
    kafka_imports,
    kafka_words,
    long_modules,
    model_imports,
    upward_imports,
)

ROOT = Path(__file__).resolve().parent.parent

#: every top-level package of the project (the code, its tests and its benchmarks)
PACKAGES = ("sim", "scenarios", "invariants", "reports", "epochsim", "tests", "benchmarks")

#: the layers, lowest first: a module may import its own layer and the layers below it.
#: `scenarios` (the scenario library, its schema and loader) turns user input into the model's
#: options, so it sits above `sim.kafka` (profiles, mutants, vocabulary); it sits above
#: `invariants` too, which re-check a stored trace from its header alone and must never need
#: the loader, while the loader may well use the invariant catalogue to check `invariants` and
#: `expect`; and it sits below `reports`, which may draw a fault action's words from the one
#: place that defines the action. The CLI commands are a layer of their own above the rest of
#: `epochsim`, so that the orchestration they call never reaches back up into a command.
#: Benchmarks may use the whole project; tests may use everything, benchmarks included.
LAYERS = [
    ("sim.core", ("sim", "sim.core")),
    ("sim.kafka", ("sim.kafka",)),
    ("invariants", ("invariants",)),
    ("scenarios", ("scenarios",)),
    ("reports", ("reports",)),
    ("epochsim", ("epochsim",)),
    ("the CLI", ("epochsim.cli", "epochsim.cmd_*", "epochsim.__main__")),
    ("benchmarks", ("benchmarks",)),
    ("tests", ("tests",)),
]

MAX_LINES = 400


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
def test_trace_readers_import_only_what_a_trace_means(package):
    problems = [f"{p.relative_to(ROOT)}: {msg}" for p in _modules(package)
                for msg in model_imports(p.read_text(encoding="utf-8"), _package_of(p))]
    assert problems == []


@pytest.mark.parametrize("module", TRACE_MODULES)
def test_what_a_trace_means_loads_no_actor(module):
    """The modules trace readers may import stand on sim.core, one another and the protocol's
    switches, profile table and release defaults (pure modules) only, so reading a trace never
    loads the model's actors."""
    paths = _modules(module) or [ROOT.joinpath(*module.split(".")).with_suffix(".py")]
    allowed = (*TRACE_MODULES, "sim.kafka.profiles", "sim.kafka.switches", "sim.kafka.switch_choices",
               "sim.kafka.defaults", "sim.kafka.modes")
    problems = [f"{p.relative_to(ROOT)}: {msg}" for p in paths
                for msg in model_imports(p.read_text(encoding="utf-8"), _package_of(p), allowed)]
    assert problems == []
    switches = ROOT / "sim" / "kafka" / "switches.py"
    assert model_imports(switches.read_text(encoding="utf-8"), "sim.kafka", ()) == []
    profiles = ROOT / "sim" / "kafka" / "profiles.py"
    assert model_imports(profiles.read_text(encoding="utf-8"), "sim.kafka",
                         ("sim.kafka.switches", "sim.kafka.switch_choices")) == []
    choices = ROOT / "sim" / "kafka" / "switch_choices.py"
    assert model_imports(choices.read_text(encoding="utf-8"), "sim.kafka",
                         ("sim.kafka.switches",)) == []
    defaults = ROOT / "sim" / "kafka" / "defaults.py"
    assert model_imports(defaults.read_text(encoding="utf-8"), "sim.kafka",
                         ("sim.kafka.profiles",)) == []
    modes = ROOT / "sim" / "kafka" / "modes.py"
    assert model_imports(modes.read_text(encoding="utf-8"), "sim.kafka",
                         ("sim.kafka.profiles",)) == []


# -- the graph checkers on fixture trees --------------------------------------------------

FIXTURE_LAYERS = [("low", ("low",)), ("high", ("high",)), ("high cli", ("high.cmd_*",))]


def _write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return root


CLEAN_TREE = {
    "low/__init__.py": "",
    "low/a.py": "from low.b import B\nimport json\n",
    "low/b.py": "from . import c\nB = 1\n",
    "low/c.py": "import os\n",
    "high/__init__.py": "",
    "high/cmd_run.py": "from high.run import go\nfrom low import a\n",
    "high/run.py": "def go():\n    from low.c import os\n    return os\n",
}

BAD_TREE = {
    **CLEAN_TREE,
    # a cycle through a lazy import: b (at its top) -> c, c (inside a function) -> b
    "low/c.py": "import os\n\ndef f():\n    from low.b import B\n    return B\n",
    # a cycle through relative and annotation-only imports: d -> e -> d
    "low/d.py": "from .e import E\n",
    "low/e.py": ("from typing import TYPE_CHECKING\nE = 1\n"
                 "if TYPE_CHECKING:\n    from low.d import E as D\n"),
    # upward: the low layer uses the high one; the orchestration reaches up into a command
    "low/f.py": "import high.run\n",
    "high/run.py": "def go():\n    from high.cmd_run import go\n    return go\n",
    "stray/__init__.py": "",
}


def test_clean_fixture_tree_passes(tmp_path):
    graph = import_graph(_write_tree(tmp_path, CLEAN_TREE), ("low", "high"))
    assert graph["high.cmd_run"] == {"high.run": 1, "low.a": 2}
    assert graph["low.b"] == {"low.c": 1}
    assert import_cycles(graph) == []
    assert upward_imports(graph, FIXTURE_LAYERS) == []


def test_fixture_tree_with_cycles_and_upward_imports_fails(tmp_path):
    graph = import_graph(_write_tree(tmp_path, BAD_TREE), ("low", "high", "stray"))
    assert import_cycles(graph) == [
        "high.cmd_run, high.run: high.cmd_run (line 1) -> high.run; "
        "high.run (line 2) -> high.cmd_run",
        "low.b, low.c: low.b (line 1) -> low.c; low.c (line 4) -> low.b",
        "low.d, low.e: low.d (line 1) -> low.e; low.e (line 4) -> low.d",
    ]
    assert upward_imports(graph, FIXTURE_LAYERS) == [
        "high.run (line 2) imports high.cmd_run: high may not import high cli",
        "low.f (line 1) imports high.run: low may not import high",
        "stray: in no layer; place its package in the layer table",
    ]


def test_long_modules_on_a_fixture_tree(tmp_path):
    root = _write_tree(tmp_path, {"low/short.py": "x = 1\n" * 400,
                                  "low/long.py": "x = 1\n" * 401})
    assert long_modules(root, ("low",), MAX_LINES) == {"low/long.py": 401}


# -- the graph rules on the tree ----------------------------------------------------------

@pytest.fixture(scope="module")
def graph():
    return import_graph(ROOT, PACKAGES)


def test_every_package_is_read(graph):
    assert {name.split(".")[0] for name in graph} == set(PACKAGES)
    assert "sim.core.world" in graph["sim.kafka.cluster"]


def test_no_import_cycles(graph):
    assert import_cycles(graph) == []


def test_imports_point_down_the_layers(graph):
    assert upward_imports(graph, LAYERS) == []


def test_no_module_over_400_lines():
    too_long = long_modules(ROOT, PACKAGES, MAX_LINES)
    assert too_long == {}
