"""What a run reached that no earlier run of the search did: the signal that steers explore.

Contract:
- `SignalFold` reads one run's events in trace order and records interleavings the request
  matrix does not see: which message kind overtook which on a link (`overtook
  StopReplica<LeaderAndIsr`: a StopReplica delivered after a later-sent LeaderAndIsr), per
  partition the relation between two brokers' leader epochs when one of them changes role
  (`epochs follower older vs leader`), and two brokers leading one partition at once;
- `features(fold, signals, chains, stages)` is the run's set of coverage features: its
  request cells (each with a hit-count bucket, as coverage-guided fuzzers count edges), its
  named situations, the fault kinds that acted, its signals, and the steps of the target's
  chain (`stages`) it reached;
- `Corpus` keeps the cases whose runs reached a feature no earlier run had, counts the runs
  reaching each feature, and picks a parent to mutate, favouring cases that hold rare
  features, and most those with rare features near the target's situation (`focus_words`:
  for stop_replica_out_of_order, any feature naming StopReplica), and a case the more, the
  more steps of the target's chain (`chains.STAGES`) its run got through; `over_time`
  records, per generated run, how many request cells and features the search had reached by
  then (only the runs that raised one of the counts, and the last).
Everything is ordered by sorted names or insertion order; nothing depends on set order.
"""

from __future__ import annotations

from collections import Counter

from epochsim.explore.chains import leading
from epochsim.explore.coverage import election_outside_isr

BUCKETS = (1, 2, 4, 8, 16, 32, 128)  # hit-count classes of a cell within one run
FOCUS = 3  # how much more a feature near the target's situation weighs
CHAIN = 5  # per step of the target's chain a case reached, its weight grows by this many times


def focus_words(patterns) -> tuple:
    """Words naming the features near the situations `patterns` (coverage.RELEVANT's):
    a cell's request kind, a situation's name."""
    words = []
    for pattern in patterns:
        word = pattern[len("situation:"):] if pattern.startswith("situation:") \
            else pattern.split("/")[0]
        if word not in words:
            words.append(word)
    return tuple(words)


def bucket(n: int) -> int:
    """The largest class bound not above `n` (1, 2, 4, ... 128)."""
    return max(b for b in BUCKETS if b <= n)


class SignalFold:
    """Interleavings and epoch relations of one run; feed it every event in trace order."""

    def __init__(self):
        self.signals: set[str] = set()
        self._kind_of: dict[int, str] = {}
        self._last: dict[tuple, int] = {}  # (src, dst) -> newest mid delivered on the link
        self._state: dict[str, dict] = {}  # tp -> node -> (role, leader_epoch)
        self._isr: dict[str, tuple] = {}  # tp -> the ISR the controller last wrote

    def step(self, ev: dict) -> None:
        kind = ev["kind"]
        if kind == "send":
            self._kind_of[ev["mid"]] = ev["msg"]
        elif kind == "deliver":
            self._deliver(ev)
        elif kind == "hold":
            self.signals.add(f"held {self._kind_of.get(ev['mid'], '?')}")
        elif kind == "replica_state":
            self._replica(ev["node"], ev["tp"], ev["role"], ev["leader_epoch"])
        elif kind in ("crash", "log_deleted"):
            self._forget(ev["node"], ev.get("tp"))
        elif kind == "partition_state":
            self._partition(ev)

    def _deliver(self, ev: dict) -> None:
        link, mid = (ev["src"], ev["node"]), ev["mid"]
        newest = self._last.get(link, -1)
        if mid < newest:  # sent before a message that arrived earlier: it was overtaken
            self.signals.add(f"overtook {self._kind_of.get(mid, '?')}<"
                             f"{self._kind_of.get(newest, '?')}")
        else:
            self._last[link] = mid

    def _replica(self, node: str, tp: str, role: str, epoch: int) -> None:
        """Relate the node's new state to every other broker hosting `tp` (by name order)."""
        states = self._state.setdefault(tp, {})
        states[node] = (role, epoch)
        for other in sorted(states):
            if other == node:
                continue
            o_role, o_epoch = states[other]
            rel = "older" if epoch < o_epoch else "newer" if epoch > o_epoch else "equal"
            self.signals.add(f"epochs {role} {rel} vs {o_role}")
            if role == o_role == "leader":
                self.signals.add("two leaders of one partition")

    def _partition(self, ev: dict) -> None:
        """The controller's changes: why, and whether an election left the ISR (unclean) or
        found no leader."""
        reason = ev["reason"]
        unclean = election_outside_isr(self._isr, ev)
        if not reason.startswith("elect"):
            return
        self.signals.add(f"election {reason[len('elect:'):]}")
        if ev["leader"] < 0:
            self.signals.add("election found no leader")
        elif unclean:
            self.signals.add("unclean election")

    def _forget(self, node: str, tp: str | None) -> None:
        for name in sorted(self._state):
            if tp is None or name == tp:
                self._state[name].pop(node, None)


def chain_feature(step: str) -> str:
    """The feature naming a step of a chain (`chains.STAGES`) that a run reached."""
    return f"chain {step}"


def features(fold, signals: SignalFold, chains=None, stages: tuple = ()) -> frozenset:
    """The run's coverage features (see the module contract); `fold` is a coverage.RunFold,
    `chains` a chains.ChainFold, of which the steps among `stages` (the target's chain)
    become features `chain <step>`."""
    out = {f"cell {c} x{bucket(n)}" for c, n in fold.cells.items()}
    out |= {f"cell {c}" for c in fold.cells}
    out |= {f"situation {s}" for s in fold.situations}
    out |= {f"fault {f}" for f in fold.faults}
    out |= {f"signal {s}" for s in signals.signals}
    if chains is not None:
        out |= {chain_feature(s) for s in stages if s in chains.stages}
    return frozenset(out)


class Corpus:
    """Cases that reached something new, and how often each feature was reached."""

    def __init__(self, focus: tuple = (), stages: tuple = ()):
        self.focus = focus  # words of the features near the target's situation
        self.stages = tuple(map(chain_feature, stages))  # the target's chain, in order
        self.entries: list[tuple] = []  # (case, its features), in the order they were kept
        self.leads: list[tuple] = []  # per entry, the fault steps its run's chain led to
        self.runs = 0  # passing runs counted
        self.hits: Counter = Counter()  # feature -> runs that reached it
        self.over_time: list[tuple[int, int, int]] = []  # (run, cells reached, features reached)

    def add(self, case, feats: frozenset, run: int, cells: int, leads: tuple = ()) -> bool:
        """Count a run's features; keep `case` (with the `leads` of its run's chain,
        `chains.ChainFold.leads`) if one of them is new. Returns whether kept."""
        new = any(f not in self.hits for f in feats)
        self.hits.update(feats)
        self.runs += 1
        if new:
            self.entries.append((case, feats))
            self.leads.append(tuple(leads))
        self._point(run, cells, len(self.hits))
        return new

    def last(self, feats: frozenset, run: int, cells: int) -> None:
        """Count the failing run that ends the search on the curve only: the corpus stays as
        it was, so hypothesis replays its examples while shrinking exactly."""
        self._point(run, cells, len(self.hits) + sum(f not in self.hits for f in feats))

    def _point(self, run: int, cells: int, feats: int) -> None:
        if not self.over_time or (cells, feats) != self.over_time[-1][1:]:
            self.over_time.append((run, cells, feats))

    def finish(self, run: int) -> None:
        """Close the curve at the last generated run."""
        if self.over_time and self.over_time[-1][0] != run:
            self.over_time.append((run,) + self.over_time[-1][1:])

    def weights(self) -> list[float]:
        """Per entry, how rare its rarest feature is (1 / runs reaching it), plus FOCUS times
        how rare its rarest feature near the target is, the sum times 1 + CHAIN per step of
        the target's chain reached: the cases that hold what few runs reach are mutated most,
        those near the target's situation more, those furthest along its chain most of all."""
        return [self._weight(feats) for _case, feats in self.entries]

    def _weight(self, feats: frozenset) -> float:
        rare = max((1.0 / self.hits[f] for f in sorted(feats)), default=1.0)
        near = max((1.0 / self.hits[f] for f in sorted(feats)
                    if any(word in f for word in self.focus)), default=0.0)
        return (rare + FOCUS * near) * (1 + CHAIN * self.depth(feats))

    def depth(self, feats: frozenset) -> int:
        """How many leading steps of the target's chain a run with `feats` reached."""
        return leading(feats, self.stages)

    def pick(self, rng) -> tuple:
        """A parent (case, features, leads) drawn with `weights` by `rng` (a seeded
        random.Random)."""
        i = rng.choices(range(len(self.entries)), weights=self.weights())[0]
        return self.entries[i] + (self.leads[i],)

    def donor(self, rng):
        """Any kept case, uniformly (for splicing its episodes into another)."""
        return rng.choice(self.entries)[0] if self.entries else None
