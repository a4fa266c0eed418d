// compute-advisor explorer: a profile form, then the ranking, reasons, cost breakdown, charts and P(best);
// a training run, then which GPU model on which option (the candidates, their chart and spreadsheets);
// a demand over time (steady, phases or growth) and owned GPUs, then the capacity plan's portfolios.
// decisions.js: the organisation's stored recommendations and their drift; quotes.js: its private prices.
// The API key stays in this tab's sessionStorage and goes out only as the X-API-Key header.
// What the other scripts hear of: "explorer:catalog" (the GPU models and providers loaded, in
// state.catalog), "explorer:language" (the page's words changed), "explorer:key" (a key used or forgotten).
"use strict";

const BOOT = JSON.parse(document.getElementById("boot").textContent);
const KEY_STORE = "compute-advisor.api-key";
const LANG_STORE = "compute-advisor.lang";
const TAGS = { en: "en", zh: "zh-CN" };
const DRAWS = 1000;
const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const state = {
  lang: initialLanguage(), last: null, asked: null, planned: null, trained: null, urls: {}, statuses: {}, catalog: null,
};
const announce = (name) => document.dispatchEvent(new CustomEvent(`explorer:${name}`));

function initialLanguage() {
  const kept = sessionStorage.getItem(LANG_STORE);
  if (kept && BOOT.languages.includes(kept)) return kept;
  for (const tag of navigator.languages || [navigator.language || ""]) {
    const primary = String(tag).toLowerCase().split("-")[0];
    if (BOOT.languages.includes(primary)) return primary;
  }
  return BOOT.default_language;
}

function t(code, params) {
  const messages = BOOT.messages[state.lang] || {};
  let text = messages[code] ?? BOOT.messages[BOOT.default_language][code] ?? code;
  for (const [name, value] of Object.entries(params || {})) text = text.split(`{${name}}`).join(String(value));
  return text;
}

const $ = (selector) => document.querySelector(selector);
const el = (tag, props, ...children) => {
  const node = document.createElement(tag);
  const { dataset, style, ...rest } = props || {};
  Object.assign(node, rest);
  Object.assign(node.dataset, dataset || {});
  if (style) node.style.cssText = style;
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
};

// a count or a length, with as many decimals as it has (up to ``digits``)
function number(value, digits = 2) {
  return new Intl.NumberFormat(TAGS[state.lang], { maximumFractionDigits: digits }).format(value);
}
// a figure of a table: always ``digits`` decimals, so that a figure, its range and its column align
function figure(value, digits = 2) {
  return new Intl.NumberFormat(TAGS[state.lang], { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(value);
}
// a range as "expected (low–high)", the three with the same decimals; one value once when the three print alike
function range(r, digits = 2) {
  if (!r) return "–";
  const [low, expected, high] = [r.low, r.expected, r.high].map((v) => figure(v, digits));
  return low === high ? expected : `${expected} (${low}–${high})`;
}
// an amount's cell: the expected figure, its low–high range beneath (unless the range is one value)
function amountCell(r) {
  if (!r) return el("td", { className: "num" }, "–");
  const [low, high] = [figure(r.low, 0), figure(r.high, 0)];
  return el("td", { className: "num" }, figure(r.expected, 0),
    ...(low === high ? [] : [el("br"), el("small", {}, `${low}–${high}`)]));
}
const percent = (share) => `${figure(share * 100, 1)}%`;
const scrolling = (table) => el("div", { className: "table-scroll" }, table);
const optionName = (key, fallback) => (BOOT.messages.en[`option.${key}`] ? t(`option.${key}`) : fallback || key);

// a status line: its message code and parameters are kept, so that a language switch writes it again
function setStatus(id, code, params = {}, error = false) {
  state.statuses[id] = { code, params, error };
  const node = $(id);
  node.textContent = t(code, params);
  node.classList.toggle("error", error);
}

function clearStatus(id) {
  delete state.statuses[id];
  const node = $(id);
  node.textContent = "";
  node.classList.remove("error");
}

// ---- words of the page ---------------------------------------------------------------------------

function applyLanguage() {
  document.documentElement.lang = TAGS[state.lang];
  document.title = t("title");
  for (const node of document.querySelectorAll("[data-t]")) node.textContent = t(node.dataset.t);
  for (const button of document.querySelectorAll("[data-lang]")) {
    button.setAttribute("aria-pressed", String(button.dataset.lang === state.lang));
  }
  for (const select of document.querySelectorAll("select[data-vocab]")) {
    const vocab = select.dataset.vocab;
    const chosen = select.value;
    select.replaceChildren();
    if (select.dataset.auto) select.append(el("option", { value: "", textContent: t("auto") }));
    if (select.dataset.none) select.append(el("option", { value: "", textContent: t(select.dataset.none) }));
    for (const value of BOOT.vocab[vocab]) {
      const code = `${select.dataset.words || "value"}.${vocab}_${value}`;
      const label = BOOT.messages.en[code] ? t(code) : value;
      select.append(el("option", { value, textContent: label }));
    }
    if (chosen !== undefined && [...select.options].some((o) => o.value === chosen)) select.value = chosen;
  }
  const first = $("#gpu-model").options[0];
  if (first && first.value === "") first.textContent = t("default_model");
  $("#curve").alt = t("chart_alt_curve");
  $("#tornado").alt = t("chart_alt_tornado");
  $("#capacity-chart").alt = t("chart_alt_capacity");
  $("#gpu-chart").alt = t("chart_alt_gpu");
  const none = $("#owned-model").options[0];
  if (none && none.value === "") none.textContent = t("owned_none");
  const anyCountry = $("#buyer-country").options[0];
  if (anyCountry && anyCountry.value === "") anyCountry.textContent = t("buyer_country_none");
  for (const button of document.querySelectorAll("#phases .phase-remove")) button.title = t("phase_remove");
  for (const [id, { code, params, error }] of Object.entries(state.statuses)) setStatus(id, code, params, error);
}

// ---- the API ---------------------------------------------------------------------------------------

function apiKey() {
  return sessionStorage.getItem(KEY_STORE) || "";
}

// a refused request: its problem's detail, the fields the problem names and each field's message
class Problem extends Error {
  constructor(detail, fields, errors = [], status = 0) {
    super(detail);
    this.fields = [...new Set(fields.filter(Boolean))];
    this.errors = errors.filter((e) => e && e.field);
    this.status = status;
  }
}

// ``body``: sent as JSON; ``file``: sent as it is, with its ``contentType``; ``method``: POST when either is
// given, GET else (or as given: DELETE)
async function request(path, { body, file, contentType, method, accept = "application/json" } = {}) {
  const headers = { "X-API-Key": apiKey(), Accept: accept, "Accept-Language": TAGS[state.lang] };
  const init = { method: method || (body === undefined && file === undefined ? "GET" : "POST"), headers };
  if (file !== undefined) {
    headers["Content-Type"] = contentType;
    init.body = file;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) {
    let detail = `${response.status} ${response.statusText}`;
    let fields = [];
    let errors = [];
    try {
      const problem = await response.json();
      detail = problem.detail || problem.title || detail;
      errors = problem.errors || [];
      fields = [problem.field, ...errors.map((e) => e.field)];
    } catch (_) { /* not a problem document */ }
    throw new Problem(detail, fields, errors, response.status);
  }
  return response;
}

async function api(path, options = {}) {
  const response = await request(path, options);
  if (response.status === 204) return null;
  return (options.accept || "application/json") === "application/json" ? response.json() : response.blob();
}

// a problem's words: each field's message after the field's name as the form shows it ("Phase 2, GPUs: …");
// without messages per field, the detail, naming its field when the detail does not already. ``source``: what
// was asked (``fieldTarget``)
function problemText(error, source) {
  if (error.errors && error.errors.length) {
    return error.errors.map((e) => t("field_error", { field: fieldLabel(e.field, source), message: fieldMessage(e, source) })).join("; ");
  }
  const fields = (error.fields || []).filter((f) => !error.message.includes(f));
  return fields.length ? `${fields.join(", ")}: ${error.message}` : error.message;
}

// ---- errors on the fields they are about ------------------------------------------------------------

// the page's field a problem's field names: `profiles.0.gpus` (a batch's profile) and `gpus` are the GPUs
// input, `demand.1.gpus` the GPUs of the editor's second phase, `owned.0.count` the count of owned GPUs; a
// training plan's (``source`` "gpu") run fields are those of the "which GPU" form, `gpu_models.0` its list;
// null for a field the page does not ask for. Another script's form names its own (``FIELD_TARGETS``)
const FIELD_TARGETS = {};
function fieldTarget(field, source) {
  if (FIELD_TARGETS[source]) return FIELD_TARGETS[source](field);
  const path = String(field).replace(/^profiles\.\d+\./, "").split(".");
  const profile = $("#profile").elements;
  const capacity = $("#capacity").elements;
  const [head, second, third] = path;
  const run = $("#which-gpu").elements[head];
  if (source === "gpu" && run && run.name === head) {
    return { input: run, label: t(head === "gpus" ? "field.run_gpus" : `field.${head}`) };
  }
  if (head === "demand") {
    if (/^\d+$/.test(second || "")) {
      const row = $("#phases tbody").rows[Number(second)];
      const input = row && third && row.querySelector(`[data-col=${third}]`);
      const code = third === "largest_job_gpus" || third === "months" ? `field.${third}` : `field.phase_${third}`;
      return input ? { input, label: t("phase_field", { phase: Number(second) + 1, field: t(code) }) } : null;
    }
    if (second === "start_gpus" || second === "growth_per_year") return { input: capacity[second], label: t(`field.${second}`) };
    if (second === "utilization") return { input: profile.utilization, label: t("field.utilization") };
    const editor = demandKind() === "growth" ? $("#growth-editor") : $("#phases-editor");
    return { input: null, box: editor, label: t("field.demand") };
  }
  if (head === "owned") {
    const name = { gpu_model: "owned_model", count: "owned_count", age_years: "owned_age", purchase_date: "owned_age" }[third];
    return name ? { input: capacity[name], label: t("owned_field", { field: t(`field.${name}`) }) } : null;
  }
  if (head === "weights") {
    return second ? { input: profile[`w_${second}`], label: t(`field.weight_${second}`) } : null;
  }
  const input = profile[head];
  return input && input.name === head ? { input, label: t(`field.${head}`) } : null;
}

const fieldLabel = (field, source) => (fieldTarget(field, source) || { label: field }).label;

// the message of a refused field: the page's words when the value typed is outside the input's bounds
// (the API checks the same bounds and says so in English), else the service's
function fieldMessage(e, source) {
  const target = fieldTarget(e.field, source);
  const input = target && target.input;
  if (input && input.type === "number" && input.value.trim() !== "") {
    const { min, max, step } = input;
    const v = Number(input.value);
    if ((min !== "" && v < Number(min)) || (max !== "" && v > Number(max))) {
      return t("error_range", { min: number(Number(min), 3), max: number(Number(max), 3) });
    }
    if (step === "1" && !Number.isInteger(v)) return t("error_whole");
  }
  return e.message;
}

// the errors of a refusal, each on its field (in its label, or under the phase's input); ``source`` is what
// was asked ("ask": the comparison, "plan": the capacity plan), whose next answer clears them
function showFieldErrors(error, source, statusId) {
  clearFieldErrors(source);
  for (const e of error.errors || []) {
    const target = fieldTarget(e.field, source);
    if (!target) continue;
    const box = target.box || target.input.closest("label") || target.input.parentElement;
    if (target.input) target.input.setAttribute("aria-invalid", "true");
    box.append(el("small", {
      className: "field-error",
      dataset: { field: e.field, source, status: statusId },
      textContent: fieldMessage(e, source),
    }));
  }
}

function clearFieldErrors(source) {
  for (const node of document.querySelectorAll(`.field-error[data-source=${source}]`)) node.remove();
  for (const input of document.querySelectorAll("[aria-invalid=true]")) {
    const box = input.closest("label") || input.parentElement;
    if (!box.querySelector(".field-error")) input.removeAttribute("aria-invalid");
  }
}

// a field edited: its errors go, and the refusal's status line with the last of them
function fieldEdited(event) {
  const input = event.target;
  if (!input || input.getAttribute("aria-invalid") !== "true") return;
  input.removeAttribute("aria-invalid");
  const box = input.closest("label") || input.parentElement;
  const statuses = new Set();
  for (const node of box.querySelectorAll(".field-error")) {
    statuses.add(node.dataset.status);
    node.remove();
  }
  if (input.dataset.col) { // a phase: the whole demand's error too, whose months or GPUs the phase changes
    for (const node of $("#phases-editor").querySelectorAll(":scope > .field-error")) {
      statuses.add(node.dataset.status);
      node.remove();
    }
  }
  for (const id of statuses) {
    const left = document.querySelectorAll(`.field-error[data-status="${id}"]`).length;
    if (!left && state.statuses[id] && state.statuses[id].error) clearStatus(id);
  }
}

// the number inputs' bounds, as the API checks them (the request models' constraints, in the boot data)
function applyBounds() {
  const set = (input, bounds) => {
    if (!input || !bounds) return;
    for (const attr of ["min", "max", "step"]) if (bounds[attr] !== undefined) input.setAttribute(attr, String(bounds[attr]));
  };
  for (const input of $("#profile").querySelectorAll("input[type=number]:not([data-bounds])")) {
    set(input, BOOT.bounds.profile[input.name]);
  }
  for (const input of document.querySelectorAll("input[data-bounds]")) {
    const [group, name] = input.dataset.bounds.split(".");
    set(input, BOOT.bounds[group][name]);
  }
}

async function loadCatalog() {
  if (!apiKey()) return;
  setStatus("#catalog-status", "catalog_loading");
  try {
    const [gpus, providers, countries] = await Promise.all([
      api("/v1/gpus?limit=500"), api("/v1/providers?limit=500"), api("/v1/regions?kind=country&limit=500"),
    ]);
    const model = $("#gpu-model");
    const chosenModel = model.value;
    model.replaceChildren(el("option", { value: "", textContent: t("default_model") }));
    for (const g of gpus.items) model.append(el("option", { value: g.key, textContent: `${g.vendor} ${g.name}` }));
    model.value = chosenModel;
    const owned = $("#owned-model");
    const chosenOwned = owned.value;
    owned.replaceChildren(el("option", { value: "", textContent: t("owned_none") }));
    for (const g of gpus.items) owned.append(el("option", { value: g.key, textContent: `${g.vendor} ${g.name}` }));
    owned.value = chosenOwned;
    const compared = $("#gpu-models");
    const chosenModels = new Set([...compared.selectedOptions].map((o) => o.value));
    compared.replaceChildren();
    for (const g of gpus.items) {
      compared.append(el("option", { value: g.key, textContent: `${g.vendor} ${g.name}`, selected: chosenModels.has(g.key) }));
    }
    const list = $("#providers");
    const chosen = new Set([...list.selectedOptions].map((o) => o.value));
    list.replaceChildren();
    for (const p of providers.items) {
      list.append(el("option", { value: p.key, textContent: p.name, selected: chosen.has(p.key) }));
    }
    const buyer = $("#buyer-country");
    const chosenCountry = buyer.value;
    buyer.replaceChildren(el("option", { value: "", textContent: t("buyer_country_none") }));
    for (const c of countries.items) buyer.append(el("option", { value: c.key, textContent: `${c.name} (${c.key})` }));
    buyer.value = chosenCountry;
    state.catalog = { gpus: gpus.items, providers: providers.items };
    setStatus("#catalog-status", "catalog_loaded", { gpus: gpus.items.length, providers: providers.items.length });
    announce("catalog");
  } catch (error) {
    setStatus("#catalog-status", "catalog_failed", { detail: error.message }, true);
  }
}

// ---- the profile -------------------------------------------------------------------------------------

function profile() {
  const form = $("#profile");
  const value = (name) => form.elements[name].value.trim();
  const body = {
    gpus: Number(value("gpus")),
    utilization: Number(value("utilization")),
    horizon_years: Number(value("horizon_years")),
    team_size: Number(value("team_size")),
    ops_team: value("ops_team"),
    data_security: value("data_security"),
    start_within_days: Number(value("start_within_days")),
    currency: value("currency"),
  };
  for (const name of ["rental_plan", "as_of", "gpu_model", "buyer_country"]) if (value(name)) body[name] = value(name);
  for (const name of ["capex_budget", "delay_cost_per_day", "largest_job_gpus", "preemptible_share"]) {
    if (value(name)) body[name] = Number(value(name));
  }
  const providers = [...form.elements.providers.selectedOptions].map((o) => o.value);
  if (providers.length) body.providers = providers;
  const regions = value("regions").split(",").map((r) => r.trim()).filter(Boolean);
  if (regions.length) body.regions = regions;
  const weights = {};
  for (const d of ["cost", "efficiency", "stability", "usability"]) if (value(`w_${d}`)) weights[d] = Number(value(`w_${d}`));
  if (Object.keys(weights).length) body.weights = weights;
  return body;
}

function comparisonOf(body) {
  const fields = ["gpus", "utilization", "horizon_years", "rental_plan", "currency", "as_of", "gpu_model", "providers", "regions",
    "buyer_country", "largest_job_gpus", "preemptible_share"];
  return Object.fromEntries(fields.filter((f) => f in body).map((f) => [f, body[f]]));
}

async function submit(event) {
  event.preventDefault();
  if ($("#api-key").value.trim()) useKey($("#api-key").value.trim()); // typed but not yet "used": use it
  if (!apiKey()) {
    setStatus("#status", "key_missing", {}, true);
    $("#api-key").focus();
    return;
  }
  await ask(profile());
}

// every answer the page shows, for one profile, in the page's language (a language switch asks again)
async function ask(body) {
  state.asked = body;
  setStatus("#status", "working");
  $("#submit").disabled = true;
  try {
    const [evaluations, comparison, uncertainty, curves] = await Promise.all([
      api("/v1/evaluations", { body: { profiles: [body], detail: "full" } }),
      api("/v1/price-comparisons", { body: comparisonOf(body) }),
      api("/v1/uncertainty", { body: { ...body, draws: DRAWS } }),
      api("/v1/cost-curves", { body }),
    ]);
    state.last = { body, evaluation: evaluations.evaluations[0], comparison, uncertainty, curves };
    clearFieldErrors("ask");
    render(state.last);
    $("#results").hidden = false;
    setStatus("#status", "done", { version: evaluations.knowledge_version });
    await loadCharts(body);
  } catch (error) {
    clearConstraints();
    showFieldErrors(error, "ask", "#status");
    setStatus("#status", "failed", { detail: problemText(error) }, true);
  } finally {
    $("#submit").disabled = false;
  }
}

async function loadCharts(body) {
  const charts = [["#curve", "/v1/cost-curves"], ["#tornado", "/v1/sensitivity"]];
  await Promise.all(charts.map(async ([id, path]) => {
    const blob = await api(path, { body, accept: "image/svg+xml" });
    if (state.urls[id]) URL.revokeObjectURL(state.urls[id]);
    state.urls[id] = URL.createObjectURL(blob);
    $(id).src = state.urls[id];
  }));
}

// ---- the answer --------------------------------------------------------------------------------------

// a ranking entry the plugin could not assess (no offer, an error): its zeros are no scores
const notAssessed = (r) => Boolean(r.error) || r.cost == null
  || (r.reason_codes || []).some((c) => c.code === "reason.not_assessed");

// which field of the form each hard constraint of an offer comes from
const CONSTRAINT_FIELDS = {
  "violation.lead_time": "start_within_days",
  "violation.capacity": "gpus",
  "violation.residency": "data_security",
  "violation.spot_capacity": "rental_plan",
  "violation.horizon_before_install": "horizon_years",
  "violation.capex_budget": "capex_budget",
};

function clearConstraints() {
  for (const node of document.querySelectorAll(".constraint")) node.remove();
}

// next to the field that caused it, each constraint that makes an option infeasible
function showConstraints(evaluation, names) {
  clearConstraints();
  const form = $("#profile");
  for (const r of evaluation.ranking) {
    (r.reason_codes || []).forEach((c, i) => {
      const violation = c.params && c.params.reason;
      const field = violation && CONSTRAINT_FIELDS[violation.code];
      if (!field || !form.elements[field]) return;
      const code = `constraint.${violation.code.slice("violation.".length)}`;
      // the page's sentence from the violation's plain parameters (a nested one, such as the offer's name,
      // it does not need); the reason's own words when the sentence would lack one
      const plain = Object.entries(violation.params || {}).filter(([, v]) => typeof v === "string");
      const own = BOOT.messages.en[code] && t(code, { ...Object.fromEntries(plain), option: names[r.option] });
      const text = own && !/\{[a-z_]+\}/.test(own)
        ? own
        : t("constraint.other", { option: names[r.option], reason: r.reasons[i] });
      const label = form.elements[field].closest("label");
      label.append(el("small", { className: "constraint", dataset: { field, option: r.option } }, text));
    });
  }
}

function render({ body, evaluation, comparison, uncertainty, curves }) {
  const currency = body.currency;
  const names = Object.fromEntries(evaluation.ranking.map((r) => [r.option, optionName(r.option, r.name)]));
  showConstraints(evaluation, names);
  $("#recommended").textContent = evaluation.recommended_option
    ? t("recommended", { option: names[evaluation.recommended_option] }) : "";
  const columns = ["rank", "option", "score", "cost", "efficiency", "stability", "usability"];
  const head = el("tr", {}, ...columns.map((c) => el("th", { className: c === "option" ? "" : "num" }, t(`column.${c}`))),
    el("th", { className: "num" }, t("column.cost_per_hour", { currency })),
    el("th", {}, t("column.feasible")), el("th", { className: "num" }, t("column.p_best")));
  $("#ranking thead").replaceChildren(head);
  const rows = evaluation.ranking.map((r) => {
    const p = uncertainty.options[r.option];
    if (notAssessed(r)) {
      return el("tr", { dataset: { option: r.option, assessed: "no" } },
        el("td", { className: "num" }, r.rank), el("td", {}, names[r.option]),
        el("td", { colSpan: 6, className: "hint not-assessed" }, t("not_assessed")),
        el("td", { className: "infeasible" }, t("feasible_no")), el("td", { className: "num" }, "–"));
    }
    const score = el("td", { className: "num" }, figure(r.score, 1), el("span", { className: "bar", style: `width:${Math.max(2, r.score * 0.6)}px` }));
    return el("tr", { dataset: { option: r.option } },
      el("td", { className: "num" }, r.rank), el("td", {}, names[r.option]), score,
      ...["cost", "efficiency", "stability", "usability"].map((d) => el("td", { className: "num" }, figure(r.scores[d], 1))),
      el("td", { className: "num" }, r.cost ? range(r.cost.cost_per_useful_gpu_hour) : "–"),
      el("td", { className: r.feasible ? "" : "infeasible" }, t(r.feasible ? "feasible_yes" : "feasible_no")),
      el("td", { className: "num" }, p ? percent(p.probability_first) : "–"));
  });
  $("#ranking tbody").replaceChildren(...rows);
  // the recommendation's own-versus-rent sentence (evaluations answer none: the cost curves do)
  const sentence = curves && curves.break_even_sentence;
  $("#break-even").textContent = sentence ? t("break_even", { statement: sentence }) : "";
  $("#p-best-note").textContent = t("p_best_note", { draws: number(uncertainty.draws, 0) });

  $("#reasons").replaceChildren(...evaluation.ranking.map((r) => el("div", { className: "option-block" },
    el("h3", {}, names[r.option]),
    r.reasons.length ? el("ul", {}, ...r.reasons.map((x) => el("li", {}, x))) : el("p", { className: "hint" }, t("no_reasons")))));

  $("#breakdown").replaceChildren(...comparison.items.map((item) => {
    const headRow = el("tr", {}, el("th", {}, t("column.item")),
      el("th", { className: "num" }, t("column.annual", { currency })),
      el("th", { className: "num" }, t("column.upfront", { currency })),
      el("th", { className: "num" }, t("column.total", { currency })), el("th", {}, t("column.basis")));
    const lines = (item.breakdown || []).map((li) => el("tr", {}, el("td", {}, li.label),
      amountCell(li.annual), amountCell(li.upfront), amountCell(li.total), el("td", { className: "hint" }, li.basis)));
    return el("div", { className: "option-block" }, el("h3", {}, optionName(item.option, item.name)),
      item.error ? el("p", { className: "infeasible" }, item.error) : scrolling(el("table", {}, el("thead", {}, headRow), el("tbody", {}, ...lines))));
  }));
}

// ---- which GPU: a training run on every GPU model and option ------------------------------------------

// the profile's fields a training plan reads as the other answers do (its GPUs are the run's own)
const TRAINING_PROFILE = ["team_size", "ops_team", "data_security", "start_within_days", "rental_plan", "currency", "as_of",
  "buyer_country", "providers", "regions", "capex_budget", "delay_cost_per_day", "preemptible_share"];
// why a candidate has no plan, in the page's words (the answer's ``error`` is for machines)
const NO_PLAN = { "no-offer": "no_plan_offer", "missing-knowledge": "no_plan_knowledge", "option-failed": "no_plan_failed" };

// the run of the "which GPU" form, for the team profile above; without ``gpu_model``, so that the answer
// ranks every GPU model (or those chosen) on every option
function trainingBody() {
  const base = profile();
  const form = $("#which-gpu").elements;
  const value = (name) => form[name].value.trim();
  const body = {
    parameters: Number(value("parameters")),
    tokens: Number(value("tokens")),
    gpus: Number(value("gpus")),
    precision: value("precision"),
  };
  if (value("finish_within_days")) body.finish_within_days = Number(value("finish_within_days"));
  const models = [...form.gpu_models.selectedOptions].map((o) => o.value);
  if (models.length) body.gpu_models = models;
  for (const name of TRAINING_PROFILE) if (name in base) body[name] = base[name];
  return body;
}

async function submitGpu(event) {
  event.preventDefault();
  if ($("#api-key").value.trim()) useKey($("#api-key").value.trim());
  if (!apiKey()) {
    setStatus("#which-gpu-status", "key_missing", {}, true);
    $("#api-key").focus();
    return;
  }
  await askGpu(trainingBody());
}

// the candidates as JSON and the service's own chart of them, in the page's language
async function askGpu(body) {
  state.trained = body;
  setStatus("#which-gpu-status", "which_gpu_working");
  $("#which-gpu-submit").disabled = true;
  try {
    const [doc, svg] = await Promise.all([
      api("/v1/training-plans", { body }),
      api("/v1/training-plans", { body, accept: "image/svg+xml" }),
    ]);
    clearFieldErrors("gpu");
    renderCandidates(doc);
    if (state.urls["#gpu-chart"]) URL.revokeObjectURL(state.urls["#gpu-chart"]);
    state.urls["#gpu-chart"] = URL.createObjectURL(svg);
    $("#gpu-chart").src = state.urls["#gpu-chart"];
    $("#gpu-results").hidden = false;
    setStatus("#which-gpu-status", "which_gpu_done", { version: doc.knowledge_version });
  } catch (error) {
    showFieldErrors(error, "gpu", "#which-gpu-status");
    setStatus("#which-gpu-status", "which_gpu_failed", { detail: problemText(error, "gpu") }, true);
  } finally {
    $("#which-gpu-submit").disabled = false;
  }
}

function renderCandidates(doc) {
  const currency = doc.currency;
  const gpus = Object.fromEntries(doc.work.map((w) => [w.gpu_model, w.name]));
  const rec = doc.recommended;
  const isRecommended = (c) => Boolean(rec) && c.gpu_model === rec.gpu_model && c.option === rec.option;
  const chosen = doc.candidates.find(isRecommended);
  $("#gpu-recommended").textContent = chosen
    ? t("gpu_recommended", { gpu: gpus[chosen.gpu_model] || chosen.gpu_model, option: optionName(chosen.option, chosen.name) })
    : t("gpu_none");
  $("#gpu-recommendation").textContent = doc.recommendation;
  $("#candidates thead").replaceChildren(el("tr", {},
    el("th", {}, t("column.gpu")), el("th", {}, t("column.option")), el("th", {}, t("column.offer")),
    el("th", { className: "num" }, t("column.days")), el("th", { className: "num" }, t("column.total_cost", { currency })),
    el("th", { className: "num" }, t("column.per_million", { currency })), el("th", {}, t("column.feasible"))));
  $("#candidates tbody").replaceChildren(...doc.candidates.map((c) => {
    const recommended = isRecommended(c);
    const gpu = gpus[c.gpu_model] || c.gpu_model;
    const data = { gpuModel: c.gpu_model, option: c.option, feasible: c.feasible ? "yes" : "no", recommended: recommended ? "yes" : "no" };
    const option = el("td", {}, optionName(c.option, c.name));
    if (!c.calendar_days) { // no plan on this GPU model and option: nothing to show but why
      const why = t(NO_PLAN[c.error_code] || "no_plan_failed");
      return [el("tr", { className: "unplanned", dataset: { ...data, planned: "no" } }, el("td", {}, gpu), option,
        el("td", { colSpan: 4, className: "hint" }, why), el("td", { className: "infeasible" }, t("feasible_no")))];
    }
    const verdict = el("td", { className: c.feasible ? "" : "infeasible" }, t(c.feasible ? "feasible_yes" : "feasible_no"));
    const row = el("tr", { className: recommended ? "recommended-row" : "", dataset: { ...data, planned: "yes" } },
      el("td", {}, recommended ? `★ ${gpu}` : gpu), option,
      el("td", { className: "offer" }, c.offer ? c.offer.name || c.offer.subject : "–"),
      el("td", { className: "num" }, range(c.calendar_days, 1)),
      amountCell(c.total_cost),
      el("td", { className: "num" }, range(c.cost_per_million_tokens, 2)),
      verdict);
    // why not feasible, the table's width beneath the candidate (a sentence each)
    if (!c.reasons.length) return [row];
    return [row, el("tr", { className: "why", dataset: { gpuModel: c.gpu_model, option: c.option } },
      el("td", { colSpan: 7 }, el("ul", { className: "reasons" }, ...c.reasons.map((x) => el("li", {}, x)))))];
  }).flat());
}

// ---- the demand over time and the capacity plan -------------------------------------------------------

const demandKind = () => $("#capacity").elements.demand_kind.value;

function showDemandKind() {
  const kind = demandKind();
  for (const node of document.querySelectorAll("#capacity [data-kind]")) node.hidden = node.dataset.kind !== kind;
  if (kind === "phases" && !$("#phases tbody").rows.length) {
    const form = $("#profile").elements;
    addPhase({ months: horizonMonths(), gpus: form.gpus.value, utilization: form.utilization.value });
  }
  checkMonths();
}

// the horizon in months (horizon_years × 12), as the form says it
const horizonMonths = () => Math.round(Number($("#profile").elements.horizon_years.value) * 12 * 1e6) / 1e6;

function phaseCell(col, value, props) {
  return el("td", {}, el("input", { type: "number", value: value ?? "", dataset: { col }, ...props }));
}

function addPhase(values = {}) {
  const rows = $("#phases tbody").rows;
  const last = rows.length ? phaseValues(rows[rows.length - 1]) : {};
  const v = { months: 12, gpus: last.gpus, utilization: last.utilization, ...values };
  const remove = el("button", { type: "button", className: "phase-remove", title: t("phase_remove"), textContent: "×" });
  const row = el("tr", {}, el("td", { className: "num phase-no" }),
    ...["months", "gpus", "utilization", "largest_job_gpus"].map((col) => phaseCell(col, v[col], BOOT.bounds.phase[col])),
    el("td", {}, remove));
  remove.addEventListener("click", () => {
    if ($("#phases tbody").rows.length > 1) row.remove();
    numberPhases();
    checkMonths();
  });
  $("#phases tbody").append(row);
  numberPhases();
  checkMonths();
}

function numberPhases() {
  [...$("#phases tbody").rows].forEach((row, i) => { row.querySelector(".phase-no").textContent = String(i + 1); });
}

function phaseValues(row) {
  const v = (col) => row.querySelector(`[data-col=${col}]`).value.trim();
  const phase = { months: Number(v("months")), gpus: Number(v("gpus")), utilization: Number(v("utilization")) };
  if (v("largest_job_gpus")) phase.largest_job_gpus = Number(v("largest_job_gpus"));
  return phase;
}

// the phases' months against the horizon, said live; the message's code, or null when they cover it
function checkMonths() {
  if (demandKind() !== "phases") return null;
  const expected = horizonMonths();
  const total = [...$("#phases tbody").rows].reduce((sum, row) => sum + phaseValues(row).months, 0);
  if (!Number.isInteger(expected)) {
    setStatus("#months-status", "months_not_whole", { months: number(expected, 3) }, true);
    return "months_not_whole";
  }
  if (total !== expected) {
    setStatus("#months-status", "months_mismatch", { total: number(total, 3), expected }, true);
    return "months_mismatch";
  }
  setStatus("#months-status", "months_ok", { total });
  return null;
}

// the profile the page compares, with the demand of the editor and the GPUs owned
function capacityBody() {
  const body = profile();
  const form = $("#capacity").elements;
  const kind = demandKind();
  if (kind === "phases") {
    delete body.gpus;
    delete body.utilization;
    body.demand = [...$("#phases tbody").rows].map(phaseValues);
  } else if (kind === "growth") {
    delete body.gpus; // the growth's phases take the profile's utilization
    body.demand = { start_gpus: Number(form.start_gpus.value.trim()), growth_per_year: Number(form.growth_per_year.value.trim()) };
  }
  if (form.owned_model.value || form.owned_count.value.trim()) {
    body.owned = [{
      gpu_model: form.owned_model.value,
      count: Number(form.owned_count.value.trim()),
      age_years: Number(form.owned_age.value.trim() || 0),
    }];
  }
  return body;
}

async function submitPlan(event) {
  event.preventDefault();
  if ($("#api-key").value.trim()) useKey($("#api-key").value.trim());
  if (!apiKey()) {
    setStatus("#plan-status", "key_missing", {}, true);
    $("#api-key").focus();
    return;
  }
  const mismatch = checkMonths();
  if (mismatch) { // nothing is sent: the message says what to fix
    setStatus("#plan-status", "plan_not_sent", {}, true);
    return;
  }
  await planCapacity(capacityBody());
}

// the plan as JSON and the service's own chart of it, in the page's language
async function planCapacity(body) {
  state.planned = body;
  setStatus("#plan-status", "planning");
  $("#plan").disabled = true;
  try {
    const [plan, svg] = await Promise.all([
      api("/v1/capacity-plans", { body }),
      api("/v1/capacity-plans", { body, accept: "image/svg+xml" }),
    ]);
    clearFieldErrors("plan");
    renderPlan(plan);
    if (state.urls["#capacity-chart"]) URL.revokeObjectURL(state.urls["#capacity-chart"]);
    state.urls["#capacity-chart"] = URL.createObjectURL(svg);
    $("#capacity-chart").src = state.urls["#capacity-chart"];
    $("#plan-results").hidden = false;
    setStatus("#plan-status", "planned", { version: plan.knowledge_version });
  } catch (error) {
    showFieldErrors(error, "plan", "#plan-status");
    setStatus("#plan-status", "plan_failed", { detail: problemText(error) }, true);
  } finally {
    $("#plan").disabled = false;
  }
}

const phaseGpus = (gpus) => (gpus.every((g) => g === gpus[0]) ? number(gpus[0], 0) : gpus.map((g) => number(g, 0)).join(" → "));

function segmentText(g) {
  const params = { option: optionName(g.option, g.name), acquired: t(`acquired.${g.acquired}`), gpus: phaseGpus(g.gpus_by_phase) };
  return g.start_month > 0 ? t("segment_from", { ...params, month: g.start_month }) : t("segment", params);
}

function renderPlan(plan) {
  const currency = plan.currency;
  const names = Object.fromEntries(plan.portfolios.map((p) => [p.key, p.kind === "single"
    ? optionName(p.key.slice("single:".length), p.name) : p.name]));
  $("#plan-recommended").textContent = plan.recommended
    ? t("plan_recommended", { portfolio: names[plan.recommended] }) : t("plan_none");
  $("#portfolios thead").replaceChildren(el("tr", {},
    el("th", {}, t("column.portfolio")), el("th", {}, t("column.kind")), el("th", {}, t("column.segments")),
    el("th", { className: "num" }, t("column.cost_per_hour", { currency })), el("th", {}, t("column.feasible")),
    el("th", { className: "num" }, t("column.saving"))));
  const saving = plan.saving_vs_best_single;
  $("#portfolios tbody").replaceChildren(...plan.portfolios.map((p) => {
    const recommended = p.key === plan.recommended;
    const segments = p.segments.length ? p.segments.map((g) => el("div", {}, segmentText(g))) : ["–"];
    let saved = "–";
    if (recommended && saving) {
      saved = saving.share > 0
        ? t("saving", { share: percent(saving.share), option: names[saving.against], amount: figure(saving.npv_cost.expected, 0), currency })
        : t("saving_none", { option: names[saving.against] });
    }
    return el("tr", { className: recommended ? "recommended-row" : "", dataset: { key: p.key, recommended: recommended ? "yes" : "no" } },
      el("td", {}, recommended ? `★ ${names[p.key]}` : names[p.key]),
      el("td", {}, t(`kind.${p.kind}`)),
      el("td", { className: "segments" }, ...segments),
      el("td", { className: "num" }, p.cost_per_useful_gpu_hour ? range(p.cost_per_useful_gpu_hour) : "–"),
      el("td", { className: p.feasible ? "" : "infeasible" }, t(p.feasible ? "feasible_yes" : "feasible_no")),
      el("td", { className: "num" }, saved));
  }));
  // what the portfolios' reasons say (the mix's sizing, why an option cannot serve the demand)
  $("#plan-reasons").replaceChildren(...plan.portfolios.flatMap((p) => p.reasons.map((x) => el("li", {},
    t("portfolio_reason", { portfolio: names[p.key], reason: x })))));
}

// a spreadsheet of the last capacity plan or training run, asked for with the key (a plain link cannot send
// it) and saved by the browser
const DOWNLOADS = {
  plan: { path: "/v1/capacity-plans", body: () => state.planned, status: "#download-status", name: "capacity-plan", failed: "plan_failed" },
  gpu: { path: "/v1/training-plans", body: () => state.trained, status: "#gpu-download-status", name: "training-plan", failed: "which_gpu_failed" },
};

// an answer saved by the browser under the name the service gives it (else ``fallback``); the name
async function save(response, fallback) {
  const disposition = response.headers.get("Content-Disposition") || "";
  const name = (/filename="([^"]+)"/.exec(disposition) || [])[1] || fallback;
  const url = URL.createObjectURL(await response.blob());
  const link = el("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return name;
}

async function download(source, accept) {
  const { path, body, status, name: fallback, failed } = DOWNLOADS[source];
  if (!body()) return;
  setStatus(status, "downloading");
  try {
    const name = await save(await request(path, { body: body(), accept }), fallback);
    setStatus(status, "downloaded", { file: name });
  } catch (error) {
    setStatus(status, failed, { detail: problemText(error, source) }, true);
  }
}

function wireDemand() {
  for (const radio of $("#capacity").elements.demand_kind) radio.addEventListener("change", showDemandKind);
  $("#phase-add").addEventListener("click", () => addPhase());
  $("#phases").addEventListener("input", checkMonths);
  $("#profile").elements.horizon_years.addEventListener("input", checkMonths);
  $("#capacity").addEventListener("submit", submitPlan);
  $("#plan-csv").addEventListener("click", () => download("plan", "text/csv"));
  $("#plan-xlsx").addEventListener("click", () => download("plan", XLSX));
  showDemandKind();
}

function wireTraining() {
  $("#which-gpu").addEventListener("submit", submitGpu);
  $("#gpu-csv").addEventListener("click", () => download("gpu", "text/csv"));
  $("#gpu-xlsx").addEventListener("click", () => download("gpu", XLSX));
}

// ---- wiring -------------------------------------------------------------------------------------------

function useKey(key) {
  sessionStorage.setItem(KEY_STORE, key);
  $("#api-key").value = "";
  $("#api-key").placeholder = "••••••••";
  setStatus("#key-status", "key_saved");
  announce("key");
  loadCatalog();
}

function saveKey(event) {
  event.preventDefault();
  const key = $("#api-key").value.trim();
  if (!key) {
    setStatus("#key-status", "key_missing", {}, true);
    return;
  }
  useKey(key);
}

function forgetKey() {
  sessionStorage.removeItem(KEY_STORE);
  $("#api-key").placeholder = "";
  setStatus("#key-status", "key_forgotten");
  announce("key");
}

// the page's words at once; the last answer asked for again, in the new language (its reasons, names,
// labels, problems and charts come from the API)
async function switchLanguage(lang) {
  state.lang = lang;
  sessionStorage.setItem(LANG_STORE, lang);
  applyLanguage();
  announce("language");
  if (apiKey()) await loadCatalog();
  if (state.asked) await ask(state.asked); // answered or refused: either way in the new language
  if (state.trained) await askGpu(state.trained);
  if (state.planned) await planCapacity(state.planned);
}

document.addEventListener("DOMContentLoaded", () => {
  $("#gpu-model").append(el("option", { value: "" }));
  $("#buyer-country").append(el("option", { value: "" }));
  applyLanguage();
  $("#key-form").addEventListener("submit", saveKey);
  $("#key-forget").addEventListener("click", forgetKey);
  applyBounds();
  $("#profile").addEventListener("submit", submit);
  for (const form of [$("#profile"), $("#which-gpu"), $("#capacity")]) {
    form.addEventListener("input", fieldEdited);
    form.addEventListener("change", fieldEdited);
  }
  $("#owned-model").append(el("option", { value: "", textContent: t("owned_none") }));
  wireDemand();
  wireTraining();
  for (const button of document.querySelectorAll("[data-lang]")) {
    button.addEventListener("click", () => switchLanguage(button.dataset.lang));
  }
  if (apiKey()) {
    $("#api-key").placeholder = "••••••••";
    setStatus("#key-status", "key_saved");
    loadCatalog();
  }
});
