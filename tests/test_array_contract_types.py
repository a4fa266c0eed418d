"""The array contract in types (docs/plugins.md "The array contract"): a kernel's columns, helpers and
pricing blocks are ``Num`` (a number or a NumPy array), so mypy refuses a plugin that treats a column
as a plain float — hands it to a function typed for floats, rounds it, ranges over it — and accepts
the element-wise arithmetic the contract allows."""

from __future__ import annotations

from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parent.parent

BREAKS = """
from app.sdk import Columns


def per_gpu_hours(gpus: float) -> float:
    return gpus * 8760


def quote(at: Columns) -> float:
    hours = per_gpu_hours(at.gpus)
    nodes = round(at.gpus / 8)
    total = 0.0
    for _ in range(at.gpus):
        total += hours
    return total + nodes
"""

KEEPS = """
from app.sdk import Columns
from app.core.columns import Num
from app.core.pricing import held_at, whole_terms
from app.core.ranges import Range


def quote(at: Columns, held_utilization: Range, term: float) -> Num:
    every_hour = at.ceil(at.gpus / 8) * 8 * 8760.0
    paid = held_at(1, at.useful, held_utilization, every_hour)
    years = whole_terms(at.horizon, term)
    return at.minimum(paid * years, at.useful_total)
"""


def _mypy(tmp_path: Path, source: str) -> tuple[str, int]:
    module = tmp_path / "plugin_under_test.py"
    module.write_text(source, encoding="utf-8")
    out, err, status = mypy_api.run(
        ["--strict", "--no-incremental", "--config-file", str(ROOT / "pyproject.toml"), str(module)]
    )
    return out + err, status


def test_mypy_refuses_a_column_used_as_a_plain_float(tmp_path: Path) -> None:
    report, status = _mypy(tmp_path, BREAKS)
    assert status == 1, report
    assert 'Argument 1 to "per_gpu_hours" has incompatible type "float | ndarray' in report
    assert 'Argument 1 to "round" has incompatible type "float | ndarray' in report
    assert 'Argument 1 to "range" has incompatible type "float | ndarray' in report


def test_mypy_accepts_element_wise_arithmetic_on_columns(tmp_path: Path) -> None:
    report, status = _mypy(tmp_path, KEEPS)
    assert status == 0, report
