"""Work a GPU does (docs/methodology.md "Work: throughput and cost per token"): a GPU model's sustained
training throughput at a precision, from the knowledge base,

    sustained TFLOPS = peak dense TFLOPS at the precision × MFU,
    tokens/s         = GPUs × sustained TFLOPS × 10¹² ÷ (6 × active parameters),

the peak from the GPU model's row (``gpu_models.bf16_dense_tflops`` or ``fp8_dense_tflops``), the model
FLOPs utilization from the assumption ``mfu_<precision>_<gpu_model>`` (seeds/26-throughput.yaml: the
share of that peak published large-model training runs of that generation sustain), else the general
``mfu`` (BF16) or ``mfu_fp8`` row. MFU counts only the model's 6 FLOPs per parameter and token, so the
same run takes the same FLOPs on every part and the parts compare by what they sustain.

Used by training plans across GPU models, by every option's cost per useful PFLOP-hour, and by capacity
plans that count an owned fleet of another model in the demand's GPUs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from app.core.errors import MissingKnowledge
from app.core.knowledge import Knowledge
from app.core.ranges import Range
from app.core.records import SourceRef
from app.core.vocab import Precision

PRECISIONS: tuple[Precision, ...] = get_args(Precision)
#: the assumption row of a GPU model's sustained share of its dense peak at a precision: ``mfu_<precision>_<gpu>``
MFU_PREFIX = "mfu_{precision}_"
#: the general rows, for a GPU model without its own
GENERAL_MFU: dict[str, str] = {"bf16": "mfu", "fp8": "mfu_fp8"}
#: the ``gpu_models`` column of each precision's dense peak
PEAK_COLUMN: dict[str, str] = {"bf16": "bf16_dense_tflops", "fp8": "fp8_dense_tflops"}
TERA = 1e12
PETA_PER_TERA = 1e-3


class PrecisionUnsupported(MissingKnowledge):
    """The GPU model has no dense peak at the precision (an Ampere or Ascend part at FP8)."""


def mfu_key(precision: str, gpu_model: str) -> str:
    return MFU_PREFIX.format(precision=precision) + gpu_model


@dataclass(frozen=True, slots=True)
class Throughput:
    """A GPU model's dense peak at a precision and the MFU range it sustains (its sources too)."""

    gpu_model: str
    precision: str
    peak_tflops: float
    mfu: Range
    #: whether the MFU is the GPU model's own row (False: the general row for every model)
    own_mfu: bool
    sources: tuple[SourceRef, ...]

    @property
    def sustained(self) -> Range:
        """Sustained TFLOPS per GPU: peak × MFU (the high MFU is the high end)."""
        return self.mfu * self.peak_tflops

    @property
    def sustained_tflops(self) -> float:
        """The expected sustained TFLOPS per GPU."""
        return self.peak_tflops * self.mfu.expected


def peak(knowledge: Knowledge, gpu_model: str, precision: str = "bf16") -> float | None:
    """``gpu_model``'s dense peak TFLOPS at ``precision`` (None where the part has none; an unknown
    precision is ``PrecisionUnsupported``)."""
    spec = knowledge.gpus.get(gpu_model)
    if spec is None:
        raise MissingKnowledge(f"unknown gpu_model '{gpu_model}'")
    column = PEAK_COLUMN.get(precision)
    if column is None:
        raise PrecisionUnsupported(f"unknown precision '{precision}' (one of {', '.join(PRECISIONS)})")
    value = getattr(spec, column)
    return None if value is None or value <= 0 else float(value)


def supports(knowledge: Knowledge, gpu_model: str, precision: str) -> bool:
    """Whether ``gpu_model`` has a dense peak at ``precision``."""
    return peak(knowledge, gpu_model, precision) is not None


def throughput(knowledge: Knowledge, gpu_model: str, precision: str = "bf16") -> Throughput:
    """``gpu_model``'s peak at ``precision`` and its MFU (its own row, else the general one).
    ``PrecisionUnsupported`` where the part has no peak at that precision."""
    top = peak(knowledge, gpu_model, precision)
    spec = knowledge.gpus[gpu_model]
    if top is None:
        raise PrecisionUnsupported(f"{spec.name} has no dense {precision.upper()} throughput in the knowledge base")
    own = True
    try:
        value, ref = knowledge.assumption_value("*", mfu_key(precision, gpu_model))
    except MissingKnowledge:
        own = False
        value, ref = knowledge.assumption_value("*", GENERAL_MFU[precision])
    gpu_ref = SourceRef("gpu_models", spec.key, spec.source, spec.source_quality)
    return Throughput(gpu_model, precision, top, value, own, (gpu_ref, ref))


def cost_per_pflop_hour(cost_per_gpu_hour: Range, work: Throughput) -> Range:
    """Cost per useful PFLOP-hour: the cost per useful GPU-hour over the PFLOPS a GPU sustains; the low
    cost and the high MFU give the low end."""
    return cost_per_gpu_hour / (work.sustained * PETA_PER_TERA)


def tokens_per_second(work: Throughput, gpus: int, active_parameters: float) -> Range:
    """``gpus × sustained TFLOPS × 10¹² ÷ (6 × active parameters)``: the run's training tokens a second."""
    return work.sustained * (gpus * TERA / (6 * active_parameters))


__all__ = [
    "GENERAL_MFU",
    "PEAK_COLUMN",
    "PRECISIONS",
    "Precision",
    "PrecisionUnsupported",
    "Throughput",
    "cost_per_pflop_hour",
    "mfu_key",
    "peak",
    "supports",
    "throughput",
    "tokens_per_second",
]
