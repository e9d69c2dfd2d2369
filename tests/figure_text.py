"""What a rendered figure's text looks like to a reader: overlapping, off the canvas, too small.

Collects every piece of text a matplotlib figure draws (titles, axis labels, the tick labels of
the ticks actually drawn, annotations, legends, in subfigures too), measures each as the
rotated rectangle it occupies, and reports pairs that overlap and text that leaves the canvas.
Used by the report tests on every figure, rendered from the fixtures and from the committed
results.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["drawn_texts", "text_problems"]


def _axes_texts(ax: Any) -> list[Any]:
    out = [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
    out += [ax.xaxis.get_offset_text(), ax.yaxis.get_offset_text(), *ax.texts]
    for axis in (ax.xaxis, ax.yaxis):
        for tick in axis._update_ticks():  # the ticks inside the view: the ones drawn
            out += [lab for lab in (tick.label1, tick.label2) if lab.get_visible()]
    if ax.get_legend() is not None:
        out += list(ax.get_legend().get_texts())
    return out


def drawn_texts(fig: Any) -> list[Any]:
    """Every visible, non-empty Text the figure (and its subfigures) draws."""
    out = list(fig.texts)
    for attr in ("_suptitle", "_supxlabel", "_supylabel"):
        if getattr(fig, attr, None) is not None:
            out.append(getattr(fig, attr))
    for leg in fig.legends:
        out += list(leg.get_texts())
    for ax in fig._localaxes:
        if ax.get_visible():
            out += _axes_texts(ax)
    for sub in fig.subfigs:
        out += drawn_texts(sub)
    seen: set[int] = set()
    return [
        t
        for t in out
        if t.get_visible() and t.get_text().strip() and not (id(t) in seen or seen.add(id(t)))
    ]


def _corners(t: Any, renderer: Any) -> list[tuple[float, float]]:
    """The rotated rectangle a text occupies, as 4 display points."""
    bb = t.get_window_extent(renderer)
    angle = t.get_rotation()
    if angle % 180 == 0:
        return [(bb.x0, bb.y0), (bb.x1, bb.y0), (bb.x1, bb.y1), (bb.x0, bb.y1)]
    t.set_rotation(0)
    flat = t.get_window_extent(renderer)
    t.set_rotation(angle)
    w, h = flat.width / 2, flat.height / 2
    cx, cy = (bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2
    ca, sa = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    return [
        (cx + dx * ca - dy * sa, cy + dx * sa + dy * ca)
        for dx, dy in ((-w, -h), (w, -h), (w, h), (-w, h))
    ]


def _apart(p: list[tuple[float, float]], q: list[tuple[float, float]], tol: float) -> bool:
    """Separating-axis test of two convex quadrilaterals."""
    for poly in (p, q):
        for i in range(4):
            (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % 4]
            nx, ny = y2 - y1, x1 - x2
            norm = math.hypot(nx, ny) or 1.0
            pa = [(x * nx + y * ny) / norm for x, y in p]
            qa = [(x * nx + y * ny) / norm for x, y in q]
            if max(pa) <= min(qa) + tol or max(qa) <= min(pa) + tol:
                return True
    return False


def text_problems(fig: Any, tol: float = 0.5) -> list[str]:
    """Overlapping pairs and text off the canvas, one line each (empty: readable)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    boxes = [(t, _corners(t, renderer)) for t in drawn_texts(fig)]
    out = []
    for t, c in boxes:
        xs, ys = [x for x, _ in c], [y for _, y in c]
        if min(xs) < -tol or min(ys) < -tol or max(xs) > width + tol or max(ys) > height + tol:
            out.append(f"off the canvas: {t.get_text()!r}")
    for i, (a, ca) in enumerate(boxes):
        for b, cb in boxes[i + 1 :]:
            if not _apart(ca, cb, tol):
                out.append(f"overlap: {a.get_text()!r} / {b.get_text()!r}")
    return out
