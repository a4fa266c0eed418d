"""A training plan as a chart (``Accept: image/svg+xml``): the cost per million trained tokens against the
calendar days to finish, one mark per GPU model × option that has a plan — the expected figures as a dot,
their low–high ranges as bars — the feasible ones filled and labelled "GPU · option", the infeasible ones
hollow and grey, the recommended one highlighted, and the deadline (``finish_within_days``) as a vertical
line. A single-GPU-model plan is drawn the same way, a mark per option, its cost per million tokens being
the item's total cost × 10⁶ ÷ the run's tokens (docs/training-plans.md). In the house style of the insight
charts: 640 px wide, every word from the ``[chart.training]`` catalog in the request's language."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from app.domain.insights.charts import COLOURS, SVG, WIDTH, Plot, Svg, Words, money, nice_ticks, words
from app.domain.planning.schemas import TrainingCandidatesRead, TrainingPlanRead
from app.domain.shared.schemas import RangeRead
from app.i18n import Lang

__all__ = ["SVG", "candidates_svg", "plan_svg", "short_gpu_name"]

#: a feasible mark, the recommended one, an infeasible one (hollow)
FEASIBLE, RECOMMENDED, INFEASIBLE = COLOURS[0], COLOURS[1], "#9a9a9a"
#: the key under the plot lists at most this many feasible marks (the answer lists them all)
MAX_KEY_ROWS = 10
#: a label in the plot is cut to this many characters (its mark's tooltip has it whole)
MAX_LABEL = 34
LABEL_SIZE = 11
#: a label's line: its letters and the room between two labels stacked
LINE = LABEL_SIZE + 3
#: where the plot is drawn: from the left edge and the top, its height; room on the right
LEFT, TOP, PLOT_HEIGHT, RIGHT = 78, 58, 280, 20
#: a box a label or a mark takes: left, top, right, bottom
Box = tuple[float, float, float, float]
#: a label stays readable over the range bars it crosses: a white outline under its letters
HALO = {"stroke": "#ffffff", "stroke_width": "3", "paint_order": "stroke", "stroke_linejoin": "round"}


@dataclass(frozen=True, slots=True)
class Mark:
    """One candidate as the chart draws it."""

    gpu_model: str
    option: str
    label: str
    days: RangeRead
    cost: RangeRead
    feasible: bool
    recommended: bool


def short_gpu_name(name: str) -> str:
    """A GPU model's name without its parenthesised detail: "B200 SXM (HGX/DGX B200)" → "B200 SXM"."""
    return name.split(" (", 1)[0].strip() or name


def _count(v: float) -> str:
    """A large count as a power of ten: 7e10 → "7 × 10¹⁰" (the same in every language)."""
    if v <= 0:
        return "0"
    exponent = math.floor(math.log10(v))
    mantissa = v / 10**exponent
    if mantissa >= 9.995:  # 9.999e10 rounds to 10 × 10¹⁰
        mantissa, exponent = 1.0, exponent + 1
    power = "10" + str(exponent).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    shown = f"{mantissa:.2f}".rstrip("0").rstrip(".")
    return power if shown == "1" else f"{shown} × {power}"


def candidates_svg(doc: TrainingCandidatesRead, lang: Lang) -> str:
    """Every candidate with a plan: cost per million tokens against calendar days."""
    t = words("chart.training", lang)
    gpus = {w.gpu_model: short_gpu_name(w.name) for w in doc.work}
    choice = (doc.recommended.gpu_model, doc.recommended.option) if doc.recommended else None
    marks = [
        Mark(
            gpu_model=c.gpu_model,
            option=c.option,
            label=t("label", gpu=gpus.get(c.gpu_model, c.gpu_model), option=c.name),
            days=c.calendar_days,
            cost=c.cost_per_million_tokens,
            feasible=c.feasible,
            recommended=(c.gpu_model, c.option) == choice,
        )
        for c in doc.candidates
        if c.calendar_days is not None and c.cost_per_million_tokens is not None
    ]
    subtitle = t(
        "subtitle",
        parameters=_count(doc.parameters),
        tokens=_count(doc.tokens),
        gpus=f"{doc.gpus:,}",
        precision=doc.precision.upper(),
    )
    return _chart(
        marks,
        unplanned=len(doc.candidates) - len(marks),
        subtitle=subtitle,
        currency=doc.currency,
        deadline=doc.finish_within_days,
        version=doc.knowledge_version,
        lang=lang,
    )


def plan_svg(doc: TrainingPlanRead, lang: Lang, *, parameters: float, tokens: float, gpu: str, precision: str) -> str:
    """A single GPU model's plan: a mark per option with a plan, its cost per million tokens the item's
    total cost × 10⁶ ÷ ``tokens`` (the run's); ``gpu``: the GPU model's name."""
    t = words("chart.training", lang)
    name = short_gpu_name(gpu)
    per_million = 1e6 / tokens
    marks = [
        Mark(
            gpu_model=doc.gpu_model,
            option=i.option,
            label=t("label", gpu=name, option=i.name),
            days=i.calendar_days,
            cost=RangeRead(
                low=i.total_cost.low * per_million,
                expected=i.total_cost.expected * per_million,
                high=i.total_cost.high * per_million,
            ),
            feasible=i.feasible is not False,
            recommended=False,
        )
        for i in doc.items
        if i.calendar_days is not None and i.total_cost is not None
    ]
    subtitle = t(
        "subtitle_model",
        gpu=name,
        parameters=_count(parameters),
        tokens=_count(tokens),
        gpus=f"{doc.gpus:,}",
        precision=precision.upper(),
    )
    return _chart(
        marks,
        unplanned=len(doc.items) - len(marks),
        subtitle=subtitle,
        currency=doc.currency,
        deadline=None,
        version=doc.knowledge_version,
        lang=lang,
    )


def _top(ranges: Sequence[RangeRead], at_least: float = 0.0) -> float:
    """The axis' end: every expected figure inside (5 % to spare), the ranges too unless one reaches beyond
    1.5 × the largest expected figure (it is cut there rather than squeezing the rest)."""
    expected = max([r.expected for r in ranges] + [at_least, 1e-9])
    high = max(r.high for r in ranges) if ranges else expected
    return max(expected * 1.05, min(high, expected * 1.5), at_least * 1.05)


def _price(v: float) -> str:
    """A cost per million tokens as the key states it: two decimals (as the answer's sentences), or a large
    one as ``money`` writes it."""
    return f"{v:,.2f}" if abs(v) < 100 else money(v)


def _width(text: str, size: float = LABEL_SIZE) -> float:
    """About how wide ``text`` is drawn: a CJK character a full em, anything else about 0.55 em."""
    return sum(size if ord(ch) >= 0x2E80 else size * 0.6 for ch in text)


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def _chart(
    marks: Sequence[Mark],
    *,
    unplanned: int,
    subtitle: str,
    currency: str,
    deadline: float | None,
    version: str,
    lang: Lang,
) -> str:
    """The chart of ``marks``: the plot with its axes and the deadline, the marks, their labels, then the
    legend and the key under it; ``unplanned``: how many candidates have no plan (not drawn)."""
    t = words("chart.training", lang)
    feasible = sorted((m for m in marks if m.feasible), key=lambda m: (not m.recommended, m.cost.expected))
    infeasible = [m for m in marks if not m.feasible]
    keyed = feasible[:MAX_KEY_ROWS]
    lines = len(keyed) + (len(feasible) > len(keyed)) + bool(infeasible) + bool(unplanned) + (not marks)
    svg = Svg(TOP + PLOT_HEIGHT + 78 + 18 * lines + 24, t("title"), lang)
    svg.heading(LEFT, t("title"), subtitle)
    xt = nice_ticks(0, _top([m.days for m in marks], deadline or 0.0))
    yt = nice_ticks(0, _top([m.cost for m in marks]))
    plot = Plot(LEFT, TOP, WIDTH - LEFT - RIGHT, PLOT_HEIGHT, x_max=xt[-1] or 1.0, y_max=yt[-1] or 1.0)
    plot.clip(svg)
    plot.y_grid(svg, yt)
    plot.x_grid(svg, xt)
    plot.frame(svg)
    plot.titles(svg, t("x_axis"), t("y_axis", currency=currency))
    if deadline is not None:
        _deadline(svg, plot, deadline, t("deadline", days=money(deadline)))
    if not marks:
        svg.text(plot.centre, plot.middle, t("empty"), text_anchor="middle", fill="#555")
    # the infeasible marks first (under the others), the recommended last (on top)
    _draw_marks(svg, plot, [*infeasible, *reversed(feasible)], currency, t)
    _labels(svg, plot, marks, [*feasible, *infeasible])
    ly = plot.bottom + 60
    _legend(svg, plot, marks, ly, t)
    ky = _key(svg, keyed, ly + 22, currency, t)
    _not_shown(
        svg, ky, t, more_feasible=len(feasible) - len(keyed), infeasible_count=len(infeasible), unplanned=unplanned
    )
    svg.knowledge(version)
    return svg.render()


def _deadline(svg: Svg, plot: Plot, deadline: float, label: str) -> None:
    """The deadline: a dashed red vertical line, its label at its top on the side with room for them."""
    at = plot.x(deadline)
    svg.add(
        f'<line class="deadline" x1="{at:.1f}" x2="{at:.1f}" y1="{plot.top}" y2="{plot.bottom}" stroke="#b3261e" '
        'stroke-width="1.5" stroke-dasharray="6 4"/>'
    )
    anchor = "end" if at + 4 + _width(label) > plot.left + plot.width else "start"
    svg.text(
        at + (-4 if anchor == "end" else 4), plot.top + 12, label, text_anchor=anchor, fill="#b3261e", font_size=11
    )


def _draw_marks(svg: Svg, plot: Plot, drawn: Sequence[Mark], currency: str, t: Words) -> None:
    """Each mark in the order given (the last on top), clipped to the plot: its ranges as a cross of bars,
    its expected figures as a dot (hollow when infeasible, ringed when recommended), a tooltip saying it all."""
    svg.add('<g clip-path="url(#plot)">')
    for m in drawn:
        colour = RECOMMENDED if m.recommended else FEASIBLE if m.feasible else INFEASIBLE
        cx, cy = plot.x(m.days.expected), plot.y(m.cost.expected)
        svg.add(
            f'<g class="candidate" data-gpu-model={quoteattr(m.gpu_model)} data-option={quoteattr(m.option)} '
            f'data-feasible="{"yes" if m.feasible else "no"}" data-recommended="{"yes" if m.recommended else "no"}">'
            f"<title>{escape(_tooltip(m, currency, t))}</title>"
        )
        width = 2.2 if m.recommended else 1.4
        svg.el("line", x1=plot.x(m.days.low), x2=plot.x(m.days.high), y1=cy, y2=cy, stroke=colour, stroke_width=width)
        svg.el("line", x1=cx, x2=cx, y1=plot.y(m.cost.low), y2=plot.y(m.cost.high), stroke=colour, stroke_width=width)
        if m.recommended:
            svg.el("circle", cx=cx, cy=cy, r=9.0, fill="none", stroke=colour, stroke_width=2.0)
        fill = colour if m.feasible else "#ffffff"
        svg.el("circle", cx=cx, cy=cy, r=5.5 if m.recommended else 4.5, fill=fill, stroke=colour, stroke_width=1.6)
        svg.add("</g>")
    svg.add("</g>")


def _tooltip(m: Mark, currency: str, t: Words) -> str:
    """A mark's tooltip: its label, cost and days with their ranges, and whether it is infeasible."""
    tip = t(
        "tooltip",
        label=m.label,
        cost=_price(m.cost.expected),
        cost_low=_price(m.cost.low),
        cost_high=_price(m.cost.high),
        currency=currency,
        days=money(m.days.expected),
        days_low=money(m.days.low),
        days_high=money(m.days.high),
    )
    return tip if m.feasible else f"{tip} · {t('infeasible')}"


def _labels(svg: Svg, plot: Plot, marks: Sequence[Mark], labelled: Sequence[Mark]) -> None:
    """The labels of ``labelled`` in that order: every feasible mark's, an infeasible one's where it has
    room; a label moved away from its mark (others were in the way) is joined to it by a thin line."""
    taken: list[Box] = [
        (
            plot.x(m.days.expected) - 6,
            plot.y(m.cost.expected) - 6,
            plot.x(m.days.expected) + 6,
            plot.y(m.cost.expected) + 6,
        )
        for m in marks
    ]
    for m in labelled:
        cx, cy = plot.x(m.days.expected), plot.y(m.cost.expected)
        text = _short(m.label)
        w = _width(text)
        spot = _label_spot(plot, cx, cy, w, taken, m.feasible)
        if spot is None:
            continue  # an infeasible mark's label only where it has room (the key and the answer name it)
        sx, sy = spot
        taken.append((sx, sy - LINE + 3, sx + w, sy + 3))
        colour = "#111" if m.feasible else "#6b6b6b"
        if abs(sy - (cy + 4)) > 1:
            end = sx if sx > cx else sx + w
            svg.el("line", class_="leader", x1=cx, y1=cy, x2=end, y2=sy - 4, stroke=colour, stroke_width=0.6)
        weight = "600" if m.recommended else "400"
        svg.text(sx, sy, text, fill=colour, font_size=LABEL_SIZE, font_weight=weight, class_="label", **HALO)


def _label_spot(
    plot: Plot, cx: float, cy: float, w: float, taken: Sequence[Box], feasible: bool
) -> tuple[float, float] | None:
    """Where a label ``w`` wide of the mark at ``(cx, cy)`` goes: ``(left end, baseline)`` beside the mark,
    else further up and down, right before left, the first place inside the plot that is free; an
    infeasible mark's only beside it and only where it is free (None: no label)."""
    steps = [0] if not feasible else [0, -1, 1, -2, 2, -3, 3, -4, 4, -5, 5]
    spots = [
        (sx, cy + 4 + k * LINE)
        for k in steps
        for sx in (cx + 10, cx - 10 - w)
        if plot.left + 2 <= sx
        and sx + w <= plot.left + plot.width - 2
        and plot.top + LINE <= cy + 4 + k * LINE <= plot.bottom - 3
    ]
    free = [s for s in spots if not any(_overlaps((s[0], s[1] - LINE + 3, s[0] + w, s[1] + 3), b) for b in taken)]
    if not free and not feasible:
        return None
    return (free or spots or [(cx + 10, cy + 4)])[0]


def _legend(svg: Svg, plot: Plot, marks: Sequence[Mark], ly: float, t: Words) -> None:
    """What the kinds of marks drawn are (recommended, feasible, infeasible), and that bars are ranges."""
    legend = [
        (code, colour, filled)
        for code, colour, filled, shown in (
            ("recommended", RECOMMENDED, True, any(m.recommended for m in marks)),
            ("feasible", FEASIBLE, True, any(m.feasible and not m.recommended for m in marks)),
            ("infeasible", INFEASIBLE, False, any(not m.feasible for m in marks)),
        )
        if shown
    ]
    lx = float(plot.left)
    for code, colour, filled in legend:
        svg.el(
            "circle", cx=lx + 5, cy=ly - 4, r=4.5, fill=colour if filled else "#ffffff", stroke=colour, stroke_width=1.6
        )
        svg.text(lx + 14, ly, t(code), fill="#333")
        lx += 34 + _width(t(code), 12)
    svg.text(lx + 6, ly, t("ranges"), fill="#555", font_size=11)


def _key(svg: Svg, keyed: Sequence[Mark], ky: float, currency: str, t: Words) -> float:
    """The feasible marks ranked, a row each from ``ky`` down (the recommended one starred); where the
    next row goes."""
    for n, m in enumerate(keyed, start=1):
        row = t(
            "row", rank=n, label=m.label, cost=_price(m.cost.expected), currency=currency, days=money(m.days.expected)
        )
        mark = "★ " if m.recommended else ""
        svg.text(LEFT, ky, f"{mark}{row}", font_size=12, fill="#111" if m.recommended else "#333")
        ky += 18
    return ky


def _not_shown(svg: Svg, at: float, t: Words, **counts: int) -> None:
    """Under the key, from ``at`` down, a row for each of ``counts`` (by the words' code, in order) there are
    some of: feasible marks the key leaves out, marks not feasible, candidates without a plan."""
    for code, count in counts.items():
        if count:
            svg.text(LEFT, at, t(code, count=count), fill="#555", font_size=11)
            at += 18


def _overlaps(a: Box, b: Box) -> bool:
    """Whether two boxes share some area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
