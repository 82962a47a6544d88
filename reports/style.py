"""Drawing conventions shared by the pictures: headless figures, colours, deterministic files.

Contract:
- `new_figure(w, h)` returns a matplotlib `Figure` bound to no GUI and no pyplot state (so
  drawing works headless and leaks nothing between calls); matplotlib is imported here, on
  first use, with an install hint if it is missing;
- `save(fig, path)` writes PNG or SVG by the extension; the same figure gives the same bytes
  every time (fixed SVG id salt, text kept as text, no date or software stamp);
- `epoch_color(epoch)` is the one colour scale for leader epochs in every picture.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager

from sim.core.files import atomic_write

FORMATS = (".png", ".svg")

# Deterministic output: SVG ids are salted hashes of the content (fixed salt, not random);
# text stays <text> (no font subsetting ids); no creation date.
RC = {
    "svg.hashsalt": "epochsim",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "axes.titlesize": 9,
    "hatch.linewidth": 0.8,
    "figure.dpi": 100,
}

# Tableau 10 without its red (violations), grey (offline) and pink (too close to red):
# leader epochs cycle through these, and the epoch number is written on every bar wide enough.
EPOCH_COLORS = ["#4e79a7", "#59a14f", "#edc948", "#b07aa1", "#76b7b2", "#f28e2b", "#9c755f"]
VIOLATION = "#d62728"
BEHIND = "#c44e52"      # hatching: a view older than the controller's truth
OFFLINE = "#9e9e9e"
STOPPED = "#5f5f5f"
DELETED = "#1f1f1f"
FAULT = "#fdd49e"
ACK = "#2ca02c"
RETRY = "#ff7f0e"
FAILED = "#d62728"


class ReportError(ValueError):
    """A request a report cannot satisfy (unknown partition, bad window, bad output name)."""


def read_json(path: str):
    """The JSON document in `path` (a suite.json or sweep.json epochsim wrote), or a
    ReportError naming the file: unreadable, not UTF-8, not JSON, or nested too deeply."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except OSError as exc:
        raise ReportError(f"{path}: cannot read it ({exc.strerror or exc}); check the path") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError too
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(":")[0]
        raise ReportError(f"{path}: not a JSON file epochsim wrote ({why}); was it edited? "
                          "write it again with the command that made it") from None


def matplotlib():
    """The matplotlib package, or a ReportError saying how to install it."""
    try:
        import matplotlib as mpl
    except ImportError:
        raise ReportError("matplotlib is not installed; install it with "
                          "`pip install matplotlib` to draw pictures") from None
    return mpl


@contextmanager
def drawing():
    """Deterministic rc settings for building and saving one figure."""
    mpl = matplotlib()
    with mpl.rc_context(RC):
        yield mpl


def new_figure(width_in: float, height_in: float):
    """A Figure attached to the Agg canvas: no pyplot, no display needed."""
    matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in))
    FigureCanvasAgg(fig)
    return fig


def check_output(path: str) -> str:
    """The lower-case extension of `path`, which must be .png or .svg (and `replaceable`)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise ReportError(f"{path}: output must end in .png or .svg")
    replaceable(path)
    return ext


# What epochsim writes into the pages and pictures it makes (`save`, html.page), near the start
# of the file, so that a command run again may replace them, and nothing else.
STAMPS = (b'<meta name="generator" content="epochsim">', b"<dc:title>epochsim</dc:title>",
          b"tEXtSoftware\x00epochsim")


def written_by_epochsim(path: str) -> bool:
    """Does the file at `path` carry epochsim's creator stamp in its first 4 KiB?"""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return any(stamp in head for stamp in STAMPS)


def replaceable(path: str) -> str:
    """`path`, if a page or picture may be written there: not a link (`not_a_link`), and
    either new or a regular file epochsim wrote (its stamp). A file of the user's that merely
    has epochsim's name (report.html, timeline.png) is never replaced (raises ReportError)."""
    not_a_link(path)
    if os.path.lexists(path) and not (os.path.isfile(path) and written_by_epochsim(path)):
        raise ReportError(f"{path}: exists and is not a file epochsim wrote (it lacks "
                          "epochsim's stamp); remove it or choose another output")
    return path


def not_a_link(path: str) -> str:
    """`path`, unless it is a symbolic link: writing through one would change a file elsewhere,
    perhaps the user's own (raises ReportError naming it)."""
    if os.path.islink(path):
        raise ReportError(f"{path}: is a symbolic link, and epochsim does not write through "
                          "links; remove it or choose another output")
    return path


def output_folder(path: str) -> str:
    """Make the folder `path` goes into, before anything is drawn, so that a folder that
    cannot be made is said at once, not after the page or picture is built; returns `path`."""
    parent = os.path.dirname(path)
    try:
        if parent:
            os.makedirs(parent, exist_ok=True)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ReportError(f"{path}: cannot make its folder {parent} ({why}); choose another "
                          "output") from None
    return path


def save(fig, path: str) -> str:
    """Write `fig` to `path` (PNG or SVG by extension) with no timestamps; returns the path."""
    ext = check_output(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    # The creator stamp (not matplotlib's version) lets `-o` replace a picture epochsim drew
    # (epochsim.common.written_by_epochsim) and keeps the bytes independent of matplotlib.
    with atomic_write(path, "wb") as fh:
        if ext == ".svg":
            fig.savefig(fh, format="svg", metadata={"Date": None, "Creator": "epochsim"})
        else:
            fig.savefig(fh, format="png", metadata={"Software": "epochsim"})
    return path


def epoch_color(epoch: int | None) -> str:
    if epoch is None or epoch < 0:
        return OFFLINE
    return EPOCH_COLORS[epoch % len(EPOCH_COLORS)]


def lighten(color: str, amount: float = 0.5) -> str:
    """`color` mixed with white; followers wear their epoch's colour, lightened."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    mix = [round(c + (255 - c) * amount) for c in (r, g, b)]
    return "#{:02x}{:02x}{:02x}".format(*mix)


def seconds(t_us: int) -> str:
    """`t_us` as seconds with millisecond precision, finer when needed: 4.002s, 4.0015s."""
    if t_us % 1000 == 0:
        return f"{t_us / 1e6:.3f}s"
    return f"{t_us / 1e6:.6f}".rstrip("0") + "s"
