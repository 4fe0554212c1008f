"""The texts a matplotlib figure draws, with their boxes (for overlap checks)."""

from __future__ import annotations


def _texts(fig):
    """(what, bbox in display units) of every text the figure draws: titles, axis labels, the
    tick labels within each axis's view, annotations (limit labels), the legends' entries."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    texts = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():
                if lo - 1e-9 <= tick.get_loc() <= hi + 1e-9 and tick.label1.get_visible():
                    texts.append(tick.label1)
    for lg in fig.legends:
        texts += list(lg.get_texts())
    return [(t.get_text(), t.get_window_extent(r)) for t in texts
            if t.get_visible() and t.get_text().strip()]


