"""regions (a hierarchy ending at global), availability rules (export controls by jurisdiction), and the
shape of an offer: interconnect, platform billing, kW tiers; plans become free-form

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 16:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

QUALITIES = "source_quality IN ('article', 'verified', 'secondary', 'weak', 'unverified', 'assumption')"
OLD_PLANS = (
    "'on_demand', 'spot', 'reserved_1y', 'reserved_3y', 'monthly', 'capacity_block', "
    "'pay_as_you_go', 'subscription_monthly', 'subscription_1y', '*'"
)
ASSUMPTION_UNITS = (
    "'fraction', 'ratio', 'years', 'days', 'hours', 'minutes', 'count', 'servers', 'fte', 'kw', 'per_gpu_year'"
)
#: Google Cloud's 1- and 3-year prices are resource-based committed-use discounts: their rows take the plan
#: as Google sells it (data: the seeds name them so from now on)
GCP_COMMITMENTS = (("reserved_1y", "committed_use_1y"), ("reserved_3y", "committed_use_3y"))


def upgrade() -> None:
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        batch_op.add_column(sa.Column("interconnect", sa.String(length=12), nullable=True))
        batch_op.add_column(sa.Column("billing", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("min_kw", sa.Numeric(precision=12, scale=3), nullable=True))
        batch_op.drop_constraint(op.f("ck_price_items_plan"), type_="check")
        batch_op.create_check_constraint(
            "interconnect", "interconnect IS NULL OR interconnect IN ('infiniband', 'roce', 'efa', 'ethernet')"
        )
        batch_op.create_check_constraint(
            "billing", "billing IS NULL OR billing IN ('job_seconds', 'held_cluster', 'pooled')"
        )
        batch_op.create_check_constraint("min_kw_non_negative", "min_kw IS NULL OR min_kw >= 0")
    with op.batch_alter_table("assumptions", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_assumptions_unit"), type_="check")
        batch_op.create_check_constraint("unit", f"unit IN ({ASSUMPTION_UNITS}, 'tb_per_gpu')")
    op.create_table(
        "regions",
        sa.Column("key", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("parent", sa.String(length=40), nullable=True),
        sa.Column("provider", sa.String(length=60), nullable=True),
        sa.Column("source", sa.Text(), nullable=False),
        sa.CheckConstraint(
            "kind IN ('provider_region', 'subdivision', 'country', 'continent', 'global')", name=op.f("ck_regions_kind")
        ),
        sa.CheckConstraint("(parent IS NULL) = (kind = 'global')", name=op.f("ck_regions_parent_unless_global")),
        sa.ForeignKeyConstraint(["parent"], ["regions.key"], name=op.f("fk_regions_parent_regions")),
        sa.ForeignKeyConstraint(["provider"], ["providers.key"], name=op.f("fk_regions_provider_providers")),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_regions")),
    )
    op.create_table(
        "availability_rules",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("gpu_model", sa.String(length=40), nullable=False),
        sa.Column("jurisdiction", sa.String(length=40), nullable=False),
        sa.Column("effect", sa.String(length=20), nullable=False),
        sa.Column("valid_from", sa.Date(), nullable=False),
        sa.Column("valid_to", sa.Date(), nullable=True),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("source_quality", sa.String(length=12), nullable=False),
        sa.Column("rationale", sa.Text(), nullable=False),
        sa.CheckConstraint("effect IN ('unavailable', 'licence_required')", name=op.f("ck_availability_rules_effect")),
        sa.CheckConstraint(
            "valid_to IS NULL OR valid_to > valid_from", name=op.f("ck_availability_rules_validity_ordered")
        ),
        sa.CheckConstraint(QUALITIES, name=op.f("ck_availability_rules_source_quality")),
        sa.ForeignKeyConstraint(
            ["gpu_model"], ["gpu_models.key"], name=op.f("fk_availability_rules_gpu_model_gpu_models")
        ),
        sa.ForeignKeyConstraint(
            ["jurisdiction"], ["regions.key"], name=op.f("fk_availability_rules_jurisdiction_regions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_availability_rules")),
        sa.UniqueConstraint(
            "gpu_model",
            "jurisdiction",
            "valid_from",
            name=op.f("uq_availability_rules_gpu_model_jurisdiction_valid_from"),
        ),
    )
    prices = sa.table("price_items", sa.column("provider"), sa.column("option"), sa.column("plan"))
    for old, new in GCP_COMMITMENTS:
        op.execute(
            prices.update()
            .where(prices.c.provider == "gcp", prices.c.option == "rented_gpu_instances", prices.c.plan == old)
            .values(plan=new)
        )


def downgrade() -> None:
    prices = sa.table("price_items", sa.column("provider"), sa.column("option"), sa.column("plan"))
    for old, new in GCP_COMMITMENTS:
        op.execute(
            prices.update()
            .where(prices.c.provider == "gcp", prices.c.option == "rented_gpu_instances", prices.c.plan == new)
            .values(plan=old)
        )
    # rows the old schema cannot hold go: plans outside its list, assumptions in the new unit
    op.execute(sa.text(f"DELETE FROM price_items WHERE plan NOT IN ({OLD_PLANS})"))
    op.execute(sa.text("DELETE FROM assumptions WHERE unit = 'tb_per_gpu'"))
    op.drop_table("availability_rules")
    op.drop_table("regions")
    with op.batch_alter_table("assumptions", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_assumptions_unit"), type_="check")
        batch_op.create_check_constraint("unit", f"unit IN ({ASSUMPTION_UNITS})")
    with op.batch_alter_table("price_items", schema=None) as batch_op:
        for name in ("interconnect", "billing", "min_kw_non_negative"):
            batch_op.drop_constraint(op.f(f"ck_price_items_{name}"), type_="check")
        batch_op.create_check_constraint("plan", f"plan IN ({OLD_PLANS})")
        for column in ("min_kw", "billing", "interconnect"):
            batch_op.drop_column(column)
