// A TypeScript caller of a served compute-advisor, typed by the client generated from openapi/v1.json:
// a recommendation and its read-back, a price comparison in USD on H100 (JSON, then CSV), a 404 and a
// 422 problem. `tsc --noEmit` fails when the document becomes hostile to TypeScript users (a request
// field with a default made required, a success typed as a union, a header typed as always present);
// the run fails when an answer is not what the types say.
//
//   COMPUTE_ADVISOR_URL=http://127.0.0.1:8000 API_KEY=$(cat ../../.dev-api-key) npm run smoke
import createClient from "openapi-fetch";

import type { components, paths } from "./v1.js";

declare const process: { env: Record<string, string | undefined>; exitCode?: number };

type Schemas = components["schemas"];
type Problem = Schemas["Problem"];

const baseUrl = process.env["COMPUTE_ADVISOR_URL"] ?? "http://127.0.0.1:8000";
const apiKey = process.env["API_KEY"];
if (!apiKey) throw new Error("API_KEY is not set (a key with decisions:run, recommendations:write, catalog:read)");

// JSON answers: the client is told so, and each success is the one schema its operation documents
const api = createClient<paths, "application/json">({ baseUrl, headers: { "X-API-Key": apiKey } });
// the same operations' CSV answers, typed as text of their own media type
const csv = createClient<paths, "text/csv">({ baseUrl, headers: { "X-API-Key": apiKey, Accept: "text/csv" } });

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`not as documented: ${what}`);
}

function isProblem(error: unknown, status: number, slug: string): error is Problem {
  const p = error as Problem;
  return p.status === status && p.type === `urn:compute-advisor:problem:${slug}` && p.detail.length > 0;
}

// What the document says of the headers, checked by the compiler: a success carries its request id and
// language always; the rate-limit headers only while limits are on, the validators only where sent.
type ComparisonHeaders = paths["/v1/price-comparisons"]["post"]["responses"][200]["headers"];
const fewest: ComparisonHeaders = { "X-Request-ID": "0f5b7c2e", "Content-Language": "en" };
void fewest;

// 1. A recommendation, with the README's body: fields with a default (currency, weights…) left out
const profile: Schemas["RecommendationCreate"] = {
  gpus: 16,
  utilization: 0.6,
  horizon_years: 2,
  team_size: 20,
  ops_team: "none",
  data_security: "standard",
  start_within_days: 14,
};
const created = await api.POST("/v1/recommendations", { body: profile });
check(created.response.status === 201 && created.data !== undefined, `201 for a recommendation, got ${created.response.status}`);
const recommendation: Schemas["RecommendationRead"] = created.data;
check(created.response.headers.get("Location") === `/v1/recommendations/${recommendation.id}`, "Location names the id");
const best = recommendation.ranking[0];
check(best !== undefined && best.option === recommendation.recommended_option, "the ranking starts with the recommendation");
check(best.reasons.length === (best.reason_codes ?? []).length, "a reason code per reason");

// 2. Read back, unchanged
const stored = await api.GET("/v1/recommendations/{rec_id}", { params: { path: { rec_id: recommendation.id } } });
check(stored.data !== undefined, `the stored recommendation, got ${stored.response.status}`);
check(JSON.stringify(stored.data) === JSON.stringify(recommendation), "read back exactly as answered");

// 3. A price comparison in USD on H100 (currency sent here; absent, it would be CNY)
const body: Schemas["ComparisonCreate"] = { gpus: 64, utilization: 0.5, horizon_years: 3, currency: "USD", gpu_model: "h100_sxm" };
const compared = await api.POST("/v1/price-comparisons", { body });
check(compared.data !== undefined, `a comparison, got ${compared.response.status}`);
const comparison: Schemas["ComparisonRead"] = compared.data;
check(comparison.currency === "USD" && comparison.items.length === 3, "three options, in USD");
for (const item of comparison.items) {
  check(item.offer == null || item.offer.gpu_model === "h100_sxm", `${item.option} prices an H100 offer`);
  const perHour = item.cost_per_useful_gpu_hour; // null where the option is infeasible
  check(!item.feasible || (perHour != null && perHour.expected > 0), `${item.option} has a cost per useful GPU-hour`);
}
const sheet = await csv.POST("/v1/price-comparisons", { body, parseAs: "text" });
const text: string | undefined = sheet.data;
check(text !== undefined && text.includes("cost_per_useful_gpu_hour"), "the same comparison as CSV");
check(sheet.response.headers.get("Content-Type") === "text/csv; charset=utf-8", "CSV says its charset once");

// 4. A 404 problem
const missing = await api.GET("/v1/gpus/{key}", { params: { path: { key: "no_such_gpu" } } });
check(missing.response.status === 404 && isProblem(missing.error, 404, "not-found"), "404 problem for an unknown GPU");

// 5. A 422 problem: valid against the schema, unknown to the knowledge base
const unknown = await api.POST("/v1/price-comparisons", { body: { ...body, gpu_model: "no_such_gpu" } });
check(unknown.response.status === 422 && isProblem(unknown.error, 422, "unknown-reference"), "422 for an unknown GPU model");
check(unknown.error.field === "gpu_model", "the 422 names the field");

console.log(
  `typescript client: recommendation ${recommendation.id} (${recommendation.recommended_option}) read back; ` +
    `comparison of ${comparison.items.length} options in ${comparison.currency}; 404 and 422 problems as documented`,
);
