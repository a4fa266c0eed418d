"""A capacity plan as a chart (``Accept: image/svg+xml``): the recommended portfolio's GPUs over the
horizon stacked by option and way of acquiring, the demand drawn over them, and every portfolio's
cost per useful GPU-hour beside it — in the house style of the insight charts (640 px, words from the
``[chart.capacity]`` catalog in the request's language)."""

from __future__ import annotations

from app.domain.capacity import schemas as s
from app.domain.insights.charts import COLOURS, SVG, WIDTH, Svg, money, nice_ticks
from app.i18n import Lang, translate

__all__ = ["SVG", "capacity_svg"]


def capacity_svg(doc: s.CapacityPlanRead, lang: Lang) -> str:
    """Stacked GPUs per month of the recommended portfolio (or the first, when none is), demand dashed."""

    def t(code: str, **params: object) -> str:
        return translate(f"chart.capacity.{code}", lang, **params)

    shown = next((p for p in doc.portfolios if p.key == doc.recommended), doc.portfolios[0] if doc.portfolios else None)
    left, right, top, plot_h = 70, 20, 58, 240
    plot_w = WIDTH - left - right
    layers = [] if shown is None else shown.segments
    rows = len(doc.portfolios)
    height = top + plot_h + 56 + 20 * max(1, (len(layers) + 1) // 2) + 22 + 18 * rows + 24
    svg = Svg(height, t("title"), lang)
    svg.text(left, 24, t("title"), font_size=16, font_weight="600")
    subtitle = t(
        "subtitle",
        portfolio=shown.name if shown else "—",
        years=f"{doc.horizon_years:g}",
        version=doc.knowledge_version,
    )
    svg.text(left, 44, subtitle, fill="#555")
    months = sum(p.months for p in doc.phases)
    stacked = [0] * len(doc.phases)
    peak = max([p.gpus for p in doc.phases] + [sum(g.gpus_by_phase[i] for g in layers) for i in range(len(doc.phases))])
    yt = nice_ticks(0, peak or 1)
    y_max = yt[-1] or 1

    def x(month: float) -> float:
        return left + month / max(months, 1) * plot_w

    def y(gpus: float) -> float:
        return top + plot_h - gpus / y_max * plot_h

    for v in yt:
        svg.add(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e3e3e3"/>')
        svg.text(left - 6, y(v) + 4, money(v), text_anchor="end", fill="#333")
    step = max(1, round(months / 8 / 6) * 6) if months > 12 else 1
    for m in range(0, months + 1, step):
        svg.text(x(m), top + plot_h + 16, str(m), text_anchor="middle", fill="#333")
    svg.text(left + plot_w / 2, top + plot_h + 36, t("x_axis"), text_anchor="middle", font_size=13)
    mid = top + plot_h / 2
    svg.text(16, mid, t("y_axis"), text_anchor="middle", font_size=13, transform=f"rotate(-90 16 {mid})")
    for n, g in enumerate(layers):
        colour = COLOURS[n % len(COLOURS)]
        upper = [stacked[i] + g.gpus_by_phase[i] for i in range(len(doc.phases))]
        points: list[tuple[float, float]] = []
        for i, p in enumerate(doc.phases):
            points += [(x(p.start_month), y(upper[i])), (x(p.start_month + p.months), y(upper[i]))]
        for i in reversed(range(len(doc.phases))):
            p = doc.phases[i]
            points += [(x(p.start_month + p.months), y(stacked[i])), (x(p.start_month), y(stacked[i]))]
        path = " ".join(f"{a:.1f},{b:.1f}" for a, b in points)
        svg.add(
            f'<polygon class="layer" data-option="{g.option}" data-acquired="{g.acquired}" points="{path}" '
            f'fill="{colour}" fill-opacity="0.75" stroke="{colour}"/>'
        )
        stacked = upper
    line: list[tuple[float, float]] = []
    for p in doc.phases:
        line += [(x(p.start_month), y(p.gpus)), (x(p.start_month + p.months), y(p.gpus))]
    svg.add(
        f'<polyline class="demand" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in line)}" fill="none" '
        'stroke="#111" stroke-width="2" stroke-dasharray="5 3"/>'
    )
    svg.add(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>')
    ly = top + plot_h + 60
    for n, g in enumerate(layers):
        lx = left + (n % 2) * (plot_w / 2)
        row_y = ly + (n // 2) * 20
        svg.add(f'<rect x="{lx:.1f}" y="{row_y - 9:.1f}" width="14" height="10" fill="{COLOURS[n % len(COLOURS)]}"/>')
        label = t("layer", option=g.name, acquired=t(f"acquired.{g.acquired}"), month=str(g.start_month))
        svg.text(lx + 20, row_y, label)
    ly += 20 * max(1, (len(layers) + 1) // 2)
    svg.add(
        f'<line x1="{left}" x2="{left + 14}" y1="{ly - 4}" y2="{ly - 4}" stroke="#111" stroke-width="2" '
        'stroke-dasharray="5 3"/>'
    )
    svg.text(left + 20, ly, t("demand"), fill="#333")
    ty = ly + 24
    for portfolio in doc.portfolios:
        cost = portfolio.cost_per_useful_gpu_hour
        figure = t("infeasible") if cost is None else t("cost", cost=money(cost.expected), currency=doc.currency)
        mark = "★ " if portfolio.key == doc.recommended else ""
        svg.text(left, ty, f"{mark}{portfolio.name}: {figure}", font_size=12, fill="#111" if mark else "#444")
        ty += 18
    svg.text(
        WIDTH - 16,
        height - 8,
        translate("chart.knowledge", lang, version=doc.knowledge_version),
        text_anchor="end",
        fill="#777",
        font_size=10,
    )
    return svg.render()
