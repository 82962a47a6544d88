"""`epochsim list`: what the model knows, from the code itself (profiles, invariants, ...)."""

from __future__ import annotations

import argparse
import inspect
import textwrap

from epochsim.errors import UsageError

HELP = """\
Print what scenarios can name, as the code defines it (docs/profiles.md, docs/invariants.md
and docs/trace.md explain each one with its sources):

  epochsim list profiles                 every protocol switch in every version profile
  epochsim list profiles 2.5 2.6         only the switches that differ between these profiles
  epochsim list profiles 2.5 2.6 --all   every switch, also those on which the two agree
  epochsim list invariants               each invariant, its rule type and what it checks
  epochsim list mutants                  each planted bug and the invariant that must catch it
  epochsim list kinds                    every trace event kind
  epochsim list actions                  each fault action, its target and its params
                                         (docs/scenarios.md describes what each one does)"""

WHAT = ("profiles", "invariants", "mutants", "kinds", "actions")


def register(subs) -> None:
    p = subs.add_parser("list", help="list profiles, invariants, mutants, event kinds or fault "
                        "actions",
                        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=WHAT, metavar="WHAT", help=" | ".join(WHAT))
    p.add_argument("names", nargs="*", default=[], metavar="PROFILE",
                   help="with `profiles`: the profiles to show (default: all)")
    p.add_argument("--all", action="store_true",
                   help="with two or more profiles: also the switches on which they agree")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.names and args.what != "profiles":
        raise UsageError(f"list {args.what}: takes no names (only `list profiles` does)")
    lines = {"profiles": lambda: profile_lines(args.names, args.all),
             "invariants": invariant_lines, "mutants": mutant_lines,
             "kinds": kind_lines, "actions": action_lines}[args.what]()
    print("\n".join(lines))
    return 0


def profile_lines(names: list[str], everything: bool = False) -> list[str]:
    """The switch x profile table; with two or more profiles, only the rows that differ."""
    from sim.kafka.profiles import PROFILES, switch_names, switch_text

    unknown = [n for n in names if n not in PROFILES]
    if unknown:
        raise UsageError(f"list profiles: unknown profile {unknown[0]!r}; "
                         f"profiles: {', '.join(PROFILES)}")
    cols = list(dict.fromkeys(names)) or list(PROFILES)
    rows = [[name] + [switch_text(name, getattr(PROFILES[c], name)) for c in cols]
            for name in switch_names()]
    if len(cols) > 1 and names and not everything:
        rows = [r for r in rows if len(set(r[1:])) > 1]
        if not rows:
            return [f"profiles {', '.join(cols)} set every switch alike"]
    return _table(["switch", *cols], rows)


def invariant_lines() -> list[str]:
    from invariants.registry import INVARIANTS

    lines = []
    for name, cls in INVARIANTS.items():
        text = " ".join((inspect.getdoc(cls) or "").split())
        lines.append(f"{name} ({cls.rule})")
        lines += textwrap.wrap(text, 96, initial_indent="    ", subsequent_indent="    ")
    return lines


def mutant_lines() -> list[str]:
    from sim.kafka.profiles import MUTANTS

    return _table(["mutant", "caught by"], [[m, inv] for m, inv in MUTANTS.items()])


def kind_lines() -> list[str]:
    from sim.kafka.vocab import ALL_KINDS

    return sorted(ALL_KINDS)


def action_lines() -> list[str]:
    """Each fault action of `[[faults]]` and `[[mix]]`: its target and its params (`*`
    required, `=` the default filled in when absent)."""
    from scenarios.targets import TARGETS
    from sim.kafka.faults import ACTIONS, OPTIONAL, REQUIRED

    rows = []
    for name, action in ACTIONS.items():
        kind = action.target
        if kind in ("none", "ignored"):
            target = {"none": "-", "ignored": "(ignored)"}[kind]
        else:
            target = kind.rstrip("?")
            if target in ("node", "broker"):
                target += " or role"  # leader:<tp>, follower:<tp>, controller
            if not TARGETS[kind][1]:
                target += " (optional)"
        params = []
        for key, (_check, default) in action.params.items():
            if default is REQUIRED:
                params.append(f"{key}*")
            elif default is OPTIONAL or callable(default):
                params.append(key)
            else:
                params.append(f"{key}={default}")
        rows.append([name, target, " ".join(params) or "-"])
    return _table(["action", "target", "params (* required)"], rows)


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in [headers, *rows]]
