"""The explorer's "My decisions" and "Enter a quote" (issue 37, for people), in a real headless Chromium
against a served instance of its own (an organisation's price book is written): a recommendation stored
through the API; a quote entered through the form, filled in from the list offer that priced the recommended
option, at half its price; My decisions shows that recommendation changed, with the option's cost change as
a signed percentage, and its drift as CSV; a refused quote is said on its field, a refused file by column and line;
a closed row leaves the rows in force; a key of no organisation reads the service's reason. The page's words
of these cards are in both catalogs. Skips (with the reason) where Chromium or Playwright is missing, as
``tests/test_explorer.py`` does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Server, create_key, make_client
from test_explorer import _boot, _browser, blocked_by_policy, wait_for

from app import i18n
from app.host.manager import create_option_host

SCOPES = ["catalog:read", "decisions:run", "recommendations:write", "prices:write"]
ORG = "explorer-buyers"
PROFILE = {
    "gpus": 64,
    "utilization": 0.6,
    "horizon_years": 3,
    "team_size": 20,
    "ops_team": "basic",
    "data_security": "standard",
    "start_within_days": 30,
    "currency": "CNY",
}
#: the page's words of these cards, looked up with a code the scripts build (``t(`quote.field.${name}`)``…)
BUILT = re.compile(r"t\(`((?:decisions|quote)\.[a-z_.]+)\.\$\{")


def test_the_cards_words_are_in_both_catalogs(databases: Any) -> None:
    with make_client(databases.new("sqlite"), api_key=None) as c:
        boot = _boot(c.get("/explorer").text)
        html = c.get("/explorer").text
        js = c.get("/explorer/assets/decisions.js").text + c.get("/explorer/assets/quotes.js").text
    en, zh = boot["messages"]["en"], boot["messages"]["zh"]
    used = set(re.findall(r'data-t="((?:decisions|quote)\.[^"]+)"', html))
    used |= set(re.findall(r'"((?:decisions|quote)\.[a-z_]+(?:\.[a-z_]+)*)"', js))
    assert len(used) > 60 and used <= set(en) and used <= set(zh), sorted(used - set(en))
    for prefix in BUILT.findall(js):  # every code a prefix builds, for every value it is built from
        assert any(k.startswith(prefix + ".") for k in en), prefix
    for vocab in ("price_unit", "source_quality", "residency", "billing"):
        assert {f"quote.value.{vocab}_{v}" for v in boot["vocab"][vocab]} <= set(en), vocab
    assert not re.search(r"https?://", js) and "localStorage" not in js
    # the quote form's numbers carry the seed row's bounds
    assert boot["bounds"]["quote"]["gpus_per_unit"] == {"step": 1, "min": 1, "max": 1024}
    assert boot["bounds"]["quote"]["low"] == {"step": "any", "min": 0}


def _says(page: Any, selector: str, text: str) -> None:
    """Wait until the element at ``selector`` says ``text``."""
    wait_for(page, f"document.querySelector({json.dumps(selector)})?.textContent === {json.dumps(text)}", 30_000)


@pytest.mark.slow
def test_a_quote_entered_in_the_explorer_shows_in_my_decisions(databases: Any, tmp_path: Any) -> None:
    sync_playwright, executable = _browser()  # type: ignore[misc]
    create_option_host()  # the options' names join this process's catalogs (test_explorer.py says why)
    url = databases.seeded("sqlite")
    _, key = create_key(url, SCOPES, name="buyer", org=ORG)
    _, loner = create_key(url, SCOPES, name="loner")  # of no organisation

    def tr(code: str, lang: str = "en", **params: Any) -> str:
        return i18n.translate(f"explorer.{code}", lang, **params)

    with Server(url, tmp_path / "server.log") as server:
        headers = {"X-API-Key": key}
        stored = httpx.post(f"{server.base}/v1/recommendations", json=PROFILE, headers=headers, timeout=60)
        assert stored.status_code == 201, stored.text
        rec = stored.json()
        chosen = rec["recommended_option"]
        offer = next(r["offer"] for r in rec["ranking"] if r["option"] == chosen)
        assert offer and offer["price_book"] == "list", offer

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 900}, locale="en-US", accept_downloads=True)
                errors: list[str] = []
                page.on("pageerror", lambda error: errors.append(str(error)))
                page.on("console", blocked_by_policy(errors))
                page.goto(f"{server.base}/explorer")
                page.fill("#api-key", key)
                page.click("#key-save")
                wait_for(page, "document.querySelector('#quote-option').options.length > 1", timeout=30_000)
                _says(page, "#quote-rows-status", tr("quote.rows_none"))

                # the list offer that priced the recommended option, chosen: its columns filled in
                page.select_option("#quote-provider", offer["provider"])
                page.select_option("#quote-option", chosen)
                wait_for(page, "document.querySelector('#quote-offer').options.length > 1", timeout=30_000)
                index = page.evaluate(
                    "([s, p, r, g]) => [...document.querySelectorAll('#quote-offer option')].find(o =>"
                    " o.dataset.subject === s && o.dataset.plan === p && o.dataset.region === r"
                    " && o.dataset.gpuModel === g).value",
                    [offer["subject"], offer["plan"], offer["region"], offer["gpu_model"] or "*"],
                )
                page.select_option("#quote-offer", index)
                form = "#quote"
                assert page.input_value(f"{form} input[name=subject]") == offer["subject"]
                assert page.input_value(f"{form} input[name=region]") == offer["region"]
                mode = float(page.input_value(f"{form} input[name=expected]"))
                half = round(mode / 2, 2)

                # a refused quote: the column's message on its field, the field as the form names it
                page.fill(f"{form} input[name=low]", str(half))
                page.fill(f"{form} input[name=expected]", str(half))
                page.fill(f"{form} input[name=high]", str(round(half / 2, 2)))
                page.fill(f"{form} input[name=source]", "Quote of the account team, by e-mail")
                with page.expect_response(lambda r: r.url.endswith("/v1/price-books/prices")) as refused:
                    page.click("#quote-submit")
                problem = refused.value.json()
                assert refused.value.status == 422 and problem["errors"], problem
                field = problem["errors"][0]["field"]
                assert field.startswith("prices.0."), problem
                column = field.removeprefix("prices.0.")
                note = page.locator(f"{form} label:has([name={column}]) .field-error")
                assert note.text_content() == problem["errors"][0]["message"]
                said = tr("field_error", field=tr(f"quote.field.{column}"), message=problem["errors"][0]["message"])
                assert tr("quote.failed", detail=said) in page.text_content("#quote-status.error")
                # edited, the field's error goes; the quote, now valid, is added
                page.fill(f"{form} input[name={column}]", str(half))
                assert note.count() == 0
                page.fill(f"{form} input[name=high]", str(half))
                with page.expect_response(lambda r: r.url.endswith("/v1/price-books/prices")) as added:
                    page.click("#quote-submit")
                assert added.value.status in (200, 201), added.value.text()
                wait_for(page, "document.querySelectorAll('#quote-rows tbody tr').length === 1", timeout=30_000)
                assert page.text_content("#quote-status") == tr("quote.added")
                assert page.locator(f"{form} .field-error").count() == 0
                row_id = page.get_attribute("#quote-rows tbody tr", "data-id")

                # a refused file: said by column and line, nothing stored
                header = "provider,option,item,subject,gpu_model,plan,unit,gpus_per_unit,low,high,currency,region,"
                csv = (
                    f"{header}valid_from,source,source_quality\r\n"
                    f"{offer['provider']},{chosen},x,y,*,*,per_gpu_hour,,5,1,CNY,CN,2026-01-01,a quote,verified\r\n"
                )
                page.set_input_files("#quote-file", {"name": "bad.csv", "mimeType": "text/csv", "buffer": csv.encode()})
                page.click("#quote-upload-submit")
                wait_for(page, "document.querySelector('#quote-upload-status.error')", timeout=30_000)
                sent = {**headers, "Content-Type": "text/csv"}
                problem = httpx.post(f"{server.base}/v1/price-books/prices", content=csv, headers=sent).json()
                said = "; ".join(
                    tr("field_error", field=e["field"].removeprefix("prices.0."), message=e["message"])
                    for e in problem["errors"]
                )
                assert "line 2" in said, said  # the message says where in the file
                assert page.text_content("#quote-upload-status") == tr("quote.upload_failed", detail=said)
                book = httpx.get(f"{server.base}/v1/price-books/prices", headers=headers).json()
                assert [r["id"] for r in book["items"]] == [int(row_id or 0)]

                # my decisions: the recommendation changed, the option's cost down by the API's fraction
                page.click("#decisions-load")
                row = f"#decisions tbody tr[data-id='{rec['id']}']"
                wait_for(page, f'document.querySelector("{row}")?.dataset.changed', timeout=60_000)
                drift = httpx.get(f"{server.base}/v1/recommendations/{rec['id']}/drift", headers=headers).json()
                assert drift["changed"] is True
                assert page.get_attribute(row, "data-changed") == "yes"
                change = drift["cost_changes"][chosen]["change"]
                assert change < 0, drift["cost_changes"]
                line = page.locator(f"{row} td.costs div[data-option={chosen}]")
                assert float(line.get_attribute("data-change") or "nan") == pytest.approx(change)
                assert f"{change * 100:+.1f}%" in line.text_content()
                assert page.text_content(f"{row} .marker") == f"⚠ {tr('decisions.changed_yes')}"
                with page.expect_download() as download:
                    page.click(f"{row} .drift-csv")
                assert download.value.suggested_filename.endswith(".csv")
                assert Path(download.value.path()).read_text(encoding="utf-8-sig").startswith("option,")

                # the words again in Chinese, without asking again
                page.click("button[data-lang=zh]")
                assert page.text_content("#decisions thead th:nth-child(5)") == tr("decisions.column.costs", "zh")
                assert page.text_content(f"{row} .marker") == f"⚠ {tr('decisions.changed_yes', 'zh')}"
                page.click("button[data-lang=en]")

                # closed: the row leaves the rows in force (it is kept: shown with the closed ones)
                page.click(f"#quote-rows tr[data-id='{row_id}'] .quote-close")
                _says(page, "#quote-rows-status", tr("quote.closed_done", id=row_id))
                assert page.locator("#quote-rows tbody tr").count() == 0
                page.check("#quote-closed")
                assert page.get_attribute(f"#quote-rows tr[data-id='{row_id}']", "data-in-force") == "no"

                # a key of no organisation: the service's reason
                page.fill("#api-key", loner)
                page.click("#key-save")
                wait_for(page, "document.querySelector('#quote-rows-status.error')", timeout=30_000)
                answer = httpx.get(f"{server.base}/v1/price-books/prices", headers={"X-API-Key": loner})
                assert answer.status_code == 403 and answer.json()["type"].endswith(":no-organisation")
                detail = answer.json()["detail"]
                assert page.text_content("#quote-rows-status") == tr("quote.rows_failed", detail=detail)
                assert not errors, errors
            finally:
                browser.close()
