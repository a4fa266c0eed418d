"""The explorer page: open without a key, self-contained, both languages; and in a real headless
Chromium driven by Playwright against a served instance: key, form, ranking, charts, a non-blank
screenshot. The browser test skips (with the reason) where Chromium or Playwright is missing,
unless ``REQUIRE_BROWSER=1`` (``.ci/run``), where it fails.

``UPDATE_SCREENSHOT=1`` writes the screenshot to ``docs/explorer.png``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from conftest import Server, create_key, make_client

from app.lib import i18n
from app.settings import PROJECT_ROOT

ATTRIBUTE = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def _boot(html: str) -> dict[str, Any]:
    found = re.search(r'<script id="boot" type="application/json">(.*?)</script>', html, re.S)
    assert found, "no boot data in the page"
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def test_explorer_page_is_open_and_self_contained(databases: Any) -> None:
    url = databases.new("sqlite")
    with make_client(url, api_key=None) as c:
        r = c.get("/explorer")
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/html")
        html = r.text
        assert not re.search(r"https?://", html), "the page names another host"
        refs = ATTRIBUTE.findall(html)
        assert {"/explorer/assets/explorer.js", "/explorer/assets/explorer.css"} <= set(refs)
        for ref in refs:
            assert ref.startswith(("/", "data:")), ref
            if ref.startswith("/"):
                assert c.get(ref).status_code == 200, ref
        js = c.get("/explorer/assets/explorer.js").text
        assert "X-API-Key" in js and "sessionStorage" in js
        assert not re.search(r"https?://", js)
        assert "localStorage" not in js  # the key lives for the tab only
        boot = _boot(html)
        en, zh = boot["messages"]["en"], boot["messages"]["zh"]
        assert en and set(en) == set(zh)
        assert en["title"] == i18n.translate("explorer.title", "en")
        assert zh["submit"] == i18n.translate("explorer.submit", "zh")
        assert boot["vocab"]["ops_team"] == ["none", "basic", "professional"]
        # every word the page looks up exists in the catalog
        page_codes = set(re.findall(r'data-t="([^"]+)"', html)) | set(re.findall(r'\bt\("([a-z_.]+)"', js))
        assert page_codes and page_codes <= set(en), sorted(page_codes - set(en))
        # the key is not needed for the page, but the API behind it still asks for one
        assert c.get("/v1/gpus").status_code == 401


# ---- in a browser --------------------------------------------------------------------------------


def _png_pixels(png: bytes) -> tuple[int, int, int, list[bytes]]:
    """Width, height, bytes per pixel and rows of an 8-bit non-interlaced RGB(A) PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = depth = colour = 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", data[:10])
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    assert depth == 8 and colour in (2, 6), (depth, colour)
    bpp = 3 if colour == 2 else 4
    raw, stride, rows = zlib.decompress(idat), width * bpp, []
    prev = bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def _luminance_stats(png: bytes) -> tuple[float, int]:
    """Variance of the pixels' luminance and the number of distinct colours (sampled every 4th pixel)."""
    width, _, bpp, rows = _png_pixels(png)
    values, colours = [], set()
    for row in rows[::4]:
        for x in range(0, width, 4):
            r, g, b = row[x * bpp : x * bpp + 3]
            values.append(0.299 * r + 0.587 * g + 0.114 * b)
            colours.add((r, g, b))
    return statistics.pvariance(values), len(colours)


def _browser() -> tuple[Any, str] | None:
    """Playwright's sync API and a Chromium executable, or None (the reason is skipped, or failed when required)."""
    reason = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "the playwright package is not installed"
        sync_playwright = None
    executable = os.environ.get("CHROMIUM") or next((p for p in CHROMIUM_PATHS if Path(p).exists()), None)
    executable = executable or shutil.which("chromium")
    if reason is None and executable is None:
        reason = "no Chromium found (apt-get install -y chromium, or set CHROMIUM)"
    if reason is not None:
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    return sync_playwright, str(executable)


@pytest.mark.slow
def test_explorer_in_headless_chromium(served: Server) -> None:
    sync_playwright, executable = _browser()  # type: ignore[misc]
    server = served
    _, key = create_key(server.url, ["catalog:read", "decisions:run"], name="explorer")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900}, locale="en-US")
            requests: list[Any] = []
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("request", lambda request: requests.append(request))
            page.goto(f"{server.base}/explorer")
            assert page.text_content("h1") == i18n.translate("explorer.title", "en")
            page.fill("#api-key", key)
            page.click("#key-save")
            page.wait_for_function("document.querySelector('#gpu-model').options.length > 1", timeout=30_000)
            assert page.evaluate("sessionStorage.getItem('compute-advisor.api-key')") == key
            assert page.input_value("#api-key") == ""  # not left in the field either

            page.fill("input[name=gpus]", "64")
            page.fill("input[name=utilization]", "0.6")
            page.fill("input[name=horizon_years]", "3")
            page.fill("input[name=team_size]", "20")
            page.select_option("select[name=ops_team]", "basic")
            page.select_option("select[name=data_security]", "standard")
            page.fill("input[name=start_within_days]", "30")
            page.select_option("select[name=currency]", "CNY")
            page.fill("input[name=w_cost]", "2")
            page.fill("input[name=w_usability]", "1")
            page.click("#submit")
            page.wait_for_function(
                "document.querySelector('#ranking tbody tr') || document.querySelector('#status.error')",
                timeout=60_000,
            )
            assert not page.is_visible("#status.error"), page.text_content("#status")
            page.wait_for_function(
                "['#curve', '#tornado'].every(s => { const i = document.querySelector(s);"
                " return i.complete && i.naturalWidth > 0; })",
                timeout=60_000,
            )
            assert not errors, errors
            options = page.eval_on_selector_all("#ranking tbody tr", "rows => rows.map(r => r.dataset.option)")
            assert set(options) == {"self_built_cluster", "rented_gpu_instances", "ai_compute_platform"}
            assert page.text_content("#recommended")
            assert page.eval_on_selector_all("#reasons li", "items => items.length") > 0
            assert page.eval_on_selector_all("#breakdown tbody tr", "rows => rows.length") >= 3
            p_best = page.eval_on_selector_all("#ranking tbody tr td:last-child", "c => c.map(x => x.textContent)")
            assert all(x.endswith("%") for x in p_best), p_best
            assert page.evaluate("document.querySelector('#curve').naturalWidth") == 640

            shot = page.screenshot(full_page=True)
            variance, colours = _luminance_stats(shot)
            assert variance > 100 and colours > 20, (variance, colours)
            curve = page.locator("#curve").screenshot()
            assert _luminance_stats(curve)[0] > 50
            if os.environ.get("UPDATE_SCREENSHOT") == "1":
                (PROJECT_ROOT / "docs" / "explorer.png").write_bytes(shot)

            # the key went out as a header only, never in a URL
            api_calls = [r for r in requests if "/v1/" in r.url]
            assert len(api_calls) >= 7
            assert all(key not in r.url for r in requests)
            assert all(r.headers.get("x-api-key") == key for r in api_calls)

            # switch to Chinese: the page's words, and the charts asked for again in Chinese
            before = page.get_attribute("#curve", "src")
            page.click("button[data-lang=zh]")
            assert page.text_content("h1") == i18n.translate("explorer.title", "zh")
            assert page.text_content("#profile button[type=submit]") == i18n.translate("explorer.submit", "zh")
            page.wait_for_function(f"document.querySelector('#curve').src !== {json.dumps(before)}", timeout=60_000)
            chinese = [r for r in requests if r.url.endswith("/v1/cost-curves")][-1]
            assert chinese.headers.get("accept-language") == "zh-CN"
        finally:
            browser.close()
