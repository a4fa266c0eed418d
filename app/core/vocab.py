"""The service's closed vocabularies, each declared once as a ``Literal``.

Everything else derives from these: the tuples below (``typing.get_args``), the database's CHECK
constraints (``app.kb.models``), the field types of the seed records (``app.kb.seeds``), of the
snapshot (``app.core.knowledge``) and of the API's requests and answers, and so the OpenAPI
document's enums. Adding a value here is the one edit that makes it valid everywhere (with a
migration for the CHECK constraint); ``tests/test_declarations.py`` fails where a shape spells a
vocabulary another way.
"""

from __future__ import annotations

from typing import Literal, get_args

Dimension = Literal["cost", "efficiency", "stability", "usability"]
OpsTeam = Literal["none", "basic", "professional"]
#: the number format a training run computes in: its GPUs' dense peak and MFU at it give the work they do
#: (``app.engine.throughput``); ``fp8`` only on the parts that have an FP8 peak
Precision = Literal["bf16", "fp8"]
DataSecurity = Literal["standard", "high", "extreme"]
#: how the nodes of a multi-node offer talk to each other (an own cluster's ``network_fabric``: what it is);
#: ``tcpxo`` and ``tcpx`` are Google Cloud's GPUDirect-TCPXO (A3 Mega) and GPUDirect-TCPX (A3 High)
Interconnect = Literal["infiniband", "roce", "efa", "tcpxo", "tcpx", "ethernet"]
#: how a managed platform bills its GPUs: only job time (plus start-up), the whole allocated cluster, or the
#: hours a shared pool's utilization decides (the source article's platform)
Billing = Literal["job_seconds", "held_cluster", "pooled"]
#: what a region of the hierarchy is: a provider's region lies in a country, a subdivision (ISO 3166-2) in
#: a country, a country (ISO 3166-1 alpha-2) on a continent, a continent in ``global``; a bloc (the EU/EEA)
#: lies in ``global`` and names its member countries beside their one chain of parents
RegionKind = Literal["provider_region", "subdivision", "country", "continent", "bloc", "global"]
#: where a ``data_security`` level lets data sit: anywhere, the buyer's country or its bloc, or the buyer's
#: own premises
DataLocation = Literal["anywhere", "jurisdiction", "premises"]
#: what an availability rule does to a GPU model in a jurisdiction: refuses it, or says in a note that a
#: licence is needed or that the buyer's government discourages buying it
AvailabilityEffect = Literal["unavailable", "licence_required", "discouraged"]
#: whom an availability rule binds: the buyer (evaluated for ``buyer_country``) or the place the offer's
#: hardware is (its country)
AvailabilityScope = Literal["buyer", "location"]
#: whose law an availability rule is: the supplier's country restricts exports, or the buyer's imports
AvailabilityKind = Literal["export", "import"]
#: where an offer's hardware runs and who shares it (``data_security`` levels accept some of these)
Residency = Literal["public_multi_tenant", "dedicated", "private_deployment", "on_premises"]
Currency = Literal["CNY", "USD", "EUR"]
#: the languages answers come in (``Accept-Language``; ``app.i18n``), English first
Language = Literal["en", "zh"]
#: what a profile field an option declares holds (``app.core.declarations.ProfileField``)
FieldKind = Literal["number", "integer", "string", "boolean"]
#: the currency every exchange rate is quoted in, and every conversion goes through
Pivot = Literal["CNY"]
ProviderKind = Literal["hyperscaler", "gpu_cloud", "china_cloud", "marketplace", "platform", "own", "reference"]
#: ``grey_market``: a quote of a market that sells outside the law (a part export-controlled for the place):
#: listed among alternatives, never pricing a chosen own-cluster offer
SourceQuality = Literal["article", "verified", "secondary", "weak", "unverified", "assumption", "grey_market"]
PriceUnit = Literal[
    "per_server",
    "per_server_year",
    "per_team_year",
    "per_server_hour",
    "per_gpu_hour",
    "per_kwh",
    "fraction",
    "per_gpu",
    "per_tb",
    "per_tb_month",
    "per_kw",
    "per_kw_month",
    "per_fte_year",
    "per_gpu_year",
    "per_gpu_day",
]
AssumptionUnit = Literal[
    "fraction",
    "ratio",
    "years",
    "days",
    "hours",
    "minutes",
    "count",
    "servers",
    "fte",
    "kw",
    "per_gpu_year",
    "tb_per_gpu",
]
RuleEffect = Literal["bonus", "penalty", "infeasible"]
RuleMatch = Literal["all", "any"]
RuleOperator = Literal["eq", "ne", "lt", "le", "gt", "ge", "in", "not_in"]

DIMENSIONS: tuple[Dimension, ...] = get_args(Dimension)
OPS_TEAMS: tuple[OpsTeam, ...] = get_args(OpsTeam)
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
DATA_SECURITY_LEVELS: tuple[DataSecurity, ...] = get_args(DataSecurity)
#: a price row's plan: free-form (declared by the plugins that sell it, ``OptionSpec.price_plans``),
#: lower_snake_case, or ``*`` for none
PLAN_PATTERN = r"^(\*|[a-z][a-z0-9_]{0,23})$"
#: a plan a request names (``rental_plan``): one a loaded option declares (``OptionSpec.rental_plans``)
PLAN_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,23}$"
#: the name of a profile field an option declares (``option_fields.<name>`` in a request)
FIELD_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,39}$"
INTERCONNECTS: tuple[Interconnect, ...] = get_args(Interconnect)
BILLINGS: tuple[Billing, ...] = get_args(Billing)
REGION_KINDS: tuple[RegionKind, ...] = get_args(RegionKind)
DATA_LOCATIONS: tuple[DataLocation, ...] = get_args(DataLocation)
AVAILABILITY_EFFECTS: tuple[AvailabilityEffect, ...] = get_args(AvailabilityEffect)
AVAILABILITY_SCOPES: tuple[AvailabilityScope, ...] = get_args(AvailabilityScope)
AVAILABILITY_KINDS: tuple[AvailabilityKind, ...] = get_args(AvailabilityKind)
#: the root of the region hierarchy: every chain of parents ends here, and a row there matches every filter
GLOBAL = "global"
RESIDENCIES: tuple[Residency, ...] = get_args(Residency)
PROVIDER_KINDS: tuple[ProviderKind, ...] = get_args(ProviderKind)
CURRENCIES: tuple[Currency, ...] = get_args(Currency)
LANGUAGES: tuple[Language, ...] = get_args(Language)
FIELD_KINDS: tuple[FieldKind, ...] = get_args(FieldKind)
PIVOT: Pivot = get_args(Pivot)[0]
SOURCE_QUALITIES: tuple[SourceQuality, ...] = get_args(SourceQuality)
PRICE_UNITS: tuple[PriceUnit, ...] = get_args(PriceUnit)
ASSUMPTION_UNITS: tuple[AssumptionUnit, ...] = get_args(AssumptionUnit)
RULE_EFFECTS: tuple[RuleEffect, ...] = get_args(RuleEffect)
RULE_MATCHES: tuple[RuleMatch, ...] = get_args(RuleMatch)
RULE_OPERATORS: tuple[RuleOperator, ...] = get_args(RuleOperator)

#: where a price row comes from: the list every answer shares, or the private book of the request's organisation
PriceBook = Literal["list", "org"]
PRICE_BOOKS: tuple[PriceBook, ...] = get_args(PriceBook)
#: where a watch's delivery stands (``watch_deliveries.status``)
DeliveryStatus = Literal["pending", "delivered", "failed"]
DELIVERY_STATUSES: tuple[DeliveryStatus, ...] = get_args(DeliveryStatus)

#: price items that are offers by themselves (the rest are priced with one: network, power, a fee…)
OFFER_ITEMS = ("instance_hour", "gpu_hour", "server_hardware", "reservation_discount")

Scope = Literal["catalog:read", "decisions:run", "recommendations:write", "prices:write", "metrics:read", "admin"]
#: every API key scope, and what it allows (README, "Authentication")
SCOPES: dict[Scope, str] = {
    "catalog:read": "GET the options, GPUs, servers, prices, assumptions, rules and knowledge version",
    "decisions:run": "POST price comparisons, evaluations, break-even, sensitivity, uncertainty, training plans",
    "recommendations:write": "POST recommendations and watches; GET back those of this key or its organisation, "
    "and their drift",
    "prices:write": "POST and DELETE rows of the organisation's private price book",
    "metrics:read": "GET /metrics (Prometheus)",
    "admin": "everything: every scope, every key's recommendations, the audit trail",
}
ADMIN: Scope = "admin"
#: what the audit trail records (``app.kb.audit``)
AuditAction = Literal[
    "seeds.load",
    "migration.data",
    "key.create",
    "key.revoke",
    "key.rotate",
    "database.restore",
    "recommendations.prune",
    "org.create",
    "org.delete",
    "prices.add",
    "prices.close",
    "watch.create",
    "watch.delete",
]
AUDIT_ACTIONS: tuple[AuditAction, ...] = get_args(AuditAction)
#: longest X-API-Key value looked at (a real key has 46 characters)
API_KEY_MAX_LENGTH = 128
