"""Checkers for the architecture rules, on source text and on a source tree.

Contract: pure functions over source text or a directory; nothing here imports the project's
modules, so a checker can be run on a fixture tree written by a test. `tests/test_architecture.py`
applies them to the repository and proves each one on fixtures.

Every `import` statement counts, wherever it stands (at module level, in a function, under
`if TYPE_CHECKING:`; why is said in `tests/test_architecture.py`). Constant strings passed to
`importlib.import_module` / `__import__` count too; a computed name (the CLI's command table)
cannot be followed and does not.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

KAFKA_WORDS = ("kafka", "broker", "leader", "epoch", "produce", "controller", "replica", "isr")
# whole words, also inside identifiers (leader_epoch, LeaderAndIsr), with plural/agent endings
_WORD_RE = re.compile(r"^(?:%s)(?:s|r|rs)?$" % "|".join(KAFKA_WORDS))
_SPLIT_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


# -- imports in one source ----------------------------------------------------------------

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
    return sorted(out)


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


# -- Kafka words in one source ------------------------------------------------------------

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


# -- the import graph of a tree -----------------------------------------------------------

def project_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted name -> file of every module under the top-level `packages` of `root` (a
    package's `__init__.py` is the package's own name)."""
    found: dict[str, Path] = {}
    for top in packages:
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _package_of(name: str, path: Path) -> str:
    """The package a module's relative imports start from."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _owner(imported: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported dotted name lives in (`a.b.Name` -> `a.b`), or None."""
    name = imported
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, dict[str, int]]:
    """module -> {project module it imports: first line that does}, every module present."""
    modules = project_modules(root, packages)
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges: dict[str, int] = {}
        source = path.read_text(encoding="utf-8")
        for line, imported in imported_modules(source, _package_of(name, path)):
            target = _owner(imported, modules)
            if target is not None and target != name:
                edges.setdefault(target, line)
        graph[name] = edges
    return graph


def _components(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative, in sorted
    order so the report is stable)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        members.append(top)
                        if top == node:
                            break
                    if len(members) > 1:
                        found.append(sorted(members))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found)


def _cycle_through(graph: dict[str, dict[str, int]], members: list[str]) -> list[str]:
    """One shortest cycle inside a component, from its first member, as a readable path."""
    start, inside = members[0], set(members)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node]):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    path.reverse()
                    hops = path + [start]
                    return [f"{a} (line {graph[a][b]}) -> {b}" for a, b in zip(hops, hops[1:])]
                if nxt in inside and nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    return members  # unreachable for a true component


def import_cycles(graph: dict[str, dict[str, int]]) -> list[str]:
    """One line per set of modules that import each other, with one cycle spelled out."""
    return [f"{', '.join(members)}: " + "; ".join(_cycle_through(graph, members))
            for members in _components(graph)]


# -- layers and sizes ---------------------------------------------------------------------

def layer_of(module: str, layers: list[tuple[str, tuple[str, ...]]]) -> int | None:
    """Index in `layers` (lowest first) of the layer whose pattern matches `module` most
    specifically: a pattern is a dotted module prefix, or ends in `*` to match by text
    (`epochsim.cmd_*`); None if no layer claims it."""
    best, best_len = None, -1
    for rank, (_name, patterns) in enumerate(layers):
        for pattern in patterns:
            if pattern.endswith("*"):
                hit = module.startswith(pattern[:-1])
            else:
                hit = module == pattern or module.startswith(pattern + ".")
            if hit and len(pattern) > best_len:
                best, best_len = rank, len(pattern)
    return best


def upward_imports(graph: dict[str, dict[str, int]],
                   layers: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    """Imports of a module in a higher layer than the importer's, and modules in no layer."""
    problems = []
    for module in sorted(graph):
        mine = layer_of(module, layers)
        if mine is None:
            problems.append(f"{module}: in no layer; place its package in the layer table")
            continue
        for target, line in sorted(graph[module].items()):
            theirs = layer_of(target, layers)
            if theirs is not None and theirs > mine:
                problems.append(f"{module} (line {line}) imports {target}: "
                                f"{layers[mine][0]} may not import {layers[theirs][0]}")
    return problems


def long_modules(root: Path, packages: Iterable[str], limit: int) -> dict[str, int]:
    """Path (relative to `root`, with /) -> line count of every module over `limit` lines."""
    out = {}
    for path in project_modules(root, packages).values():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            out[path.relative_to(root).as_posix()] = lines
    return out
