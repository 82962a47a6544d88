"""The conformance table: every probe of a directory run, and written as docs/conformance.md.

Contract: `rows(directory)` loads and runs every probe (`*.toml` with a `[probe]` table)
directly inside `directory`, in file order, at its own seed, and returns one row per probe:
case, Kafka test, tag, profile, Kafka's answer and the model's (each `check=value`, in the
probe's order), and whether they agree. `table(rows)` is the Markdown table; `write(doc,
rows)` replaces what lies between the `<!-- cases -->` and `<!-- /cases -->` markers of the
doc (the text around them is hand-written). `python -m epochsim.conformance --write` updates
docs/conformance.md from scenarios/conformance/; `--check` exits 1 when it is out of date.
"""

from __future__ import annotations

import argparse
import os
import sys

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from sim.core.files import atomic_write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRECTORY = os.path.join(ROOT, "scenarios", "conformance")
DOC = os.path.join(ROOT, "docs", "conformance.md")
START, END = "<!-- cases -->", "<!-- /cases -->"


def probe_files(directory: str) -> list[str]:
    return sorted(os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".toml"))


def _answers(checks: list, side: str) -> str:
    return "; ".join(f"`{c['check']}` {_text(c[side])}" for c in checks)


def _text(value) -> str:
    return str(value).replace("|", "\\|").replace("'", "")


def rows(directory: str = DIRECTORY) -> list[dict]:
    out = []
    for path in probe_files(directory):
        sc = load_scenario(path)
        if sc.probe is None:
            continue
        verdict = run_scenario(sc, sc.seed)
        checks = verdict["probe"]
        out.append({"case": sc.name, "test": sc.probe.kafka_test, "tag": sc.probe.kafka_tag,
                    "profile": sc.options.profile, "kafka": _answers(checks, "kafka"),
                    "model": _answers(checks, "model"), "agree": verdict["expectation_met"]})
    return out


def table(found: list[dict]) -> str:
    lines = ["| case | Kafka test | tag | profile | Kafka's answer | the model's | agree |",
             "|---|---|---|---|---|---|---|"]
    for r in found:
        lines.append(f"| {r['case']} | {r['test']} | {r['tag']} | {r['profile']} | {r['kafka']} "
                     f"| {r['model']} | {'yes' if r['agree'] else '**no**'} |")
    agree = sum(r["agree"] for r in found)
    lines.append("")
    lines.append(f"{agree} of {len(found)} cases agree.")
    return "\n".join(lines)


def rendered(doc_text: str, found: list[dict]) -> str:
    if START not in doc_text or END not in doc_text:
        raise ValueError(f"the doc lacks the {START} ... {END} markers")
    head, rest = doc_text.split(START, 1)
    _old, tail = rest.split(END, 1)
    return f"{head}{START}\n{table(found)}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m epochsim.conformance", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="update docs/conformance.md")
    mode.add_argument("--check", action="store_true", help="exit 1 if it is out of date")
    args = p.parse_args(argv)
    with open(DOC, encoding="utf-8") as fh:
        text = fh.read()
    found = rows()
    new = rendered(text, found)
    if args.check:
        if new != text:
            print("docs/conformance.md is out of date: python -m epochsim.conformance --write",
                  file=sys.stderr)
            return 1
        return 0
    with atomic_write(DOC) as fh:
        fh.write(new)
    print(f"docs/conformance.md: {len(found)} cases, {sum(r['agree'] for r in found)} agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
