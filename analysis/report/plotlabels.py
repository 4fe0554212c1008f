"""Labels placed where they touch no other text: each label tries a few offsets from its point
and takes the first whose box (measured by matplotlib's renderer) stays inside its axes and
off every text already there (titles, tick labels, ceiling labels, labels placed before it)."""

from __future__ import annotations

from typing import Any

# offsets in points from the point: above, below, above or below to either side (a point at
# the panel's edge), further out, then beside it
OFFSETS = ((0, 7), (0, -9), (-4, 8), (-4, -10), (4, 8), (4, -10), (0, 17), (0, -19), (-10, 0),
           (10, 0), (0, 27), (0, -29))


def _boxes(fig, r) -> list:
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for t in (ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts):
            if t.get_visible() and t.get_text().strip():
                out.append(t.get_window_extent(r))
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():
                if lo - 1e-9 <= tick.get_loc() <= hi + 1e-9 and tick.label1.get_visible():
                    out.append(tick.label1.get_window_extent(r))
    return out


def place(fig, labels: list[dict[str, Any]]) -> list:
    """Annotate each of ``labels`` ({ax, xy, text, color, bg}) at the first free offset; a label
    with no free place is left out (the colour of its point still says it). Returns the
    annotations placed."""
    fig.canvas.draw()  # the layout engine settles the axes before boxes are measured
    r = fig.canvas.get_renderer()
    taken = _boxes(fig, r)
    placed = []
    for lab in labels:
        ax = lab["ax"]
        inside = ax.get_window_extent(r)
        for dx, dy in OFFSETS:
            a = ax.annotate(lab["text"], lab["xy"], xytext=(dx, dy), textcoords="offset points",
                            ha="center" if dx == 0 else ("left" if dx > 0 else "right"),
                            va="bottom" if dy > 0 else ("top" if dy < 0 else "center"),
                            fontsize=lab.get("size", 6.5), color=lab.get("color", "black"),
                            bbox={"boxstyle": "round,pad=0.15", "fc": lab.get("bg", "white"),
                                  "ec": "none", "alpha": 0.85}, zorder=6)
            b = a.get_window_extent(r).expanded(1.06, 1.1)
            ok = (b.x0 >= inside.x0 and b.x1 <= inside.x1 and b.y0 >= inside.y0 and b.y1 <= inside.y1
                  and not any(b.overlaps(t) for t in taken))
            if ok:
                taken.append(b)
                placed.append(a)
                break
            a.remove()
    return placed
