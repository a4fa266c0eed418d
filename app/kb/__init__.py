"""The knowledge base and the service's own records in SQL. Both table modules are imported here, so
the one declarative metadata holds every table wherever ``app.kb`` is used (migrations, backups, tests)."""

from app.kb import models, service_records

__all__ = ["models", "service_records"]
