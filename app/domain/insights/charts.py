"""Server-rendered SVG charts of the insights, for portals that embed an image by URL.

Hand-written SVG (no plotting dependency): a cost-per-useful-GPU-hour curve over utilization with
its low–high band and the break-even points, and a tornado of the sensitivity analysis. 640 px wide
(the ``viewBox`` scales), every word from the ``[chart]`` message catalog in the request's language.
``Svg`` and ``Plot`` are the house style the training-plan and capacity-plan charts are drawn in too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from app.domain.insights import schemas as si
from app.i18n import CONTENT_LANGUAGE, Lang, catalog, name_of, translate

__all__ = [
    "COLOURS",
    "SVG",
    "WIDTH",
    "Lang",
    "Plot",
    "Svg",
    "Words",
    "cost_curve_svg",
    "money",
    "nice_ticks",
    "option_name",
    "tornado_svg",
    "words",
]

SVG = "image/svg+xml"
WIDTH = 640
#: one colour per option, in series order (colour-blind safe: Okabe–Ito)
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
#: a chart's words: ``t(code, **params)`` in the request's language (``words``)
Words = Callable[..., str]
FONT = "system-ui, -apple-system, 'Segoe UI', 'Noto Sans CJK SC', 'PingFang SC', 'Microsoft YaHei', sans-serif"


def option_name(option: str, fallback: str, lang: Lang) -> str:
    """An option's name in ``lang`` (the plugin's own name for an option the catalog does not know)."""
    return name_of(f"option.{option}.name", lang, fallback)


def input_label(kind: str, ref: str, label: str, lang: Lang, names: Mapping[str, str] | None = None) -> str:
    """A sensitivity input in ``lang`` (the answer's ``label`` and the tornado's): a profile field, or an
    option's assumption or price item, by name — the analysis keys them (``profile.utilization``,
    ``assumptions:ai_compute_platform/pooled_utilization``, a price labelled ``<option> <item>``);
    ``chart.input.<key>`` words each, an input the catalogs lack reads as its key's words."""
    if kind == "profile":
        field = ref.rpartition(".")[2]
        return _input_words(field, lang)
    if kind == "assumption":  # ref: assumptions:<option>/<key>
        option, _, key = ref.partition(":")[2].partition("/")
    elif kind == "price":  # label: "<option> <item>"
        option, _, key = label.partition(" ")
    else:
        return label
    what = _input_words(key, lang)
    if option in ("", "*"):
        return what
    who = option_name(option, (names or {}).get(option, option), lang)
    return translate("chart.tornado.input", lang, option=who, input=what)


def _input_words(key: str, lang: Lang) -> str:
    return catalog(lang).get(f"chart.input.{key}") or key.replace("_", " ")


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 × 10ⁿ apart) covering ``low``–``high``."""
    span = high - low if high > low else abs(high) or 1.0
    raw = span / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if raw <= m * step)
    first = math.floor(low / step) * step
    ticks = []
    v = first
    while v <= high + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    if ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def money(v: float) -> str:
    """A tick or value label: thousands separated, decimals only where the value needs them."""
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:,.1f}".rstrip("0").rstrip(".")
    return f"{v:,.2f}".rstrip("0").rstrip(".") or "0"


class Svg:
    """An SVG document being drawn, 640 px wide: its elements in the order they are added."""

    def __init__(self, height: int, title: str, lang: Lang) -> None:
        self.height = height
        self.lang = lang
        self.parts: list[str] = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" role="img" xml:lang="{CONTENT_LANGUAGE[lang]}" '
            f'font-family={quoteattr(FONT)} font-size="12">',
            f"<title>{escape(title)}</title>",
            f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        ]

    def add(self, element: str) -> None:
        self.parts.append(element)

    def el(self, tag: str, **attrs: str | float) -> None:
        """An empty element; ``stroke_width`` is written ``stroke-width``, floats to one decimal."""
        self.add(f"<{tag}{_attrs(attrs)}/>")

    def text(self, x: float, y: float, content: str, **attrs: str | float) -> None:
        self.add(f'<text x="{x:.1f}" y="{y:.1f}"{_attrs(attrs)}>{escape(content)}</text>')

    def heading(self, x: float, title: str, subtitle: str) -> None:
        """The chart's title, and its subtitle under it, from ``x``."""
        self.text(x, 24, title, font_size=16, font_weight="600")
        self.text(x, 44, subtitle, fill="#555")

    def knowledge(self, version: str) -> None:
        """The knowledge version the chart was drawn from, in its bottom right corner."""
        words = translate("chart.knowledge", self.lang, version=version)
        self.text(WIDTH - 16, self.height - 8, words, text_anchor="end", fill="#777", font_size=10)

    def render(self) -> str:
        return "\n".join([*self.parts, "</svg>"]) + "\n"


@dataclass(frozen=True, slots=True)
class Plot:
    """A chart's plot area, in pixels from the top left corner, and the values its axes end at (both
    start at 0): ``x`` and ``y`` place a value; the other methods draw its grid, frame and axis titles."""

    left: int
    top: int
    width: int
    height: int
    x_max: float
    y_max: float

    def x(self, value: float) -> float:
        return self.left + value / self.x_max * self.width

    def y(self, value: float) -> float:
        return self.top + self.height - value / self.y_max * self.height

    @property
    def bottom(self) -> int:
        return self.top + self.height

    @property
    def centre(self) -> float:
        """The middle of the plot, across."""
        return self.left + self.width / 2

    @property
    def middle(self) -> float:
        """The middle of the plot, down."""
        return self.top + self.height / 2

    def clip(self, svg: Svg) -> None:
        """The clip path ``#plot``: what is drawn in ``<g clip-path="url(#plot)">`` stays inside."""
        svg.add(
            f'<clipPath id="plot"><rect x="{self.left}" y="{self.top}" width="{self.width}" '
            f'height="{self.height}"/></clipPath>'
        )

    def y_grid(self, svg: Svg, ticks: Iterable[float]) -> None:
        """A horizontal line and a label on the left at each tick."""
        for v in ticks:
            y = self.y(v)
            svg.add(
                f'<line x1="{self.left}" x2="{self.left + self.width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>'
            )
            svg.text(self.left - 6, y + 4, money(v), text_anchor="end", fill="#333")

    def x_grid(self, svg: Svg, ticks: Iterable[float], label: Callable[[float], str] = money) -> None:
        """A vertical line and a label under the plot at each tick."""
        for v in ticks:
            x = self.x(v)
            svg.add(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.top}" y2="{self.bottom}" stroke="#f0f0f0"/>')
            svg.text(x, self.bottom + 16, label(v), text_anchor="middle", fill="#333")

    def frame(self, svg: Svg) -> None:
        """The plot's outline."""
        svg.add(
            f'<rect x="{self.left}" y="{self.top}" width="{self.width}" height="{self.height}" fill="none" '
            'stroke="#888"/>'
        )

    def titles(self, svg: Svg, x_axis: str, y_axis: str, *, y_at: int = 18) -> None:
        """The axes' titles: under the plot, and turned up its left side at ``y_at``."""
        svg.text(self.centre, self.bottom + 36, x_axis, text_anchor="middle", font_size=13)
        mid = self.middle
        svg.text(y_at, mid, y_axis, text_anchor="middle", font_size=13, transform=f"rotate(-90 {y_at} {mid})")


def _attrs(attrs: Mapping[str, str | float]) -> str:
    return "".join(
        f" {k.rstrip('_').replace('_', '-')}={quoteattr(f'{v:.1f}' if isinstance(v, float) else str(v))}"
        for k, v in attrs.items()
    )


def _polyline(points: Iterable[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def words(prefix: str, lang: Lang) -> Words:
    """A chart's words: ``t(code, **params)`` is the catalog's ``<prefix>.<code>`` in ``lang``."""

    def t(code: str, **params: object) -> str:
        return translate(f"{prefix}.{code}", lang, **params)

    return t


def cost_curve_svg(doc: si.CostCurvesRead, lang: Lang) -> str:
    """The cost per useful GPU-hour of every option over utilization: the expected figure as a line,
    the low–high range as a band, the break-even points marked, the profile's utilization shown."""
    t = words("chart.cost_curve", lang)
    rows = max(1, math.ceil(len(doc.series) / 3))
    yt = _cost_ticks(doc)
    plot = Plot(left=78, top=58, width=WIDTH - 78 - 20, height=260, x_max=1.0, y_max=yt[-1])
    svg = Svg(plot.bottom + 58 + rows * 20 + 24, t("title"), lang)
    subtitle = t("subtitle", gpus=f"{doc.gpus:,}", years=f"{doc.horizon_years:g}", version=doc.knowledge_version)
    svg.heading(plot.left, t("title"), subtitle)
    plot.clip(svg)
    plot.y_grid(svg, yt)
    plot.x_grid(svg, [i / 10 for i in range(0, 11, 2)], label=lambda u: f"{u:.0%}")
    plot.frame(svg)
    plot.titles(svg, t("x_axis"), t("y_axis", currency=doc.currency))
    _curves(svg, plot, doc.series)
    _profile_utilization(svg, plot, doc.utilization, t("profile"))
    _break_even_points(svg, plot, doc.break_even, t)
    _curves_legend(svg, plot, doc.series, rows, lang, t("legend_note"))
    return svg.render()


def _cost_ticks(doc: si.CostCurvesRead) -> list[float]:
    """The cost axis' ticks: from 0 to the highest figure, capped at 4× the dearest expected cost at full
    load so that the curves stay readable where utilization is low (what rises above is clipped)."""
    highs = [p.cost_per_useful_gpu_hour.high for s in doc.series for p in s.points]
    full_load = [s.points[-1].cost_per_useful_gpu_hour.expected for s in doc.series if s.points]
    top_value = max(highs, default=1.0)
    if full_load and max(full_load) > 0:
        top_value = min(top_value, 4 * max(full_load))
    return nice_ticks(0, top_value if top_value > 0 else 1.0)


def _curves(svg: Svg, plot: Plot, series: Sequence[si.CostSeriesRead]) -> None:
    """Each option's low–high band and its expected line, clipped to the plot."""
    svg.add('<g clip-path="url(#plot)">')
    for n, s in enumerate(series):
        colour = COLOURS[n % len(COLOURS)]
        ps = s.points
        band = [(plot.x(p.utilization), plot.y(p.cost_per_useful_gpu_hour.high)) for p in ps]
        band += [(plot.x(p.utilization), plot.y(p.cost_per_useful_gpu_hour.low)) for p in reversed(ps)]
        svg.add(f'<polygon points="{_polyline(band)}" fill="{colour}" fill-opacity="0.14" stroke="none"/>')
        line = [(plot.x(p.utilization), plot.y(p.cost_per_useful_gpu_hour.expected)) for p in ps]
        svg.add(
            f'<polyline class="series" data-option={quoteattr(s.option)} points="{_polyline(line)}" '
            f'fill="none" stroke="{colour}" stroke-width="2.2"/>'
        )
    svg.add("</g>")


def _profile_utilization(svg: Svg, plot: Plot, utilization: float, label: str) -> None:
    """The profile's utilization: a dotted vertical line, labelled at its top."""
    x = plot.x(utilization)
    svg.add(
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{plot.top}" y2="{plot.bottom}" stroke="#333" stroke-dasharray="2 3"/>'
    )
    svg.text(x + 4, plot.top + 12, label, fill="#333", font_size=11)


def _break_even_points(svg: Svg, plot: Plot, points: Sequence[si.BreakEvenPointRead], t: Words) -> None:
    """The break-even points inside the plot, each a hollow circle labelled with its utilization (labels
    stepped up in threes so that neighbours do not overlap)."""
    shown = 0
    for be in points:
        at, cost = be.utilization.expected, be.cost_per_useful_gpu_hour
        if at is None or cost is None or cost > plot.y_max:
            continue
        cx, cy = plot.x(at), plot.y(cost)
        svg.el("circle", class_="break-even", cx=cx, cy=cy, r=4.5, fill="#fff", stroke="#111", stroke_width=1.6)
        anchor = "end" if at > 0.8 else "start"
        dx = -7 if anchor == "end" else 7
        label = t("break_even", utilization=f"{at:.0%}")
        svg.text(cx + dx, cy - 8 - 13 * (shown % 3), label, text_anchor=anchor, font_size=11, fill="#111")
        shown += 1


def _curves_legend(svg: Svg, plot: Plot, series: Sequence[si.CostSeriesRead], rows: int, lang: Lang, note: str) -> None:
    """Each option's colour and name, three a row, and what the hollow circles are."""
    ly = plot.bottom + 60
    for n, s in enumerate(series):
        lx = plot.left + (n % 3) * (plot.width / 3)
        row_y = ly + (n // 3) * 20
        colour = COLOURS[n % len(COLOURS)]
        svg.add(f'<rect x="{lx:.1f}" y="{row_y - 9:.1f}" width="14" height="10" fill="{colour}" fill-opacity="0.3"/>')
        svg.el("line", x1=lx, x2=lx + 14, y1=row_y - 4, y2=row_y - 4, stroke=colour, stroke_width=2.2)
        svg.text(lx + 20, row_y, option_name(s.option, s.name, lang))
    note_y = ly + rows * 20
    svg.add(f'<circle cx="{plot.left + 5}" cy="{note_y - 4}" r="4" fill="#fff" stroke="#111" stroke-width="1.4"/>')
    svg.text(plot.left + 14, note_y, note, fill="#555", font_size=11)


def tornado_svg(
    doc: si.SensitivityRead,
    lang: Lang,
    *,
    currency: str,
    option: str | None = None,
    names: Mapping[str, str] | None = None,
    limit: int = 12,
) -> str:
    """Which inputs move ``option``'s cost per useful GPU-hour most (the recommended option by
    default): a bar per input from its cost at the input's low end to its cost at the high end,
    around the baseline, largest swing first."""
    t = words("chart.tornado", lang)
    target = option or doc.recommended_option or next(iter(doc.baseline), "")
    name = option_name(target, (names or {}).get(target, target), lang)
    rows: list[tuple[str, float, float]] = []
    for i in doc.inputs:
        e = i.effects.get(target)
        if e is not None and abs(e.cost_per_useful_gpu_hour_high - e.cost_per_useful_gpu_hour_low) > 1e-9:
            rows.append((i.label, e.cost_per_useful_gpu_hour_low, e.cost_per_useful_gpu_hour_high))
    rows.sort(key=lambda r: abs(r[2] - r[1]), reverse=True)
    rows = rows[:limit]
    base = doc.baseline[target].cost_per_useful_gpu_hour if target in doc.baseline else 0.0

    label_w, right, top, row_h = 250, 24, 64, 24
    plot_w = WIDTH - label_w - right
    plot_h = max(1, len(rows)) * row_h
    height = top + plot_h + 92
    svg = Svg(height, t("title", option=name), lang)
    svg.heading(16, t("title", option=name), t("subtitle"))
    values = [base, *(v for _, lo, hi in rows for v in (lo, hi))]
    xt = nice_ticks(min(values), max(values)) if rows else nice_ticks(0, base or 1.0)
    x_lo, x_hi = xt[0], xt[-1]

    def x(v: float) -> float:
        return label_w + (v - x_lo) / ((x_hi - x_lo) or 1.0) * plot_w

    for v in xt:
        svg.add(f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{top}" y2="{top + plot_h}" stroke="#e3e3e3"/>')
        svg.text(x(v), top + plot_h + 16, money(v), text_anchor="middle", fill="#333")
    svg.text(
        label_w + plot_w / 2,
        top + plot_h + 38,
        t("x_axis", option=name, currency=currency),
        text_anchor="middle",
        font_size=13,
    )
    if not rows:
        svg.text(label_w + plot_w / 2, top + row_h / 2 + 4, t("empty"), text_anchor="middle", fill="#555")
    for n, (label, lo, hi) in enumerate(rows):
        cy = top + n * row_h
        short = label if len(label) <= 40 else label[:39] + "…"
        svg.add(f'<g class="bar"><title>{escape(label)}: {money(lo)} – {money(hi)}</title>')
        svg.text(label_w - 8, cy + row_h / 2 + 4, short, text_anchor="end")
        for value, colour in ((lo, COLOURS[0]), (hi, COLOURS[1])):
            a, b = sorted((x(base), x(value)))
            svg.el("rect", x=a, y=cy + 4, width=max(b - a, 1.0), height=row_h - 8, fill=colour, fill_opacity=0.85)
        svg.add("</g>")
    svg.el("line", x1=x(base), x2=x(base), y1=top - 6, y2=top + plot_h, stroke="#111", stroke_width=1.5)
    svg.text(x(base), top - 10, t("baseline", value=money(base)), text_anchor="middle", font_size=11)
    ly = top + plot_h + 62
    for n, (code, colour) in enumerate((("low", COLOURS[0]), ("high", COLOURS[1]))):
        lx = 16 + n * 300
        svg.add(f'<rect x="{lx}" y="{ly - 10}" width="14" height="10" fill="{colour}" fill-opacity="0.85"/>')
        svg.text(lx + 20, ly, t(code))
    svg.knowledge(doc.knowledge_version)
    return svg.render()
