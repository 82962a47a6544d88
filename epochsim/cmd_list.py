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
  epochsim list defaults                 the options whose default depends on the release
  epochsim list defaults 2.4 2.5         the same for these profiles only
  epochsim list invariants               each invariant, its rule type and what it checks
  epochsim list mutants                  each planted bug and the invariant that must catch it
  epochsim list kinds                    every trace event kind
  epochsim list actions                  each fault action, its target and its params
                                         (docs/scenarios.md describes what each one does)"""

WHAT = ("profiles", "defaults", "invariants", "mutants", "kinds", "actions")


def register(subs) -> None:
    p = subs.add_parser("list", help="list profiles, invariants, mutants, event kinds or fault "
                        "actions",
                        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=WHAT, metavar="WHAT", help=" | ".join(WHAT))
    p.add_argument("names", nargs="*", default=[], metavar="PROFILE",
                   help="with `profiles` or `defaults`: the profiles to show (default: all)")
    p.add_argument("--all", action="store_true",
                   help="with two or more profiles: also the switches on which they agree")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.names and args.what not in ("profiles", "defaults"):
        raise UsageError(f"list {args.what}: takes no names (only `list profiles` and "
                         "`list defaults` do)")
    lines = {"profiles": lambda: profile_lines(args.names, args.all),
             "defaults": lambda: default_lines(args.names),
             "invariants": invariant_lines, "mutants": mutant_lines,
             "kinds": kind_lines, "actions": action_lines}[args.what]()
    print("\n".join(lines))
    return 0


def _profiles(what: str, names: list[str]) -> list[str]:
    """The profiles `names` asks for, in the order given (all when empty); UsageError for an
    unknown one."""
    from sim.kafka.profiles import PROFILES

    unknown = [n for n in names if n not in PROFILES]
    if unknown:
        raise UsageError(f"list {what}: unknown profile {unknown[0]!r}; "
                         f"profiles: {', '.join(PROFILES)}")
    return list(dict.fromkeys(names)) or list(PROFILES)


def profile_lines(names: list[str], everything: bool = False) -> list[str]:
    """The switch x profile table; with two or more profiles, only the rows that differ."""
    from sim.kafka.profiles import PROFILES, switch_names, switch_text

    cols = _profiles("profiles", names)
    rows = [[name] + [switch_text(name, getattr(PROFILES[c], name)) for c in cols]
            for name in switch_names()]
    if len(cols) > 1 and names and not everything:
        rows = [r for r in rows if len(set(r[1:])) > 1]
        if not rows:
            return [f"profiles {', '.join(cols)} set every switch alike"]
    return _table(["switch", *cols], rows)


def default_lines(names: list[str]) -> list[str]:
    """The option x profile table of the defaults that depend on the release (what a scenario
    gets for an option it leaves out; docs/scenarios.md, "Defaults by release")."""
    from scenarios.toml_text import value_text
    from sim.kafka.defaults import KRAFT_DEFAULTS, RELEASE_DEFAULTS, release_default
    from sim.kafka.modes import KRAFT, modes

    cols = _profiles("defaults", names)
    rows = [[f"{section}.{key}"] + [value_text(release_default(section, key, c)) for c in cols]
            for section, key in RELEASE_DEFAULTS]
    # KRaft's own defaults, on the profiles that have a KRaft mode
    rows += [[f"{section}.{key} (KRaft)"]
             + [value_text(value) if KRAFT in modes(c)[1] else "-" for c in cols]
             for (section, key), value in KRAFT_DEFAULTS.items()]
    return _table(["option", *cols], rows)


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
