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


# Bars lie horizontally, so a label of any length gets its own lines, never cut (10px text:
# at most 6.2px a character, wrapped to fit the label column).
CHAR_W, LINE_H, LABEL_W, VALUE_W = 6.2, 12, 128, 40


def wrap_label(label: str, width: int = int(LABEL_W / CHAR_W)) -> list[str]:
    """Lines of at most ``width`` characters, broken after '_', ':', '/', ' ' or '-' where possible."""
    pieces, piece = [], ""
    for ch in label:
        piece += ch
        if ch in "_:/ -":
            pieces.append(piece)
            piece = ""
    pieces.append(piece)
    lines = [""]
    for piece in (p for p in pieces if p):
        while len(piece) > width:  # one long word: cut it across lines
            if lines[-1]:
                lines.append("")
            lines[-1], piece = piece[:width], piece[width:]
            lines.append("")
        if len(lines[-1]) + len(piece.rstrip()) > width and lines[-1]:
            lines.append("")
        lines[-1] += piece
    return [line.strip() for line in lines if line.strip()] or [""]


def bar_plot(bars: list[tuple[str, float, float | None]], title: str, value_label: str, kind: str,
             lo: float = 0, hi: float = 100) -> str:
    """Horizontal bars (label, value, chance) on a [lo, hi] scale, the value written beside each;
    a bar at zero is a short mark, so an empty chart never looks broken."""
    left, right, top = LABEL_W + 8, W - VALUE_W, 30
    wrapped = [wrap_label(label) for label, _, _ in bars]
    heights = [max(18, LINE_H * len(lines) + 6) for lines in wrapped]
    height = top + sum(heights) + 30

    def x(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / ((hi - lo) or 1) * (right - left)

    zero = x(0 if lo < 0 < hi else lo)
    body = [f'<rect x="{left}" y="8" width="10" height="8" class="bar"/>'
            f'<text x="{left + 14}" y="16" class="tick">{escape(value_label)}</text>'
            f'<line x1="{left + 110}" x2="{left + 110}" y1="6" y2="18" class="chance"/>'
            f'<text x="{left + 116}" y="16" class="tick">chance</text>',
            f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="{top - 4}" y2="{height - 26}" class="axis"/>']
    y = top
    for (label, value, chance), lines, h in zip(bars, wrapped, heights):
        end = x(value)
        width = abs(end - zero)
        cls = "bar" if width >= 2 else "bar zero"
        body.append(f'<rect x="{min(end, zero) if width >= 2 else zero - 1:.1f}" y="{y + 3}" '
                    f'width="{max(width, 2):.1f}" height="{h - 6}" class="{cls}">'
                    f'<title>{escape(label)}: {value:.1f}</title></rect>')
        if chance is not None:
            body.append(f'<line x1="{x(chance):.1f}" x2="{x(chance):.1f}" y1="{y + 1}" y2="{y + h - 1}" '
                        f'class="chance"/>')
        first = y + h / 2 - (len(lines) - 1) * LINE_H / 2 + 3.5
        tspans = "".join(f'<tspan x="{LABEL_W}" y="{first + k * LINE_H:.1f}">{escape(line)}</tspan>'
                         for k, line in enumerate(lines))
        body.append(f'<text text-anchor="end" class="tick bar-label">{tspans}</text>'
                    f'<text x="{W - 4}" y="{y + h / 2 + 3.5:.1f}" text-anchor="end" class="tick value">'
                    f'{value:.1f}</text>')
        y += h
    for t in (lo, (lo + hi) / 2, hi):
        body.append(f'<text x="{x(t):.1f}" y="{y + 14}" text-anchor="middle" class="tick">{t:g}</text>')
    return (f'<svg class="plot" data-plot="{escape(kind)}" viewBox="0 0 {W} {height}" width="{W}" '
            f'height="{height}" role="img" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
            f'{"".join(body)}</svg>')
