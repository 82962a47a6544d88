"""The fault actions of a scenario, one home each: the catalogue every layer reads.

Contract: `ACTIONS` maps each action name to its `FaultAction` (`sim.kafka.faults.action`),
in the order `epochsim list actions` shows them. The family modules hold the actions:
`nodes` (crash, restart, controlled_shutdown, power_loss, log_dir_failure), `rolling`
(rolling_restart), `cuts` (isolate,
partition, block, heal, reset_connections), `rules` (rule, clear_rules), `admin` (the
controller's actions and retention), `versions` (upgrade, bump_ibp) and `kraft`
(cut_from_quorum, split_quorum, slow_metadata, stop_controller, add_voter, remove_voter). The tables below are
derived from the actions, never written by hand:
- `DEFAULT_UNDO`: action -> what undoes a mix's step after its duration (the loader);
- `UNDO_ACTIONS`: the undos mixes default to (restart, heal); the nemesis aims one that
  names a role at the node its fault hit;
- `UNDO_OF`: action -> the undo of `UNDO_ACTIONS` that ends its step (for overlapping
  faults of one role, each undo takes the oldest node still open);
- `OPENERS`: actions some undo ends (the shrinker keeps each with its undo);
- `CUT_ACTIONS`: the cuts a named `heal` ends (mixes and explore name them);
- `EPISODES`: explore fault kind -> draw function of a single action.
This package imports no actor: the loader, explore and reports read it; the cluster applies it.
"""

from __future__ import annotations

from sim.core.faults import LAPSE
from sim.kafka.faults import admin, cuts, kraft, nodes, rolling, rules, versions
from sim.kafka.faults.action import OPTIONAL, REQUIRED, FaultAction
from sim.kafka.faults.cuts import CUT_ACTIONS
from sim.kafka.faults.nodes import CONTROLLED_SHUTDOWN_US

_ALL = {**nodes.ACTIONS, **rolling.ACTIONS, **cuts.ACTIONS, **rules.ACTIONS, **admin.ACTIONS, **versions.ACTIONS,
        **kraft.ACTIONS}
_ORDER = ("crash", "restart", "isolate", "controlled_shutdown", "rolling_restart", "power_loss",
          "log_dir_failure", "partition",
          "block", "heal", "reset_connections", "rule", "clear_rules", "move_leader",
          "move_all_leaders", "preferred_election", "elect_leaders", "reassign", "cancel_reassignment",
          "delete_topic", "create_topic", "retention", "upgrade_format", "upgrade", "bump_ibp", "cut_from_quorum", "split_quorum",
          "slow_metadata", "stop_controller", "add_voter", "remove_voter")
assert sorted(_ORDER) == sorted(_ALL), "every fault action is listed once in _ORDER"
ACTIONS: dict[str, FaultAction] = {name: _ALL[name] for name in _ORDER}

# Recovery actions: the only ones allowed in the quiet settle window at the end of a run,
# and the only ones a mix may name as its undo (undo steps may land in that window).
SETTLE_SAFE = ("heal", "clear_rules", "restart")
DEFAULT_UNDO = {name: a.default_undo for name, a in ACTIONS.items() if a.default_undo}
# the undos a mix's steps default to; aimed at a role, one acts on the node its fault hit
UNDO_ACTIONS = frozenset(DEFAULT_UNDO.values()) - {LAPSE}
# which undo ends an action's step (the nemesis pairs a role's overlapping faults with them)
UNDO_OF = {name: undo for name, undo in DEFAULT_UNDO.items() if undo != LAPSE}
OPENERS = frozenset(opener for a in ACTIONS.values() for opener in a.undoes)
EPISODES = {kind: draw for a in ACTIONS.values() for kind, draw in a.draws.items()}


def handlers(cluster) -> dict:
    """Each action's apply bound to `cluster`, in the shape `sim.core.faults.Nemesis` takes."""
    return {name: _bind(a.apply, cluster) for name, a in ACTIONS.items()}


def _bind(apply, cluster):
    return lambda target, params: apply(cluster, target, params)


__all__ = ["ACTIONS", "CONTROLLED_SHUTDOWN_US", "CUT_ACTIONS", "DEFAULT_UNDO", "EPISODES",
           "OPENERS", "OPTIONAL", "REQUIRED", "SETTLE_SAFE", "UNDO_ACTIONS", "UNDO_OF",
           "FaultAction",
           "handlers"]
