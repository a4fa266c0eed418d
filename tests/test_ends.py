"""Kernels compute the ends of a range a caller asks for (``app.core.columns``): the expected figures
of a quote made for the expected end alone are those of a quote made for every end, bit for bit, and
the ends not asked for are NaN — never a figure of the other ends — unless known whatever is asked
(an option with no upfront cost has none at any end)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import random

import numpy as np
import pytest
from seed_snapshot import knowledge_from_seeds
from test_kernel_equivalence import profiles

from app.core.columns import ALL, EXPECTED
from app.core.errors import NoOffer
from app.core.quotes import RANGED
from app.core.types import Profile
from app.engine.batch import vector_profile
from app.host.manager import create_option_host

HOST = create_option_host()
KB = knowledge_from_seeds()


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True))
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("option", sorted(HOST.options))
def test_the_expected_end_alone_is_the_expected_end_of_every_end(option: str) -> None:
    checked = 0
    for p in profiles()[:120]:
        try:
            full, _ = HOST.choose(option, p, KB, ALL)
            alone, _ = HOST.choose(option, p, KB, EXPECTED)
        except NoOffer:
            continue
        assert alone.candidate is full.candidate
        for name in RANGED:
            a, f = getattr(alone, name), getattr(full, name)
            if f is None:
                assert a is None
                continue
            assert _same(a.expected, f.expected), (option, name)
            # not computed (NaN), or a figure the same at every end whatever is asked (no upfront cost)
            assert math.isnan(a.low) or _same(a.low, f.low), (option, name)
            assert math.isnan(a.high) or _same(a.high, f.high), (option, name)
        for part in ("efficiency", "stability", "usability"):
            a, f = getattr(alone, part), getattr(full, part)
            for field in dataclasses.fields(f):
                value = getattr(f, field.name)
                if hasattr(value, "expected"):
                    assert _same(getattr(a, field.name).expected, value.expected), (option, part, field.name)
        assert [c for c, _ in alone.violations] == [c for c, _ in full.violations]
        checked += 1
    assert checked > 25


@pytest.mark.parametrize("option", sorted(HOST.options))
def test_a_batch_quoted_at_the_expected_end_chooses_as_at_every_end(option: str) -> None:
    rng = random.Random(7)
    base = Profile(gpus=1, utilization=0.5, horizon_years=3, as_of=dt.date(2026, 12, 1), gpu_model="h100_sxm")
    members = [
        dataclasses.replace(base, gpus=rng.choice([1, 8, 64, 512, 3000]), utilization=rng.choice([0.05, 0.5, 0.9]))
        for _ in range(40)
    ]
    vp = vector_profile(members)
    full, _ = HOST.choose(option, vp, KB, ALL)
    alone, _ = HOST.choose(option, vp, KB, EXPECTED)
    for name in ("effective", "per_useful", "total", "annual"):
        assert _same(getattr(alone, name).expected, getattr(full, name).expected), name
