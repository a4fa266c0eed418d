"""Decision insights (docs/methodology.md "Insights"): break-even points, sensitivity, uncertainty.

Each re-runs the option plugins — the same model that prices and ranks — on varied profiles or
knowledge; none is a separate formula that could drift from it. Which options and variants are
compared is always a parameter.
"""

from app.engine.insights.break_even import BreakEven, Crossing, Payback, break_even, crossing
from app.engine.insights.common import Assess, Model, Variant
from app.engine.insights.cost_curve import CostCurves, CurvePoint, cost_curves, utilization_grid
from app.engine.insights.sensitivity import Sensitivity, pointwise, sensitivity
from app.engine.insights.story import explained, most_likely_best
from app.engine.insights.uncertainty import Uncertainty, sample_knowledge, uncertainty

__all__ = [
    "Assess",
    "BreakEven",
    "CostCurves",
    "Crossing",
    "CurvePoint",
    "Model",
    "Payback",
    "Sensitivity",
    "Uncertainty",
    "Variant",
    "break_even",
    "cost_curves",
    "crossing",
    "explained",
    "most_likely_best",
    "pointwise",
    "sample_knowledge",
    "sensitivity",
    "uncertainty",
    "utilization_grid",
]
