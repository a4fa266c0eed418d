"""The audit trail feature: seed loads, data migrations and API key changes, read by ``admin`` keys."""
