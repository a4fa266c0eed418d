"""fidelity v4: availability rules by scope and kind, data residency by location, price rows for many regions,
training fabrics (TCPX/TCPXO), short reservations' maximum term, and the model's new knowledge columns

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05 12:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: price units before storage rented by the month (market)
UNITS_BEFORE_STORAGE = (
    "'per_server', 'per_server_year', 'per_team_year', 'per_server_hour', 'per_gpu_hour', 'per_kwh', 'fraction', "
    "'per_gpu', 'per_tb', 'per_kw', 'per_kw_month', 'per_fte_year', 'per_gpu_year', 'per_gpu_day'"
)
#: rules by buyer: the effects and source qualities before it, and every table that checks a quality
EFFECTS_BEFORE_RULES_BY_BUYER = "'unavailable', 'licence_required'"
QUALITIES_BEFORE_GREY_MARKET = "'article', 'verified', 'secondary', 'weak', 'unverified', 'assumption'"
QUALITY_TABLES = (
    "gpu_models",
    "server_skus",
    "price_items",
    "exchange_rates",
    "data_security_levels",
    "assumptions",
    "scenario_rules",
    "availability_rules",
)


def upgrade() -> None:
    # --- rules by buyer (availability rules: scope, kind, effects)
    # every rule so far is a US export control that binds the buyer; import rules and 'discouraged' join,
    # a rule's natural key takes its kind, and a grey-market quote has a source quality of its own
    with op.batch_alter_table("availability_rules", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scope", sa.String(length=8), nullable=False, server_default="buyer"))
        batch_op.add_column(sa.Column("kind", sa.String(length=8), nullable=False, server_default="export"))
    with op.batch_alter_table("availability_rules", schema=None) as batch_op:
        batch_op.alter_column("scope", server_default=None, existing_type=sa.String(length=8))
        batch_op.alter_column("kind", server_default=None, existing_type=sa.String(length=8))
        batch_op.drop_constraint(op.f("uq_availability_rules_gpu_model_jurisdiction_valid_from"), type_="unique")
        batch_op.create_unique_constraint(
            op.f("uq_availability_rules_gpu_model_jurisdiction_kind_valid_from"),
            ["gpu_model", "jurisdiction", "kind", "valid_from"],
        )
        batch_op.drop_constraint(op.f("ck_availability_rules_effect"), type_="check")
        batch_op.create_check_constraint("effect", f"effect IN ({EFFECTS_BEFORE_RULES_BY_BUYER}, 'discouraged')")
        batch_op.create_check_constraint("scope", "scope IN ('buyer', 'location')")
        batch_op.create_check_constraint("kind", "kind IN ('export', 'import')")
    for table in QUALITY_TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(op.f(f"ck_{table}_source_quality"), type_="check")
            batch_op.create_check_constraint(
                "source_quality", f"source_quality IN ({QUALITIES_BEFORE_GREY_MARKET}, 'grey_market')"
            )
    # --- data residency (data_security levels: data_location; price rows: regions)
    # where each level lets data sit (the seeded defaults: docs/methodology.md "Data residency by location");
    # a bloc (the EU/EEA) is a region kind with member countries; a price row may hold in many regions
    with op.batch_alter_table("data_security_levels", schema=None) as batch_op:
        batch_op.add_column(sa.Column("data_location", sa.String(length=12), nullable=False, server_default="anywhere"))
    op.execute("UPDATE data_security_levels SET data_location = 'jurisdiction' WHERE key = 'high'")
    op.execute("UPDATE data_security_levels SET data_location = 'premises' WHERE key = 'extreme'")
    with op.batch_alter_table("data_security_levels", schema=None) as batch_op:
        batch_op.alter_column("data_location", server_default=None, existing_type=sa.String(length=12))
        batch_op.create_check_constraint("data_location", "data_location IN ('anywhere', 'jurisdiction', 'premises')")
    with op.batch_alter_table("regions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("members", sa.JSON(), nullable=True))
        batch_op.drop_constraint(op.f("ck_regions_kind"), type_="check")
        batch_op.create_check_constraint(
            "kind", "kind IN ('provider_region', 'subdivision', 'country', 'continent', 'bloc', 'global')"
        )
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        batch_op.add_column(sa.Column("regions", sa.JSON(), nullable=True))
    # --- market (interconnect values, max_term_days, reservations, storage)
    # fabrics: GPUDirect-TCPXO / -TCPX join the values; a short reservation states its longest term
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_term_days", sa.Integer(), nullable=True))
        batch_op.drop_constraint(op.f("ck_price_items_interconnect"), type_="check")
        batch_op.create_check_constraint(
            "interconnect",
            "interconnect IS NULL OR interconnect IN ('infiniband', 'roce', 'efa', 'tcpxo', 'tcpx', 'ethernet')",
        )
        batch_op.create_check_constraint("max_term_positive", "max_term_days IS NULL OR max_term_days > 0")
    # storage rented by the month: prices per TB-month join the units
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_price_items_unit"), type_="check")
        batch_op.create_check_constraint("unit", f"unit IN ({UNITS_BEFORE_STORAGE}, 'per_tb_month')")
    # --- model (capital, staff, spot capacity)
    pass


def downgrade() -> None:
    # --- model
    # --- market
    # prices per TB-month have no unit before
    op.execute("DELETE FROM price_items WHERE unit = 'per_tb_month'")
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_price_items_unit"), type_="check")
        batch_op.create_check_constraint("unit", f"unit IN ({UNITS_BEFORE_STORAGE})")
    # GPUDirect-TCPXO / -TCPX rows were classed as plain ethernet before
    op.execute("UPDATE price_items SET interconnect = 'ethernet' WHERE interconnect IN ('tcpxo', 'tcpx')")
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_price_items_max_term_positive"), type_="check")
        batch_op.drop_constraint(op.f("ck_price_items_interconnect"), type_="check")
        batch_op.create_check_constraint(
            "interconnect", "interconnect IS NULL OR interconnect IN ('infiniband', 'roce', 'efa', 'ethernet')"
        )
        batch_op.drop_column("max_term_days")
    # --- data residency
    # a bloc has no kind before: its rows go (no price row or rule can name one)
    op.execute("DELETE FROM regions WHERE kind = 'bloc'")
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        batch_op.drop_column("regions")
    with op.batch_alter_table("regions", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_regions_kind"), type_="check")
        batch_op.create_check_constraint(
            "kind", "kind IN ('provider_region', 'subdivision', 'country', 'continent', 'global')"
        )
        batch_op.drop_column("members")
    with op.batch_alter_table("data_security_levels", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_data_security_levels_data_location"), type_="check")
        batch_op.drop_column("data_location")
    # --- rules by buyer
    # a grey-market quote was 'secondary' before; rules the old schema cannot hold go (import rules, a
    # discouraged purchase, a rule of a location)
    for table in QUALITY_TABLES:
        op.execute(f"UPDATE {table} SET source_quality = 'secondary' WHERE source_quality = 'grey_market'")
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(op.f(f"ck_{table}_source_quality"), type_="check")
            batch_op.create_check_constraint("source_quality", f"source_quality IN ({QUALITIES_BEFORE_GREY_MARKET})")
    op.execute("DELETE FROM availability_rules WHERE kind <> 'export' OR scope <> 'buyer' OR effect = 'discouraged'")
    with op.batch_alter_table("availability_rules", schema=None) as batch_op:
        for name in ("scope", "kind", "effect"):
            batch_op.drop_constraint(op.f(f"ck_availability_rules_{name}"), type_="check")
        batch_op.create_check_constraint("effect", f"effect IN ({EFFECTS_BEFORE_RULES_BY_BUYER})")
        batch_op.drop_constraint(op.f("uq_availability_rules_gpu_model_jurisdiction_kind_valid_from"), type_="unique")
        batch_op.create_unique_constraint(
            op.f("uq_availability_rules_gpu_model_jurisdiction_valid_from"), ["gpu_model", "jurisdiction", "valid_from"]
        )
        batch_op.drop_column("kind")
        batch_op.drop_column("scope")
