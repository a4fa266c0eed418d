// compute-advisor explorer, "My decisions": the recommendations stored for the key's organisation (for a key
// of no organisation, its own), each with its drift — the stored profile re-priced on today's knowledge and the
// organisation's price book: the option recommended then and now, each option's cost change and rank change,
// the offers gone — and the drift as CSV. Uses explorer.js (t, el, $, api, request, save, setStatus, state).
"use strict";

const DECISIONS_PAGE = 20;
// the drift of the first recommendations is asked for at once; the others' on demand ("Check drift")
const DRIFT_AT_ONCE = 10;
const decisions = { items: [], total: 0, drifts: {}, loaded: false };

// a fraction as a signed percentage ("+12.5%", "-40.0%", "0.0%")
function signedPercent(fraction) {
  return new Intl.NumberFormat(TAGS[state.lang], {
    style: "percent", signDisplay: "exceptZero", minimumFractionDigits: 1, maximumFractionDigits: 1,
  }).format(fraction);
}

const when = (iso) => new Intl.DateTimeFormat(TAGS[state.lang], { dateStyle: "medium", timeStyle: "short" })
  .format(new Date(iso));
// an amount that is a figure or a range (its expected figure)
const amountOf = (v) => (v == null ? null : typeof v === "object" ? v.expected : v);
const chosenName = (option) => (option ? optionName(option) : t("decisions.nothing"));

// an offer that prices its option no more: the option, the offer as the stored answer named it, and why
// (no figures now, a constraint broken now, or priced with another offer now)
function offerGone(o) {
  const offer = o.name || [o.provider, o.subject, o.plan, o.region].filter((p) => p && p !== "*").join(" · ");
  const why = o.why === "replaced"
    ? t("decisions.gone_replaced", { offers: (o.replaced_by || []).join(", ") || "–" })
    : t(o.why === "infeasible" ? "decisions.gone_infeasible" : "decisions.gone_unpriced");
  return t("decisions.gone", { option: optionName(o.option), offer, why });
}

async function loadDecisions(more = false) {
  if (!apiKey()) {
    setStatus("#decisions-status", "key_missing", {}, true);
    $("#api-key").focus();
    return;
  }
  setStatus("#decisions-status", "decisions.loading");
  $("#decisions-load").disabled = true;
  try {
    const offset = more ? decisions.items.length : 0;
    const page = await api(`/v1/recommendations?limit=${DECISIONS_PAGE}&offset=${offset}`);
    if (!more) {
      decisions.items = [];
      decisions.drifts = {};
    }
    decisions.items.push(...page.items);
    decisions.total = page.total ?? decisions.items.length;
    decisions.loaded = true;
    renderDecisions();
    setStatus("#decisions-status", decisions.items.length ? "decisions.loaded" : "decisions.none",
      { shown: decisions.items.length, total: decisions.total });
    await Promise.all(decisions.items.slice(0, DRIFT_AT_ONCE).filter((r) => !(r.id in decisions.drifts))
      .map((r) => checkDrift(r.id)));
  } catch (error) {
    setStatus("#decisions-status", "decisions.failed", { detail: problemText(error) }, true);
  } finally {
    $("#decisions-load").disabled = false;
  }
}

async function checkDrift(id) {
  decisions.drifts[id] = { checking: true };
  renderDecision(id);
  try {
    decisions.drifts[id] = { drift: await api(`/v1/recommendations/${encodeURIComponent(id)}/drift`) };
  } catch (error) {
    decisions.drifts[id] = { error: problemText(error) };
  }
  renderDecision(id);
}

async function downloadDrift(id) {
  setStatus("#decisions-download-status", "downloading");
  try {
    const response = await request(`/v1/recommendations/${encodeURIComponent(id)}/drift`, { accept: "text/csv" });
    setStatus("#decisions-download-status", "downloaded", { file: await save(response, `drift-${id}.csv`) });
  } catch (error) {
    setStatus("#decisions-download-status", "decisions.failed", { detail: problemText(error) }, true);
  }
}

function renderDecisions() {
  $("#decisions thead").replaceChildren(el("tr", {},
    ...["stored", "then", "now", "changed", "costs", "gone", "drift"].map((c) => el("th", {}, t(`decisions.column.${c}`)))));
  $("#decisions tbody").replaceChildren(...decisions.items.map(decisionRow));
  $("#decisions-more").hidden = decisions.items.length >= decisions.total;
}

function renderDecision(id) {
  const row = [...$("#decisions tbody").rows].find((r) => r.dataset.id === id);
  const item = decisions.items.find((r) => r.id === id);
  if (row && item) row.replaceWith(decisionRow(item));
}

// each option's cost change (a signed percentage, the costs then and now) and its rank change, if any
function costChanges(drift, currency) {
  const ranks = Object.fromEntries((drift.rank_changes || []).map((r) => [r.option, r]));
  const costs = drift.cost_changes || {};
  const options = [...new Set([...Object.keys(costs), ...Object.keys(ranks)])];
  return options.map((option) => {
    const cost = costs[option] || {};
    const [then, now] = [amountOf(cost.stored), amountOf(cost.now)];
    const parts = [];
    if (cost.change != null) {
      parts.push(t("decisions.cost_change", {
        change: signedPercent(cost.change), stored: figure(then, 0), now: figure(now, 0), currency,
      }));
    } else if (then != null || now != null) {
      parts.push(t(then == null ? "decisions.cost_new" : "decisions.cost_gone"));
    }
    if (ranks[option]) parts.push(t("decisions.rank_change", { stored: ranks[option].stored_rank ?? "–", now: ranks[option].now_rank ?? "–" }));
    const direction = cost.change > 0 ? "up" : cost.change < 0 ? "down" : "";
    return el("div", { className: direction, dataset: { option, change: cost.change ?? "" } },
      t("decisions.option_line", { option: optionName(option), what: parts.join(t("decisions.joiner")) }));
  });
}

function decisionRow(item) {
  const known = decisions.drifts[item.id] || {};
  const { drift } = known;
  const stored = el("td", {}, when(item.created_at), el("br"), el("small", {}, item.knowledge_version));
  const then = el("td", {}, chosenName(drift ? drift.stored.recommended_option : item.recommended_option));
  const check = el("button", { type: "button", className: "drift-check", textContent: t("decisions.check") });
  check.addEventListener("click", () => checkDrift(item.id));
  const csv = el("button", { type: "button", className: "drift-csv", textContent: t("decisions.csv") });
  csv.addEventListener("click", () => downloadDrift(item.id));
  const data = { id: item.id, changed: drift ? (drift.changed ? "yes" : "no") : "" };
  if (!drift) {
    const note = known.checking ? t("decisions.checking")
      : known.error ? t("decisions.drift_failed", { detail: known.error }) : t("decisions.unchecked");
    return el("tr", { dataset: data }, stored, then,
      el("td", { colSpan: 4, className: known.error ? "infeasible" : "hint" }, note),
      el("td", {}, known.checking ? "" : check));
  }
  const marker = drift.changed
    ? el("span", { className: "changed" }, `⚠ ${t("decisions.changed_yes")}`)
    : el("span", { className: "unchanged" }, t("decisions.changed_no"));
  const gone = (drift.offers_gone || []).map((o) => el("li", {}, offerGone(o)));
  return el("tr", { className: drift.changed ? "changed-row" : "", dataset: data }, stored, then,
    el("td", { className: "now" }, chosenName(drift.now.recommended_option)),
    el("td", { className: "marker" }, marker),
    el("td", { className: "costs" }, ...costChanges(drift, drift.currency || item.currency)),
    el("td", { className: "gone" }, gone.length ? el("ul", {}, ...gone) : t("decisions.gone_none")),
    el("td", { className: "drift-actions" }, check, csv));
}

// the organisation's price book changed (a quote added or closed): the drifts shown are asked for again
async function recheckDrifts() {
  if (!decisions.loaded) return;
  await Promise.all(Object.keys(decisions.drifts).map((id) => checkDrift(id)));
}

document.addEventListener("DOMContentLoaded", () => {
  $("#decisions-load").addEventListener("click", () => loadDecisions());
  $("#decisions-more").addEventListener("click", () => loadDecisions(true));
});
document.addEventListener("explorer:language", () => { if (decisions.loaded) renderDecisions(); });
document.addEventListener("explorer:book", recheckDrifts);
document.addEventListener("explorer:key", () => { // another key: another organisation's decisions
  Object.assign(decisions, { items: [], total: 0, drifts: {}, loaded: false });
  renderDecisions();
  $("#decisions thead").replaceChildren();
  clearStatus("#decisions-status");
});
