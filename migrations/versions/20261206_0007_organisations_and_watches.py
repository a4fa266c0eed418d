"""organisations: API keys and stored recommendations of an organisation, its private price book (rows never
erased, closed by a book version), watches on stored recommendations and their deliveries

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06 02:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "organisations",
        sa.Column("key", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("book_version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_organisations")),
    )
    op.create_table(
        "org_prices",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("org", sa.String(length=40), nullable=False),
        sa.Column("added_in", sa.Integer(), nullable=False),
        sa.Column("closed_in", sa.Integer(), nullable=True),
        sa.Column("closed_on", sa.Date(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("option", sa.String(length=40), nullable=False),
        sa.Column("provider", sa.String(length=60), nullable=False),
        sa.Column("item", sa.String(length=40), nullable=False),
        sa.Column("subject", sa.String(length=120), nullable=False),
        sa.Column("gpu_model", sa.String(length=40), nullable=False),
        sa.Column("plan", sa.String(length=24), nullable=False),
        sa.Column("unit", sa.String(length=20), nullable=False),
        sa.Column("gpus_per_unit", sa.Integer(), nullable=True),
        sa.Column("low", sa.Numeric(precision=20, scale=6), nullable=False),
        sa.Column("expected", sa.Numeric(precision=20, scale=6), nullable=True),
        sa.Column("high", sa.Numeric(precision=20, scale=6), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("region", sa.String(length=40), nullable=False),
        sa.Column("regions", sa.JSON(), nullable=True),
        sa.Column("valid_from", sa.Date(), nullable=False),
        sa.Column("valid_to", sa.Date(), nullable=True),
        sa.Column("capacity_gpus", sa.Integer(), nullable=True),
        sa.Column("lead_time_days_low", sa.Numeric(precision=10, scale=4), nullable=True),
        sa.Column("lead_time_days_high", sa.Numeric(precision=10, scale=4), nullable=True),
        sa.Column("min_gpus", sa.Integer(), nullable=True),
        sa.Column("residency", sa.String(length=24), nullable=True),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("source_quality", sa.String(length=12), nullable=False),
        sa.Column("retrieved_on", sa.Date(), nullable=True),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("interconnect", sa.String(length=12), nullable=True),
        sa.Column("billing", sa.String(length=16), nullable=True),
        sa.Column("min_kw", sa.Numeric(precision=12, scale=3), nullable=True),
        sa.Column("max_term_days", sa.Integer(), nullable=True),
        sa.CheckConstraint(
            "billing IS NULL OR billing IN ('job_seconds', 'held_cluster', 'pooled')",
            name=op.f("ck_org_prices_billing"),
        ),
        sa.CheckConstraint("currency IN ('CNY', 'USD', 'EUR')", name=op.f("ck_org_prices_currency")),
        sa.CheckConstraint(
            "interconnect IS NULL OR interconnect IN ('infiniband', 'roce', 'efa', 'tcpxo', 'tcpx', 'ethernet')",
            name=op.f("ck_org_prices_interconnect"),
        ),
        sa.CheckConstraint(
            "residency IS NULL OR residency IN ('public_multi_tenant', 'dedicated', 'private_deployment', 'on_premises')",
            name=op.f("ck_org_prices_residency"),
        ),
        sa.CheckConstraint(
            "source_quality IN ('article', 'verified', 'secondary', 'weak', 'unverified', 'assumption', 'grey_market')",
            name=op.f("ck_org_prices_source_quality"),
        ),
        sa.CheckConstraint(
            "unit IN ('per_server', 'per_server_year', 'per_team_year', 'per_server_hour', 'per_gpu_hour', 'per_kwh', 'fraction', 'per_gpu', 'per_tb', 'per_tb_month', 'per_kw', 'per_kw_month', 'per_fte_year', 'per_gpu_year', 'per_gpu_day')",
            name=op.f("ck_org_prices_unit"),
        ),
        sa.CheckConstraint("added_in > 0", name=op.f("ck_org_prices_added_in_positive")),
        sa.CheckConstraint("capacity_gpus IS NULL OR capacity_gpus > 0", name=op.f("ck_org_prices_capacity_positive")),
        sa.CheckConstraint("closed_in IS NULL OR closed_in > added_in", name=op.f("ck_org_prices_closed_after_added")),
        sa.CheckConstraint(
            "expected IS NULL OR (low <= expected AND expected <= high)", name=op.f("ck_org_prices_expected_in_range")
        ),
        sa.CheckConstraint(
            "gpus_per_unit IS NULL OR gpus_per_unit > 0", name=op.f("ck_org_prices_gpus_per_unit_positive")
        ),
        sa.CheckConstraint(
            "lead_time_days_high IS NULL OR lead_time_days_low <= lead_time_days_high",
            name=op.f("ck_org_prices_lead_time_ordered"),
        ),
        sa.CheckConstraint("low <= high", name=op.f("ck_org_prices_low_le_high")),
        sa.CheckConstraint("low >= 0", name=op.f("ck_org_prices_low_non_negative")),
        sa.CheckConstraint("max_term_days IS NULL OR max_term_days > 0", name=op.f("ck_org_prices_max_term_positive")),
        sa.CheckConstraint("min_kw IS NULL OR min_kw >= 0", name=op.f("ck_org_prices_min_kw_non_negative")),
        sa.CheckConstraint("valid_to IS NULL OR valid_to > valid_from", name=op.f("ck_org_prices_validity_ordered")),
        sa.ForeignKeyConstraint(["org"], ["organisations.key"], name=op.f("fk_org_prices_org_organisations")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_org_prices")),
    )
    with op.batch_alter_table("org_prices", schema=None) as batch_op:
        batch_op.create_index("ix_org_prices_org_added_in", ["org", "added_in"], unique=False)

    op.create_table(
        "watches",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("recommendation_id", sa.String(length=36), nullable=False),
        sa.Column("api_key_id", sa.Integer(), nullable=True),
        sa.Column("org", sa.String(length=40), nullable=True),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("secret", sa.String(length=200), nullable=False),
        sa.Column("min_cost_change", sa.Float(), nullable=False),
        sa.Column("on_rank_change", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("checked_version", sa.String(length=80), nullable=True),
        sa.CheckConstraint("min_cost_change >= 0", name=op.f("ck_watches_min_cost_change_non_negative")),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_keys.id"], name=op.f("fk_watches_api_key_id_api_keys")),
        sa.ForeignKeyConstraint(["org"], ["organisations.key"], name=op.f("fk_watches_org_organisations")),
        sa.ForeignKeyConstraint(
            ["recommendation_id"], ["recommendations.id"], name=op.f("fk_watches_recommendation_id_recommendations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_watches")),
    )
    with op.batch_alter_table("watches", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_watches_org"), ["org"], unique=False)
        batch_op.create_index("ix_watches_recommendation_id", ["recommendation_id"], unique=False)

    op.create_table(
        "watch_deliveries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("watch_id", sa.String(length=36), nullable=False),
        sa.Column("event", sa.String(length=80), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_by", sa.String(length=80), nullable=True),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("history", sa.JSON(), nullable=False),
        sa.CheckConstraint("status IN ('pending', 'delivered', 'failed')", name=op.f("ck_watch_deliveries_status")),
        sa.ForeignKeyConstraint(["watch_id"], ["watches.id"], name=op.f("fk_watch_deliveries_watch_id_watches")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_watch_deliveries")),
    )
    with op.batch_alter_table("watch_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_watch_deliveries_due", ["status", "next_attempt_at"], unique=False)
        batch_op.create_index("uq_watch_deliveries_watch_id_event", ["watch_id", "event"], unique=True)

    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("org", sa.String(length=40), nullable=True))
        batch_op.create_foreign_key(batch_op.f("fk_api_keys_org_organisations"), "organisations", ["org"], ["key"])

    with op.batch_alter_table("recommendations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("org", sa.String(length=40), nullable=True))
        batch_op.create_index(batch_op.f("ix_recommendations_org"), ["org"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_recommendations_org_organisations"), "organisations", ["org"], ["key"]
        )


def downgrade() -> None:
    with op.batch_alter_table("recommendations", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_recommendations_org_organisations"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_recommendations_org"))
        batch_op.drop_column("org")

    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_api_keys_org_organisations"), type_="foreignkey")
        batch_op.drop_column("org")

    with op.batch_alter_table("watch_deliveries", schema=None) as batch_op:
        batch_op.drop_index("uq_watch_deliveries_watch_id_event")
        batch_op.drop_index("ix_watch_deliveries_due")

    op.drop_table("watch_deliveries")
    with op.batch_alter_table("watches", schema=None) as batch_op:
        batch_op.drop_index("ix_watches_recommendation_id")
        batch_op.drop_index(batch_op.f("ix_watches_org"))

    op.drop_table("watches")
    with op.batch_alter_table("org_prices", schema=None) as batch_op:
        batch_op.drop_index("ix_org_prices_org_added_in")

    op.drop_table("org_prices")
    op.drop_table("organisations")
