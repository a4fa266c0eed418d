"""Reliability at scale (docs/methodology.md "Stability"): what interruptions cost a training job that
spans all of a profile's GPUs, with the checkpoint interval chosen by Young–Daly.

Per job, with ``rate`` job-interrupting failures per GPU-year and ``gpus`` GPUs:

    MTBF (hours)        M = 8760 ÷ (rate × gpus)
    checkpoint interval T = √(2 × M × w)           (Young 1974, Daly 2006; w = checkpoint write time)
    lost per failure      detection + restart + T ÷ 2   (the work since the last checkpoint)
    wasted share          f = w ÷ T + (detection + restart + T ÷ 2) ÷ M
    goodput               max(0, 1 − f)

First-order (Daly's refinement matters only when failures come faster than checkpoints), plain
numbers or NumPy arrays alike. ``app.core.model.stability`` applies it to an option's inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

HOURS_PER_YEAR = 8760


def mtbf_hours(rate_per_gpu_year: Any, gpus: Any) -> Any:
    """Mean time between job-interrupting failures of a job on ``gpus`` GPUs, in hours."""
    return HOURS_PER_YEAR / (rate_per_gpu_year * gpus)


def checkpoint_interval_hours(mtbf: Any, write_hours: Any) -> Any:
    """Young–Daly optimum ``√(2 × MTBF × write time)``."""
    return np.sqrt(2.0 * mtbf * write_hours) if isinstance(mtbf, np.ndarray) else (2.0 * mtbf * write_hours) ** 0.5


def wasted_share(mtbf: Any, write_hours: Any, detection: Any, restart: Any) -> Any:
    """Share of the job's time lost to checkpoints and failures at the Young–Daly interval."""
    interval = checkpoint_interval_hours(mtbf, write_hours)
    return write_hours / interval + (detection + restart + interval / 2.0) / mtbf


def goodput(mtbf: Any, write_hours: Any, detection: Any, restart: Any) -> Any:
    """``max(0, 1 − wasted share)``: the share of the job's time that turns into progress."""
    f = wasted_share(mtbf, write_hours, detection, restart)
    return np.maximum(0.0, 1.0 - f) if isinstance(f, np.ndarray) else max(0.0, 1.0 - f)
