"""Owned GPUs by what they do (docs/methodology.md "Capacity plans"): a fleet of another GPU model
enters a capacity plan as the GPUs of the demand's model that sustain the same training throughput,

    equivalent GPUs = count × (peak dense BF16 TFLOPS × MFU) of the owned model
                            ÷ (peak dense BF16 TFLOPS × MFU) of the demand's model,

the peak from the GPU model's row (``gpu_models.bf16_dense_tflops``), the model FLOPs utilization
from the assumption ``mfu_bf16_<gpu_model>`` (seeds/26-throughput.yaml: the share of its peak a GPU
of that generation sustains in published large-model training), else the general ``mfu`` row. One
synchronous job never spans two GPU models: the solver holds a job on GPUs of one model
(``app.engine.capacity.solver.group_of``)."""

from __future__ import annotations

from dataclasses import dataclass

from app.sdk.errors import MissingKnowledge
from app.sdk.knowledge import Knowledge
from app.sdk.records import SourceRef

#: the assumption row of a GPU model's sustained share of its dense BF16 peak: this prefix and its key
MFU_PREFIX = "mfu_bf16_"
#: the general row, for a GPU model without its own (seeds/25-training.yaml)
GENERAL_MFU = "mfu"


@dataclass(frozen=True, slots=True)
class Throughput:
    """A GPU model's sustained training throughput: its dense BF16 peak × its MFU (expected)."""

    gpu_model: str
    peak_tflops: float
    mfu: float
    sources: tuple[SourceRef, ...]

    @property
    def sustained_tflops(self) -> float:
        return self.peak_tflops * self.mfu


def throughput(knowledge: Knowledge, gpu_model: str) -> Throughput:
    """``gpu_model``'s peak and MFU (its own row ``mfu_bf16_<gpu_model>``, else the general ``mfu``)."""
    spec = knowledge.gpus.get(gpu_model)
    if spec is None:
        raise MissingKnowledge(f"unknown gpu_model '{gpu_model}'")
    try:
        value, ref = knowledge.assumption_value("*", MFU_PREFIX + gpu_model)
    except MissingKnowledge:
        value, ref = knowledge.assumption_value("*", GENERAL_MFU)
    gpu_ref = SourceRef("gpu_models", spec.key, spec.source, spec.source_quality)
    return Throughput(gpu_model, float(spec.bf16_dense_tflops), float(value.expected), (gpu_ref, ref))


def demand_model(knowledge: Knowledge, gpu_model: str | None) -> str | None:
    """The GPU model the demand is counted in: the profile's, else the reference server's (None where
    that names none: the article's server is a server of unnamed GPUs)."""
    if gpu_model is not None:
        return gpu_model
    return knowledge.reference_server().gpu_model_key


def equivalent_factor(knowledge: Knowledge, owned_model: str, demand_gpu_model: str | None) -> float:
    """GPUs of ``demand_gpu_model`` one GPU of ``owned_model`` is worth by sustained throughput (1 for
    the same model, and where the demand's model is not known: one for one)."""
    if demand_gpu_model is None or owned_model == demand_gpu_model:
        return 1.0
    owned, wanted = throughput(knowledge, owned_model), throughput(knowledge, demand_gpu_model)
    return owned.sustained_tflops / wanted.sustained_tflops


__all__ = ["GENERAL_MFU", "MFU_PREFIX", "Throughput", "demand_model", "equivalent_factor", "throughput"]
