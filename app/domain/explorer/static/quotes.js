// compute-advisor explorer, "Enter a quote": one private price row of the organisation's price book (its
// columns those of the seed files' price row, chosen from the catalog or filled in from a list offer), many
// rows as a CSV or XLSX file, and the organisation's rows with a "Close" button each. A refused column is
// said next to its field (the API names it prices.0.<column>). Uses explorer.js (t, el, $, api, request, …).
"use strict";

const BOOK_PRICES = "/v1/price-books/prices";
// the columns sent as text and as numbers (empty: not sent, the seed row's default)
const QUOTE_TEXT = ["provider", "option", "item", "subject", "gpu_model", "plan", "unit", "currency", "region",
  "valid_from", "valid_to", "interconnect", "source", "source_quality", "residency", "billing", "retrieved_on", "notes"];
const QUOTE_NUMBERS = ["gpus_per_unit", "low", "expected", "high", "capacity_gpus", "min_gpus", "lead_time_days_low",
  "lead_time_days_high", "max_term_days", "min_kw"];
// a list offer's columns a quote starts from (its price: the source's own figure, ``mode``, as expected)
const FROM_OFFER = ["item", "subject", "gpu_model", "plan", "unit", "gpus_per_unit", "low", "high", "currency", "region",
  "interconnect", "residency", "billing", "capacity_gpus", "min_gpus", "lead_time_days_low", "lead_time_days_high",
  "max_term_days", "min_kw"];
const quotes = { options: [], offers: [], rows: [], rowsLoaded: false, regions: false };

const quoteInput = (name) => $("#quote").querySelector(`[name="${name}"]`);
const today = () => { const d = new Date(); return new Date(d - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 10); };
const unitWords = (unit) => (BOOT.messages.en[`quote.value.price_unit_${unit}`] ? t(`quote.value.price_unit_${unit}`) : unit);
const providerName = (key) => ((state.catalog && state.catalog.providers.find((p) => p.key === key)) || { name: key }).name;

// a refused column of the form: its input and label; of a file: its column as the file names it (the
// service's message says the file's line or row)
FIELD_TARGETS.quote = (field) => {
  const name = String(field).replace(/^prices\.\d+\./, "");
  const input = quoteInput(name);
  return input ? { input, label: t(`quote.field.${name}`) } : null;
};
FIELD_TARGETS.upload = (field) => {
  const found = /^prices\.\d+\.(.+)$/.exec(String(field));
  return found ? { input: null, label: found[1] } : null;
};

// ---- the form's choices, from the catalog ----------------------------------------------------------------

// a select's choices: ``first`` (value "") if given, then [value, label, dataset] each; the choice kept
function fillSelect(select, first, entries) {
  const chosen = select.value;
  select.replaceChildren(...(first ? [el("option", { value: "", textContent: first })] : []),
    ...entries.map(([value, label, dataset]) => el("option", { value, textContent: label, dataset })));
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
}

function fillChoices() {
  const catalog = state.catalog || { gpus: [], providers: [] };
  fillSelect($("#quote-provider"), t("quote.choose"), catalog.providers.map((p) => [p.key, p.name]));
  fillSelect($("#quote-option"), t("quote.choose"), quotes.options.map((o) => [o.key, optionName(o.key, o.name)]));
  fillSelect($("#quote-gpu"), null, [["*", t("quote.any")], ...catalog.gpus.map((g) => [g.key, `${g.vendor} ${g.name}`])]);
  const option = quotes.options.find((o) => o.key === $("#quote-option").value);
  $("#quote-plans").replaceChildren(...((option && option.price_plans) || []).map((p) => el("option", { value: p })));
  fillOffers();
}

async function catalogLoaded() {
  try {
    if (!quotes.options.length) quotes.options = (await api("/v1/options")).items;
    if (!quotes.regions) {
      const regions = await api("/v1/regions?limit=500");
      $("#quote-regions").replaceChildren(...regions.items.map((r) => el("option", { value: r.key, label: r.name })));
      quotes.regions = true;
    }
  } catch (error) {
    setStatus("#quote-status", "catalog_failed", { detail: problemText(error) }, true);
  }
  fillChoices();
  if (!quotes.rowsLoaded) await loadRows();
}

// the list offers of the provider and option chosen, valid today: one fills in the form
async function loadOffers() {
  const [provider, option] = [$("#quote-provider").value, $("#quote-option").value];
  quotes.offers = [];
  if (provider && option && apiKey()) {
    try {
      const query = new URLSearchParams({ provider, option, as_of: today(), limit: "500" });
      quotes.offers = (await api(`/v1/offers?${query}`)).items;
    } catch (error) {
      setStatus("#quote-status", "catalog_failed", { detail: problemText(error) }, true);
    }
  }
  fillChoices();
}

function fillOffers() {
  const ready = $("#quote-provider").value && $("#quote-option").value;
  const first = !ready ? t("quote.from_none") : quotes.offers.length
    ? t("quote.from_pick", { count: quotes.offers.length }) : t("quote.from_empty");
  fillSelect($("#quote-offer"), first, quotes.offers.map((o, i) => [String(i), t("quote.offer_label", {
    subject: o.subject, plan: o.plan, region: o.region, price: figure(o.mode ?? o.expected), currency: o.currency, unit: unitWords(o.unit),
  }), { subject: o.subject, plan: o.plan, region: o.region, gpuModel: o.gpu_model }]));
  $("#quote-items").replaceChildren(...[...new Set(quotes.offers.map((o) => o.item))].map((i) => el("option", { value: i })));
}

function quoteFromOffer() {
  const offer = quotes.offers[Number($("#quote-offer").value)];
  if (!$("#quote-offer").value || !offer) return;
  clearFieldErrors("quote");
  for (const name of FROM_OFFER) {
    const value = offer[name];
    quoteInput(name).value = value == null ? "" : String(value);
  }
  quoteInput("expected").value = String(offer.mode ?? offer.expected);
  quoteInput("valid_from").value = today();
  for (const name of ["valid_to", "source", "notes", "retrieved_on"]) quoteInput(name).value = "";
  setStatus("#quote-status", "quote.from_done", { subject: offer.subject });
}

// ---- one row, many rows ----------------------------------------------------------------------------------

function quoteRow() {
  const row = {};
  for (const name of QUOTE_TEXT) {
    const value = quoteInput(name).value.trim();
    if (value) row[name] = value;
  }
  for (const name of QUOTE_NUMBERS) {
    const value = quoteInput(name).value.trim();
    if (value) row[name] = Number(value);
  }
  return row;
}

// how many rows an upload added (the answer's ``prices``: the rows stored, one per region a row lists)
const added = (answer, sent) => (answer && Array.isArray(answer.prices) ? answer.prices.length : sent);

async function submitQuote(event) {
  event.preventDefault();
  if ($("#api-key").value.trim()) useKey($("#api-key").value.trim());
  if (!apiKey()) {
    setStatus("#quote-status", "key_missing", {}, true);
    return;
  }
  setStatus("#quote-status", "quote.adding");
  $("#quote-submit").disabled = true;
  try {
    const answer = await api(BOOK_PRICES, { body: { prices: [quoteRow()] } });
    clearFieldErrors("quote");
    setStatus("#quote-status", "quote.added", { count: added(answer, 1) });
    await priceBookChanged();
  } catch (error) {
    showFieldErrors(error, "quote", "#quote-status");
    // a refused column among the optional ones: shown
    if ($("#quote-more").querySelector(".field-error")) $("#quote-more").open = true;
    setStatus("#quote-status", "quote.failed", { detail: problemText(error, "quote") }, true);
  } finally {
    $("#quote-submit").disabled = false;
  }
}

async function uploadQuotes(event) {
  event.preventDefault();
  if (!apiKey()) {
    setStatus("#quote-upload-status", "key_missing", {}, true);
    return;
  }
  const file = $("#quote-file").files[0];
  if (!file) {
    setStatus("#quote-upload-status", "quote.upload_missing", {}, true);
    return;
  }
  const kind = /\.xlsx$/i.test(file.name) ? XLSX : /\.csv$/i.test(file.name) ? "text/csv" : null;
  if (!kind) {
    setStatus("#quote-upload-status", "quote.upload_type", { file: file.name }, true);
    return;
  }
  setStatus("#quote-upload-status", "quote.uploading", { file: file.name });
  $("#quote-upload-submit").disabled = true;
  try {
    const answer = await api(BOOK_PRICES, { file, contentType: kind });
    setStatus("#quote-upload-status", "quote.uploaded", { count: added(answer, "?"), file: file.name });
    await priceBookChanged();
  } catch (error) {
    setStatus("#quote-upload-status", "quote.upload_failed", { detail: problemText(error, "upload") }, true);
  } finally {
    $("#quote-upload-submit").disabled = false;
  }
}

// ---- the organisation's rows -----------------------------------------------------------------------------

// the open rows (those in force, and those from a later day), or every row with the closed ones

async function loadRows() {
  if (!apiKey()) return;
  setStatus("#quote-rows-status", "quote.rows_loading");
  try {
    const closed = $("#quote-closed").checked;
    const page = await api(`${BOOK_PRICES}?limit=500&include_closed=${closed}`);
    quotes.rows = page.items;
    quotes.rowsLoaded = true;
    renderRows();
  } catch (error) {
    quotes.rows = [];
    quotes.rowsLoaded = true;
    renderRows();
    setStatus("#quote-rows-status", "quote.rows_failed", { detail: problemText(error) }, true);
  }
}

function priceText(row) {
  const expected = row.expected ?? row.mode;
  const price = expected == null ? `${figure(row.low)}–${figure(row.high)}` : range({ ...row, expected });
  return t("quote.price", { price, currency: row.currency, unit: unitWords(row.unit) });
}

function renderRows() {
  const shown = quotes.rows;
  $("#quote-rows thead").replaceChildren(el("tr", {},
    ...["offer", "price", "valid", "state", "source", ""].map((c) => el("th", {}, c ? t(`quote.column.${c}`) : ""))));
  $("#quote-rows tbody").replaceChildren(...shown.map((r) => {
    const offer = [providerName(r.provider), optionName(r.option), r.gpu_model, r.subject, r.plan, r.region]
      .filter((p) => p && p !== "*").join(" · ");
    const valid = r.valid_to ? t("quote.valid_range", { from: r.valid_from, to: r.valid_to }) : t("quote.valid_open", { from: r.valid_from });
    const standing = r.closed_on ? t("quote.closed", { date: r.closed_on }) : t(r.in_force ? "quote.in_force" : "quote.not_in_force");
    const close = el("button", { type: "button", className: "quote-close", textContent: t("quote.close") });
    close.addEventListener("click", () => closeRow(r.id));
    return el("tr", { dataset: { id: String(r.id), inForce: r.in_force ? "yes" : "no" } },
      el("td", {}, offer), el("td", { className: "num" }, priceText(r)), el("td", {}, valid),
      el("td", { className: r.in_force ? "" : "hint" }, standing), el("td", { className: "hint" }, r.source),
      el("td", {}, r.closed_on ? "" : close));
  }));
  $("#quote-rows").hidden = !shown.length;
  const inForce = quotes.rows.filter((r) => r.in_force).length;
  setStatus("#quote-rows-status", shown.length ? "quote.rows_loaded" : "quote.rows_none",
    { count: inForce, total: quotes.rows.length });
}

async function closeRow(id) {
  setStatus("#quote-rows-status", "quote.closing", { id });
  try {
    await api(`${BOOK_PRICES}/${encodeURIComponent(id)}`, { method: "DELETE" });
    await priceBookChanged();
    setStatus("#quote-rows-status", "quote.closed_done", { id });
  } catch (error) {
    setStatus("#quote-rows-status", "quote.close_failed", { id, detail: problemText(error) }, true);
  }
}

// the book changed: its rows again, and what the decisions card shows of it
async function priceBookChanged() {
  await loadRows();
  document.dispatchEvent(new CustomEvent("explorer:book"));
}

document.addEventListener("DOMContentLoaded", () => {
  quoteInput("valid_from").value = today();
  quoteInput("source_quality").value = "verified";
  fillChoices();
  $("#quote").addEventListener("submit", submitQuote);
  $("#quote").addEventListener("input", fieldEdited);
  $("#quote").addEventListener("change", fieldEdited);
  $("#quote-provider").addEventListener("change", loadOffers);
  $("#quote-option").addEventListener("change", loadOffers);
  $("#quote-offer").addEventListener("change", quoteFromOffer);
  $("#quote-upload").addEventListener("submit", uploadQuotes);
  $("#quote-closed").addEventListener("change", loadRows);
  $("#quote-refresh").addEventListener("click", loadRows);
});
document.addEventListener("explorer:catalog", catalogLoaded);
document.addEventListener("explorer:language", () => {
  fillChoices();
  if (quotes.rowsLoaded) renderRows();
});
document.addEventListener("explorer:key", () => { // another key: another organisation's rows
  Object.assign(quotes, { offers: [], rows: [], rowsLoaded: false });
  renderRows();
  clearStatus("#quote-rows-status");
  fillChoices();
});
