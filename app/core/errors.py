"""Errors the decision core raises, for the edge to turn into answers (``app.lib.problems`` maps
each to its problem-details status and type; the core knows nothing of HTTP)."""

from __future__ import annotations


class MissingKnowledge(LookupError):
    """The knowledge base lacks a row a computation needs; the message says which."""


class DomainError(Exception):
    """An error the client can act on: the request is valid but cannot be answered as asked."""

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        #: the request field at fault, when one is
        self.field = field


class UnknownReference(DomainError):
    """The request names something the knowledge base does not have (a GPU model, a currency)."""


class NothingAssessable(DomainError):
    """No option could be assessed for the request."""


class TooMuchWork(DomainError):
    """The request asks for more work than one request may (a documented maximum); split it."""


class KnowledgeUnavailable(DomainError):
    """No knowledge version is loaded yet."""
