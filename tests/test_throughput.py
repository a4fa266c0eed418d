"""Throughput as knowledge (docs/methodology.md "Work: throughput and cost per token"): a GPU model's dense
peak at a precision and the MFU it sustains, from the shipped seeds, by hand calculation.

    GPU-hours = FLOPs ÷ (peak TFLOPS × 10¹² × MFU × 3600)
    tokens/s  = GPUs × peak TFLOPS × 10¹² × MFU ÷ (6 × active parameters)
    cost per useful PFLOP-hour = cost per useful GPU-hour ÷ (peak TFLOPS × MFU ÷ 1000)

Peaks are gpu_models.bf16_dense_tflops / fp8_dense_tflops (seeds/10-hardware.yaml, 11-hardware-b200.yaml);
MFU rows are seeds/26-throughput.yaml (mfu_<precision>_<gpu_model>) and the general rows `mfu`
(seeds/25-training.yaml) and `mfu_fp8`. A row's range is (low, most likely, high); its expected figure is
the mean (low + most likely + high) ÷ 3 (the rows are symmetric, so the mean is the most likely figure)."""

from __future__ import annotations

import pytest
from seed_snapshot import knowledge_from_seeds

from app.core.errors import MissingKnowledge
from app.core.ranges import Range
from app.engine import planner
from app.engine.throughput import (
    PrecisionUnsupported,
    Throughput,
    cost_per_pflop_hour,
    mfu_key,
    supports,
    throughput,
    tokens_per_second,
)

KB = knowledge_from_seeds()

# one run: 7B parameters on 2T tokens, 6 FLOPs per parameter and token
FLOPS = 6 * 7e9 * 2e12  # 8.4e22
SECONDS_PER_HOUR = 3600


def mean(low: float, mode: float, high: float) -> float:
    return (low + mode + high) / 3


#: (gpu_model, precision, dense peak TFLOPS from the datasheet row, MFU row (low, most likely, high),
#:  GPU-hours by hand at the high, expected and low MFU: FLOPs ÷ (peak × 1e12 × MFU × 3600))
RUNS = [
    # A100 80GB: 312 TFLOPS BF16; mfu_bf16_a100_80gb 0.45/0.50/0.55 (Megatron-LM, OPT, BLOOM)
    ("a100_80gb", "bf16", 312, (0.45, 0.50, 0.55), (135_975.1, 149_572.6, 166_191.8)),
    # H100 SXM: 989 TFLOPS BF16; mfu_bf16_h100_sxm 0.35/0.40/0.45 (Llama 3)
    ("h100_sxm", "bf16", 989, (0.35, 0.40, 0.45), (52_428.6, 58_982.1, 67_408.2)),
    # B200: 2,250 TFLOPS BF16; mfu_bf16_b200 0.31/0.37/0.43 (H100 × MLPerf v4.1 per-GPU speed-up ÷ peak ratio)
    ("b200", "bf16", 2250, (0.31, 0.37, 0.43), (24_117.1, 28_028.0, 33_452.8)),
    # Ascend 910B: 320 TFLOPS BF16/FP16; mfu_bf16_ascend_910b 0.30/0.41/0.52 (Pangu Ultra MoE, Pangu Ultra)
    ("ascend_910b", "bf16", 320, (0.30, 0.41, 0.52), (140_224.4, 177_845.5, 243_055.6)),
    # H100 SXM at FP8: 1,979 TFLOPS; mfu_fp8_h100_sxm 0.21/0.27/0.33 (BF16 row × FP8 speed-up ÷ 2)
    ("h100_sxm", "fp8", 1979, (0.21, 0.27, 0.33), (35_728.7, 43_668.4, 56_145.1)),
]


@pytest.mark.parametrize(("gpu", "precision", "peak", "row", "hours"), RUNS, ids=[f"{r[0]}-{r[1]}" for r in RUNS])
def test_gpu_hours_of_one_run_by_hand(
    gpu: str,
    precision: str,
    peak: float,
    row: tuple[float, float, float],
    hours: tuple[float, float, float],
) -> None:
    low, mode, high = row
    work = throughput(KB, gpu, precision)
    assert work.peak_tflops == peak
    assert work.own_mfu
    assert tuple(work.mfu) == pytest.approx((low, mean(low, mode, high), high), abs=1e-12)
    assert mean(low, mode, high) == pytest.approx(mode, abs=1e-12)  # symmetric: the mean is the most likely
    # the high MFU gives the fewest hours
    by_hand = (
        FLOPS / (peak * 1e12 * high * SECONDS_PER_HOUR),
        FLOPS / (peak * 1e12 * mean(low, mode, high) * SECONDS_PER_HOUR),
        FLOPS / (peak * 1e12 * low * SECONDS_PER_HOUR),
    )
    assert planner.training_flops(7e9, 2e12) == pytest.approx(8.4e22)
    found = planner.gpu_hours(FLOPS, work.peak_tflops, work.mfu)
    assert tuple(found) == pytest.approx(by_hand, rel=1e-12)
    assert tuple(found) == pytest.approx(hours, abs=0.1)


def test_the_same_run_ranks_the_parts_by_what_they_sustain() -> None:
    """Sustained TFLOPS per GPU (peak × expected MFU): B200 2,250 × 0.37 = 832.5, H100 989 × 0.40 = 395.6,
    A100 312 × 0.50 = 156, 910B 320 × 0.41 = 131.2, H20 148 × 0.50 = 74; the 910B does about 1.8× the
    H20's work per GPU (issue 36: the H20 is about 15% of an H100)."""
    sustained = {g: throughput(KB, g).sustained_tflops for g in ("b200", "h100_sxm", "a100_80gb", "ascend_910b", "h20")}
    assert sustained == pytest.approx(
        {
            "b200": 2250 * 0.37,
            "h100_sxm": 989 * 0.40,
            "a100_80gb": 312 * 0.50,
            "ascend_910b": 320 * 0.41,
            "h20": 148 * 0.50,
        }
    )
    assert list(sustained) == sorted(sustained, key=sustained.__getitem__, reverse=True)
    assert sustained["ascend_910b"] / sustained["h20"] == pytest.approx((320 * 0.41) / (148 * 0.50))  # ≈ 1.77
    assert throughput(KB, "h20").peak_tflops / throughput(KB, "h100_sxm").peak_tflops == pytest.approx(148 / 989)


def test_sustained_range_is_peak_times_the_mfu_range() -> None:
    work = throughput(KB, "b200", "bf16")
    assert tuple(work.sustained) == pytest.approx((2250 * 0.31, 2250 * 0.37, 2250 * 0.43))
    assert work.sustained_tflops == pytest.approx(2250 * 0.37)


@pytest.mark.parametrize("gpu", ["h100_sxm", "h200_sxm", "h800_sxm", "b200", "h20"])
def test_fp8_is_a_smaller_share_of_a_doubled_peak_and_still_more_work(gpu: str) -> None:
    """FP8 MFU is a share of the FP8 dense peak (twice the BF16 one), so it is below the BF16 row; the
    TFLOPS sustained are above BF16's (the FP8 rows are the BF16 ones × 1.2–1.45 speed-up ÷ 2)."""
    bf16, fp8 = throughput(KB, gpu, "bf16"), throughput(KB, gpu, "fp8")
    assert bf16.own_mfu and fp8.own_mfu
    assert fp8.peak_tflops == pytest.approx(2 * bf16.peak_tflops, rel=0.001)
    assert fp8.mfu.expected < bf16.mfu.expected
    speedup = fp8.sustained_tflops / bf16.sustained_tflops
    assert 1.2 <= speedup <= 1.45, speedup


@pytest.mark.parametrize("gpu", ["a100_80gb", "ascend_910b"])
def test_fp8_on_a_part_without_an_fp8_peak_is_refused(gpu: str) -> None:
    assert supports(KB, gpu, "bf16")
    assert not supports(KB, gpu, "fp8")
    with pytest.raises(PrecisionUnsupported, match="FP8"):
        throughput(KB, gpu, "fp8")
    assert issubclass(PrecisionUnsupported, MissingKnowledge)


def test_an_unknown_gpu_or_precision_is_missing_knowledge() -> None:
    with pytest.raises(MissingKnowledge, match="no_such_gpu"):
        throughput(KB, "no_such_gpu")
    with pytest.raises(PrecisionUnsupported, match="fp4"):
        throughput(KB, "b200", "fp4")


@pytest.mark.parametrize(("gpu", "precision", "general"), [("l40s", "bf16", "mfu"), ("rtx_4090", "fp8", "mfu_fp8")])
def test_a_gpu_without_its_own_row_takes_the_general_one(gpu: str, precision: str, general: str) -> None:
    """No published large-scale run on the L40S or the RTX 4090: their MFU is the general row's."""
    with pytest.raises(MissingKnowledge):
        KB.assumption("*", mfu_key(precision, gpu))
    work = throughput(KB, gpu, precision)
    assert not work.own_mfu
    assert work.mfu == KB.assumption("*", general).value
    assert work.sources[1].ref == f"*/{general}"
    assert work.sources[0].table == "gpu_models" and work.sources[0].ref == gpu


def test_the_general_rows_by_hand() -> None:
    # mfu: 0.25/0.40/0.55 (seeds/25-training.yaml);
    # mfu_fp8: 0.15/0.27/0.39 (the BF16 row × 0.60/0.66/0.72, kept symmetric)
    assert tuple(KB.assumption("*", "mfu").value) == pytest.approx((0.25, mean(0.25, 0.40, 0.55), 0.55))
    assert tuple(KB.assumption("*", "mfu_fp8").value) == pytest.approx((0.15, mean(0.15, 0.27, 0.39), 0.39))
    # the L40S at FP8: 733 TFLOPS × 0.27 = 197.91 sustained
    assert throughput(KB, "l40s", "fp8").sustained_tflops == pytest.approx(733 * 0.27)


def test_own_rows_name_their_source() -> None:
    work = throughput(KB, "ascend_910b")
    gpu_ref, mfu_ref = work.sources
    assert mfu_ref.ref == "*/mfu_bf16_ascend_910b" and "2504.07866" in mfu_ref.source
    assert mfu_ref.quality == "weak"
    assert gpu_ref.ref == "ascend_910b"
    assert mfu_key("fp8", "h100_sxm") == "mfu_fp8_h100_sxm"
    assert isinstance(work, Throughput) and work.precision == "bf16" and work.gpu_model == "ascend_910b"


def test_cost_per_useful_pflop_hour_by_hand() -> None:
    """A useful H100 GPU-hour at 2.0 / 2.5 / 3.0 (any currency): sustained BF16 PFLOPS 0.989 × (0.35, 0.40,
    0.45) = 0.34615 / 0.3956 / 0.44505; the low cost over the high throughput is the low end."""
    cost = Range(2.0, 2.5, 3.0)
    per_pflop_hour = cost_per_pflop_hour(cost, throughput(KB, "h100_sxm"))
    assert tuple(per_pflop_hour) == pytest.approx((2.0 / 0.44505, 2.5 / 0.3956, 3.0 / 0.34615))
    assert tuple(per_pflop_hour) == pytest.approx((4.4939, 6.3195, 8.6668), abs=1e-4)


def test_tokens_per_second_by_hand() -> None:
    """256 H100 at BF16 on a 70B-parameter dense model: 256 × 989e12 × MFU ÷ (6 × 70e9)."""
    rate = tokens_per_second(throughput(KB, "h100_sxm"), 256, 70e9)
    by_hand = tuple(256 * 989e12 * m / (6 * 70e9) for m in (0.35, 0.40, 0.45))
    assert tuple(rate) == pytest.approx(by_hand)
    assert rate.expected == pytest.approx(241_127.6, abs=0.1)
    # an MoE counts its active parameters: 37B of DeepSeek-V3's 671B on 2,048 H800 at FP8 (0.25 expected)
    moe = tokens_per_second(throughput(KB, "h800_sxm", "fp8"), 2048, 37e9)
    assert moe.expected == pytest.approx(2048 * 1979e12 * 0.25 / (6 * 37e9))
    # 2T tokens at that expected rate take 2e12 ÷ 241,127.6 s ≈ 96 days on the 256 H100
    assert 2e12 / rate.expected / 86_400 == pytest.approx(96.0, abs=0.1)


def test_training_state_bytes_per_parameter() -> None:
    """Mixed-precision Adam: 2 + 2 + 12 = 16 bytes per parameter (ZeRO §3.1) to 18 (Megatron-LM with FP32
    gradients): a 70B model's state is 70e9 × 16 = 1,120 GB at least, more than 8 H100 hold (640 GB)."""
    row = KB.assumption("*", "training_state_bytes_per_parameter")
    assert tuple(row.value) == pytest.approx((16, mean(16, 17, 18), 18))
    assert 70e9 * row.value.low / 1e9 == pytest.approx(1_120)
    assert 70e9 * row.value.low > 8 * KB.gpus["h100_sxm"].memory_gb * 1e9
    assert 70e9 * row.value.high <= 16 * KB.gpus["h100_sxm"].memory_gb * 1e9  # 1,260 GB within 16 × 80


def test_every_throughput_row_is_a_sourced_share() -> None:
    """Each mfu row is a share inside (0, 1); weak or assumed rows give their reasoning."""
    rows = [a for (option, key), a in KB.assumptions.items() if option == "*" and key.startswith("mfu")]
    assert len(rows) >= 14
    for row in rows:
        assert row.unit == "fraction"
        assert 0 < row.value.low <= row.value.expected <= row.value.high < 1, row.key
        if row.source_quality in ("weak", "assumption"):
            assert row.rationale, row.key
