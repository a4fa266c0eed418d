"""A capacity plan as a chart (``Accept: image/svg+xml``): the recommended portfolio's GPUs over the
horizon stacked by option and way of acquiring, the demand drawn over them, and every portfolio's
cost per useful GPU-hour beside it — in the house style of the insight charts (640 px, words from the
``[chart.capacity]`` catalog in the request's language)."""

from __future__ import annotations

from collections.abc import Sequence

from app.domain.capacity import schemas as s
from app.domain.insights.charts import COLOURS, SVG, WIDTH, Plot, Svg, Words, money, nice_ticks, words
from app.i18n import Lang

__all__ = ["SVG", "capacity_svg"]


def capacity_svg(doc: s.CapacityPlanRead, lang: Lang) -> str:
    """Stacked GPUs per month of the recommended portfolio (or the first, when none is), demand dashed."""
    t = words("chart.capacity", lang)
    shown = next((p for p in doc.portfolios if p.key == doc.recommended), doc.portfolios[0] if doc.portfolios else None)
    layers = [] if shown is None else shown.segments
    legend_rows = max(1, (len(layers) + 1) // 2)
    months = sum(p.months for p in doc.phases)
    yt = nice_ticks(0, _peak(doc.phases, layers) or 1)
    plot = Plot(left=70, top=58, width=WIDTH - 70 - 20, height=240, x_max=max(months, 1), y_max=yt[-1] or 1)
    svg = Svg(plot.bottom + 56 + 20 * legend_rows + 22 + 18 * len(doc.portfolios) + 24, t("title"), lang)
    subtitle = t(
        "subtitle",
        portfolio=shown.name if shown else "—",
        years=f"{doc.horizon_years:g}",
        version=doc.knowledge_version,
    )
    svg.heading(plot.left, t("title"), subtitle)
    plot.y_grid(svg, yt)
    _month_labels(svg, plot, months)
    plot.titles(svg, t("x_axis"), t("y_axis"), y_at=16)
    _layers(svg, plot, doc.phases, layers)
    _demand(svg, plot, doc.phases)
    plot.frame(svg)
    ly = _layers_legend(svg, plot, layers, t) + 20 * legend_rows
    _demand_legend(svg, plot, ly, t("demand"))
    _portfolio_costs(svg, plot, doc, ly + 24, t)
    svg.knowledge(doc.knowledge_version)
    return svg.render()


def _peak(phases: Sequence[s.PhaseRead], layers: Sequence[s.SegmentRead]) -> int:
    """The most GPUs the chart shows: the demand's peak, or the layers' stacked in a phase."""
    stacked = [sum(g.gpus_by_phase[i] for g in layers) for i in range(len(phases))]
    return max([p.gpus for p in phases] + stacked)


def _month_labels(svg: Svg, plot: Plot, months: int) -> None:
    """The months under the plot: every month over a year or less, else about eight labels, six months apart
    or a multiple of six."""
    step = max(1, round(months / 8 / 6) * 6) if months > 12 else 1
    for m in range(0, months + 1, step):
        svg.text(plot.x(m), plot.bottom + 16, str(m), text_anchor="middle", fill="#333")


def _layers(svg: Svg, plot: Plot, phases: Sequence[s.PhaseRead], layers: Sequence[s.SegmentRead]) -> None:
    """Each segment's GPUs per phase as a band stacked on those drawn before it."""
    stacked = [0] * len(phases)
    for n, g in enumerate(layers):
        colour = COLOURS[n % len(COLOURS)]
        upper = [stacked[i] + g.gpus_by_phase[i] for i in range(len(phases))]
        points: list[tuple[float, float]] = []
        for i, p in enumerate(phases):
            points += [(plot.x(p.start_month), plot.y(upper[i])), (plot.x(p.start_month + p.months), plot.y(upper[i]))]
        for i in reversed(range(len(phases))):
            p = phases[i]
            points += [
                (plot.x(p.start_month + p.months), plot.y(stacked[i])),
                (plot.x(p.start_month), plot.y(stacked[i])),
            ]
        path = " ".join(f"{a:.1f},{b:.1f}" for a, b in points)
        svg.add(
            f'<polygon class="layer" data-option="{g.option}" data-acquired="{g.acquired}" points="{path}" '
            f'fill="{colour}" fill-opacity="0.75" stroke="{colour}"/>'
        )
        stacked = upper


def _demand(svg: Svg, plot: Plot, phases: Sequence[s.PhaseRead]) -> None:
    """The demand's GPUs per phase, a dashed step line over the layers."""
    line: list[tuple[float, float]] = []
    for p in phases:
        line += [(plot.x(p.start_month), plot.y(p.gpus)), (plot.x(p.start_month + p.months), plot.y(p.gpus))]
    svg.add(
        f'<polyline class="demand" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in line)}" fill="none" '
        'stroke="#111" stroke-width="2" stroke-dasharray="5 3"/>'
    )


def _layers_legend(svg: Svg, plot: Plot, layers: Sequence[s.SegmentRead], t: Words) -> int:
    """Each layer's colour and words (its option, how it is acquired, from which month), two a row under
    the plot; the baseline of its first row."""
    ly = plot.bottom + 60
    for n, g in enumerate(layers):
        lx = plot.left + (n % 2) * (plot.width / 2)
        row_y = ly + (n // 2) * 20
        svg.add(f'<rect x="{lx:.1f}" y="{row_y - 9:.1f}" width="14" height="10" fill="{COLOURS[n % len(COLOURS)]}"/>')
        label = t("layer", option=g.name, acquired=t(f"acquired.{g.acquired}"), month=str(g.start_month))
        svg.text(lx + 20, row_y, label)
    return ly


def _demand_legend(svg: Svg, plot: Plot, ly: int, label: str) -> None:
    """The demand's dashed line and its words, on the row at ``ly``."""
    svg.add(
        f'<line x1="{plot.left}" x2="{plot.left + 14}" y1="{ly - 4}" y2="{ly - 4}" stroke="#111" stroke-width="2" '
        'stroke-dasharray="5 3"/>'
    )
    svg.text(plot.left + 20, ly, label, fill="#333")


def _portfolio_costs(svg: Svg, plot: Plot, doc: s.CapacityPlanRead, ty: int, t: Words) -> None:
    """Every portfolio's cost per useful GPU-hour (or that it is infeasible), a row each from ``ty`` down,
    the recommended one starred."""
    for portfolio in doc.portfolios:
        cost = portfolio.cost_per_useful_gpu_hour
        figure = t("infeasible") if cost is None else t("cost", cost=money(cost.expected), currency=doc.currency)
        mark = "★ " if portfolio.key == doc.recommended else ""
        svg.text(plot.left, ty, f"{mark}{portfolio.name}: {figure}", font_size=12, fill="#111" if mark else "#444")
        ty += 18
