"""The health feature: liveness and readiness, with the database check they share."""
