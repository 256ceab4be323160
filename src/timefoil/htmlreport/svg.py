"""Plots as inline SVG strings (no plotting library, nothing fetched at view time)."""
from __future__ import annotations

from html import escape

W, H, PAD = 360, 260, 40


def _frame(title: str, body: str, x_label: str, y_label: str, kind: str) -> str:
    return (f'<svg class="plot" data-plot="{escape(kind)}" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
            f'role="img" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
            f'<rect x="{PAD}" y="10" width="{W - PAD - 10}" height="{H - PAD - 10}" class="axes"/>{body}'
            f'<text x="{(W + PAD) / 2}" y="{H - 6}" text-anchor="middle" class="label">{escape(x_label)}</text>'
            f'<text x="12" y="{(H - PAD) / 2}" text-anchor="middle" class="label" '
            f'transform="rotate(-90 12 {(H - PAD) / 2})">{escape(y_label)}</text></svg>')


def _x(v: float, lo: float, hi: float) -> float:
    return PAD + (v - lo) / ((hi - lo) or 1) * (W - PAD - 10)


def _y(v: float, lo: float, hi: float) -> float:
    return H - PAD - (v - lo) / ((hi - lo) or 1) * (H - PAD - 10)


def entailment_scatter(points: list[tuple[float, float, bool]], title: str) -> str:
    """e(V,C+) against e(V,C-): StrictVLE is the lower-right quadrant, ClassicVLE below the diagonal."""
    body = [f'<rect x="{_x(.5, 0, 1)}" y="{_y(.5, 0, 1)}" width="{_x(1, 0, 1) - _x(.5, 0, 1)}" '
            f'height="{_y(0, 0, 1) - _y(.5, 0, 1)}" class="quadrant"/>',
            f'<line x1="{_x(0, 0, 1)}" y1="{_y(0, 0, 1)}" x2="{_x(1, 0, 1)}" y2="{_y(1, 0, 1)}" class="diagonal"/>']
    for pos, neg, strict in points:
        body.append(f'<circle cx="{_x(pos, 0, 1):.1f}" cy="{_y(neg, 0, 1):.1f}" r="2.5" '
                    f'class="{"right" if strict else "wrong"}"/>')
    for t in (0, .5, 1):
        body.append(f'<text x="{_x(t, 0, 1)}" y="{H - PAD + 14}" text-anchor="middle" class="tick">{t:g}</text>')
        body.append(f'<text x="{PAD - 4}" y="{_y(t, 0, 1) + 4}" text-anchor="end" class="tick">{t:g}</text>')
    return _frame(title, "".join(body), "e(V, C+)", "e(V, C−)", "entailment-scatter")


def line_plot(series: dict[str, list[tuple[float, float, float, float]]], title: str, x_label: str,
              y_label: str, chance: float | None = None) -> str:
    """Lines of (x, value, ci low, ci high), e.g. a metric against the number of frames."""
    xs = sorted({p[0] for pts in series.values() for p in pts}) or [0, 1]
    lo_x, hi_x = min(xs), max(xs)
    body = []
    if chance is not None:
        body.append(f'<line x1="{PAD}" x2="{W - 10}" y1="{_y(chance, 0, 100)}" y2="{_y(chance, 0, 100)}" '
                    f'class="chance"/>')
    for k, (name, points) in enumerate(series.items()):
        points = sorted(points)
        path = " ".join(f"{'M' if i == 0 else 'L'}{_x(x, lo_x, hi_x):.1f},{_y(v, 0, 100):.1f}"
                        for i, (x, v, _, _) in enumerate(points))
        body.append(f'<path d="{path}" class="series s{k % 6}"><title>{escape(name)}</title></path>')
        for x, v, lo, hi in points:
            body.append(f'<line x1="{_x(x, lo_x, hi_x):.1f}" x2="{_x(x, lo_x, hi_x):.1f}" y1="{_y(lo, 0, 100):.1f}" '
                        f'y2="{_y(hi, 0, 100):.1f}" class="errorbar s{k % 6}"/>'
                        f'<circle cx="{_x(x, lo_x, hi_x):.1f}" cy="{_y(v, 0, 100):.1f}" r="3" class="dot s{k % 6}">'
                        f'<title>{escape(name)}: {v:.1f} at {x:g}</title></circle>')
    for x in xs:
        body.append(f'<text x="{_x(x, lo_x, hi_x)}" y="{H - PAD + 14}" text-anchor="middle" class="tick">{x:g}</text>')
    for t in (0, 50, 100):
        body.append(f'<text x="{PAD - 4}" y="{_y(t, 0, 100) + 4}" text-anchor="end" class="tick">{t}</text>')
    return _frame(title, "".join(body), x_label, y_label, "frames-line")


def bar_plot(bars: list[tuple[str, float, float | None]], title: str, y_label: str, kind: str,
             lo: float = 0, hi: float = 100) -> str:
    """Labelled bars (label, value, chance) on a [lo, hi] scale."""
    n = max(1, len(bars))
    width = (W - PAD - 10) / n
    body = []
    zero = _y(max(lo, 0) if lo < 0 < hi else lo, lo, hi)
    for i, (label, value, chance) in enumerate(bars):
        x = PAD + i * width
        top = _y(value, lo, hi)
        body.append(f'<rect x="{x + 2:.1f}" y="{min(top, zero):.1f}" width="{max(1, width - 4):.1f}" '
                    f'height="{abs(zero - top):.1f}" class="bar"><title>{escape(label)}: {value:.1f}</title></rect>')
        if chance is not None:
            body.append(f'<line x1="{x + 2:.1f}" x2="{x + width - 2:.1f}" y1="{_y(chance, lo, hi):.1f}" '
                        f'y2="{_y(chance, lo, hi):.1f}" class="chance"/>')
        body.append(f'<text x="{x + width / 2:.1f}" y="{H - PAD + 12}" text-anchor="end" class="tick" '
                    f'transform="rotate(-35 {x + width / 2:.1f} {H - PAD + 12})">{escape(label[:18])}</text>')
    for t in (lo, (lo + hi) / 2, hi):
        body.append(f'<text x="{PAD - 4}" y="{_y(t, lo, hi) + 4}" text-anchor="end" class="tick">{t:g}</text>')
    return _frame(title, "".join(body), "", y_label, kind)
