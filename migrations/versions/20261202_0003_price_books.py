"""price books: providers, offers (GPU model, plan, capacity, lead time, residency), exchange rates,
data-security levels

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 18:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_UNITS = "unit IN ('per_server', 'per_server_year', 'per_team_year', 'per_server_hour', 'per_gpu_hour', 'per_kwh', 'fraction')"
UNITS = (
    "unit IN ('per_server', 'per_server_year', 'per_team_year', 'per_server_hour', 'per_gpu_hour', 'per_kwh', "
    "'fraction', 'per_gpu', 'per_tb', 'per_kw', 'per_kw_month', 'per_fte_year', 'per_gpu_year', 'per_gpu_day')"
)
CURRENCIES = "('CNY', 'USD', 'EUR')"
PLANS = (
    "plan IN ('on_demand', 'spot', 'reserved_1y', 'reserved_3y', 'monthly', 'capacity_block', "
    "'pay_as_you_go', 'subscription_monthly', 'subscription_1y', '*')"
)
RESIDENCIES = (
    "residency IS NULL OR residency IN ('public_multi_tenant', 'dedicated', 'private_deployment', 'on_premises')"
)
QUALITIES = "source_quality IN ('article', 'verified', 'secondary', 'weak', 'unverified', 'assumption')"
OLD_KEY = "uq_price_items_option_provider_item_subject_region_currency_valid_from"
#: the source article's rows take the plan they always meant (data: the seeds name them so from now on)
ARTICLE_PLANS = (
    ("rented_gpu_instances", "instance_hour", "on_demand"),
    ("rented_gpu_instances", "reservation_discount", "reserved_1y"),
    ("ai_compute_platform", "gpu_hour", "pay_as_you_go"),
)


def upgrade() -> None:
    op.create_table(
        "providers",
        sa.Column("key", sa.String(length=60), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("country", sa.String(length=2), nullable=True),
        sa.Column("website", sa.String(length=200), nullable=True),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "kind IN ('hyperscaler', 'gpu_cloud', 'china_cloud', 'marketplace', 'platform', 'own', 'reference')",
            name=op.f("ck_providers_kind"),
        ),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_providers")),
    )
    op.create_table(
        "exchange_rates",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("base", sa.String(length=3), nullable=False),
        sa.Column("quote", sa.String(length=3), nullable=False),
        sa.Column("rate", sa.Numeric(precision=18, scale=8), nullable=False),
        sa.Column("valid_on", sa.Date(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("source_quality", sa.String(length=12), nullable=False),
        sa.Column("retrieved_on", sa.Date(), nullable=True),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.CheckConstraint(f"base IN {CURRENCIES}", name=op.f("ck_exchange_rates_base")),
        sa.CheckConstraint("quote = 'CNY'", name=op.f("ck_exchange_rates_quote_is_pivot")),
        sa.CheckConstraint("rate > 0", name=op.f("ck_exchange_rates_rate_positive")),
        sa.CheckConstraint(QUALITIES, name=op.f("ck_exchange_rates_source_quality")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_exchange_rates")),
        sa.UniqueConstraint("base", "quote", "valid_on", name=op.f("uq_exchange_rates_base_quote_valid_on")),
    )
    op.create_table(
        "data_security_levels",
        sa.Column("key", sa.String(length=20), nullable=False),
        sa.Column("accepted_residencies", sa.JSON(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("source_quality", sa.String(length=12), nullable=False),
        sa.Column("rationale", sa.Text(), nullable=False),
        sa.CheckConstraint("key IN ('standard', 'high', 'extreme')", name=op.f("ck_data_security_levels_key")),
        sa.CheckConstraint(QUALITIES, name=op.f("ck_data_security_levels_source_quality")),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_data_security_levels")),
    )
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        batch_op.alter_column("subject", existing_type=sa.String(length=40), type_=sa.String(length=120))
        for column in ("low", "expected", "high"):  # catalog prices carry up to 6 decimals (e.g. 0.066 USD/kWh)
            batch_op.alter_column(column, existing_type=sa.Numeric(18, 4), type_=sa.Numeric(20, 6))
        batch_op.add_column(sa.Column("gpu_model", sa.String(length=40), nullable=False, server_default="*"))
        batch_op.add_column(sa.Column("plan", sa.String(length=24), nullable=False, server_default="*"))
        batch_op.add_column(sa.Column("gpus_per_unit", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("capacity_gpus", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("lead_time_days_low", sa.Numeric(precision=10, scale=4), nullable=True))
        batch_op.add_column(sa.Column("lead_time_days_high", sa.Numeric(precision=10, scale=4), nullable=True))
        batch_op.add_column(sa.Column("min_gpus", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("residency", sa.String(length=24), nullable=True))
        batch_op.add_column(sa.Column("retrieved_on", sa.Date(), nullable=True))
        batch_op.drop_constraint(op.f(OLD_KEY), type_="unique")
        batch_op.create_unique_constraint(
            op.f("uq_price_items_natural_key"),
            ["option", "provider", "item", "subject", "gpu_model", "plan", "region", "currency", "valid_from"],
        )
        batch_op.drop_constraint(op.f("ck_price_items_unit"), type_="check")
        batch_op.create_check_constraint("unit", UNITS)
        batch_op.drop_constraint(op.f("ck_price_items_currency"), type_="check")
        batch_op.create_check_constraint("currency", f"currency IN {CURRENCIES}")
        batch_op.create_check_constraint("plan", PLANS)
        batch_op.create_check_constraint("residency", RESIDENCIES)
        batch_op.create_check_constraint("gpus_per_unit_positive", "gpus_per_unit IS NULL OR gpus_per_unit > 0")
        batch_op.create_check_constraint("capacity_positive", "capacity_gpus IS NULL OR capacity_gpus > 0")
        batch_op.create_check_constraint(
            "lead_time_ordered", "lead_time_days_high IS NULL OR lead_time_days_low <= lead_time_days_high"
        )
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        batch_op.alter_column("gpu_model", server_default=None)
        batch_op.alter_column("plan", server_default=None)
    prices = sa.table("price_items", sa.column("option"), sa.column("item"), sa.column("plan"))
    for option, item, plan in ARTICLE_PLANS:
        op.execute(prices.update().where(prices.c.option == option, prices.c.item == item).values(plan=plan))


def downgrade() -> None:
    prices = sa.table("price_items", sa.column("plan"), sa.column("currency"), sa.column("unit"))
    # rows the old schema cannot hold go: prices in other currencies or units, and every plan but one per key
    op.execute(prices.delete().where(prices.c.currency.notin_(["CNY", "USD"])))
    op.execute(
        prices.delete().where(
            prices.c.unit.notin_(
                [
                    "per_server",
                    "per_server_year",
                    "per_team_year",
                    "per_server_hour",
                    "per_gpu_hour",
                    "per_kwh",
                    "fraction",
                ]
            )
        )
    )
    op.execute(
        sa.text(
            "DELETE FROM price_items WHERE gpu_model <> '*' OR plan NOT IN ('*', 'on_demand', 'reserved_1y', 'pay_as_you_go')"
        )
    )
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        for name in (
            "plan",
            "residency",
            "gpus_per_unit_positive",
            "capacity_positive",
            "lead_time_ordered",
            "unit",
            "currency",
        ):
            batch_op.drop_constraint(op.f(f"ck_price_items_{name}"), type_="check")
        batch_op.create_check_constraint("unit", OLD_UNITS)
        batch_op.create_check_constraint("currency", "currency IN ('CNY', 'USD')")
        batch_op.drop_constraint(op.f("uq_price_items_natural_key"), type_="unique")
        batch_op.create_unique_constraint(
            op.f(OLD_KEY), ["option", "provider", "item", "subject", "region", "currency", "valid_from"]
        )
        for column in (
            "retrieved_on",
            "residency",
            "min_gpus",
            "lead_time_days_high",
            "lead_time_days_low",
            "capacity_gpus",
            "gpus_per_unit",
            "plan",
            "gpu_model",
        ):
            batch_op.drop_column(column)
        batch_op.alter_column("subject", existing_type=sa.String(length=120), type_=sa.String(length=40))
        for column in ("low", "expected", "high"):
            batch_op.alter_column(column, existing_type=sa.Numeric(20, 6), type_=sa.Numeric(18, 4))
    op.drop_table("data_security_levels")
    op.drop_table("exchange_rates")
    op.drop_table("providers")
