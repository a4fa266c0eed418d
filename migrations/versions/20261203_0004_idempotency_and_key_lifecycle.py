"""idempotency keys of stored recommendations; API key expiry, last use and rotation

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 08:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "idempotency_keys",
        sa.Column("api_key_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("recommendation_id", sa.String(length=36), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_keys.id"], name=op.f("fk_idempotency_keys_api_key_id_api_keys")),
        sa.ForeignKeyConstraint(
            ["recommendation_id"],
            ["recommendations.id"],
            name=op.f("fk_idempotency_keys_recommendation_id_recommendations"),
        ),
        sa.PrimaryKeyConstraint("api_key_id", "key", name=op.f("pk_idempotency_keys")),
    )
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.create_index("ix_idempotency_keys_created_at", ["created_at"], unique=False)
        batch_op.create_index("ix_idempotency_keys_recommendation_id", ["recommendation_id"], unique=False)

    with op.batch_alter_table("recommendations", schema=None) as batch_op:
        batch_op.create_index("ix_recommendations_api_key_id_created_at", ["api_key_id", "created_at"], unique=False)

    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("replaced_by_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_api_keys_replaced_by_id_api_keys"), "api_keys", ["replaced_by_id"], ["id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_api_keys_replaced_by_id_api_keys"), type_="foreignkey")
        batch_op.drop_column("replaced_by_id")
        batch_op.drop_column("last_used_at")
        batch_op.drop_column("expires_at")

    with op.batch_alter_table("recommendations", schema=None) as batch_op:
        batch_op.drop_index("ix_recommendations_api_key_id_created_at")

    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.drop_index("ix_idempotency_keys_recommendation_id")
        batch_op.drop_index("ix_idempotency_keys_created_at")

    op.drop_table("idempotency_keys")
