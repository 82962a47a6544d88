"""Keeping the labels of a picture apart: no text is drawn over another.

Contract:
- `rank(text, n, alts=())` marks a text artist with its importance (0 first: call-outs, then
  message labels, fault labels, error labels, bar labels) and the other places it may move
  to (positions in its own coordinates, tried in order);
- `declutter(fig)` measures every text with the figure's renderer, first moves each movable
  text to the first of its places where it overlaps nothing, then, most important first,
  hides a text that still overlaps one already kept. A text clipped away entirely (outside
  its axes) is ignored. Afterwards `overlaps(fig)` is empty.
Texts never ranked count as rank 1 (titles, headlines): only bar labels yield to them.
"""

from __future__ import annotations

PAD_PX = 1.0
DEFAULT_RANK = 1


def rank(text, n: int, alts=()) -> None:
    """Give `text` its importance `n` and its alternative positions `alts`."""
    text._epochsim_rank = n
    text._epochsim_alts = tuple(alts)


def _rank(text) -> int:
    return getattr(text, "_epochsim_rank", DEFAULT_RANK)


def texts_of(fig) -> list:
    """Every visible, non-empty text drawn in the figure's axes or on the figure itself."""
    out = [t for ax in fig.axes for t in ax.texts] + list(fig.texts)
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def extent(text, renderer):
    """The display box of `text` (padded), cut to its axes when clipped; None if invisible."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    if hasattr(text, "update_positions"):  # an annotation: place its text first
        text.update_positions(renderer)
    bb = Text.get_window_extent(text, renderer)  # an annotation's text, not its arrow
    patch = text.get_bbox_patch()
    if patch is not None:
        text.update_bbox_position_size(renderer)
        bb = Bbox.union([bb, patch.get_window_extent(renderer)])
    bb = bb.padded(PAD_PX)
    clip = text.axes.bbox if text.get_clip_on() and text.axes is not None else None
    if clip is not None:
        cut = Bbox.intersection(bb, clip)
        if cut is None or cut.width <= 0 or cut.height <= 0:
            return None
        return cut
    return bb


def _hit(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def declutter(fig) -> None:
    """Move, then hide, texts so that no two visible texts of `fig` overlap."""
    renderer = fig.canvas.get_renderer()
    texts = sorted(texts_of(fig), key=_rank)  # stable: drawing order breaks ties
    boxes = {id(t): extent(t, renderer) for t in texts}
    for t in texts:
        alts = getattr(t, "_epochsim_alts", ())
        if not alts or boxes[id(t)] is None:
            continue
        others = [boxes[id(o)] for o in texts if o is not t and boxes[id(o)] is not None]
        home = t.get_position()
        for pos in (home, *alts):
            t.set_position(pos)
            bb = extent(t, renderer)
            if bb is not None and not any(_hit(bb, o) for o in others):
                break
        else:
            t.set_position(home)
        boxes[id(t)] = extent(t, renderer)
    kept = []
    for t in texts:
        bb = boxes[id(t)]
        if bb is None:
            continue
        if any(_hit(bb, k) for k in kept):
            t.set_visible(False)
        else:
            kept.append(bb)


def overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of visible texts of `fig` whose boxes overlap (for tests: empty after declutter)."""
    renderer = fig.canvas.get_renderer()
    placed = [(t, extent(t, renderer)) for t in texts_of(fig)]
    placed = [(t, bb) for t, bb in placed if bb is not None]
    out = []
    for i, (a, ba) in enumerate(placed):
        for b, bb in placed[i + 1:]:
            if _hit(ba.padded(-PAD_PX), bb.padded(-PAD_PX)):
                out.append((a.get_text(), b.get_text()))
    return out
