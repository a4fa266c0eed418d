"""Errors the decision core raises, for the edge to turn into answers (``app.web.problems`` maps
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


class InconsistentProfile(DomainError):
    """The profile's fields contradict each other (a largest job above the GPUs needed)."""


class NothingAssessable(DomainError):
    """No option could be assessed for the request."""


class TooMuchWork(DomainError):
    """The request asks for more work than one request may (a documented maximum); split it."""


class KnowledgeUnavailable(DomainError):
    """No knowledge version is loaded yet."""


class NoOffer(MissingKnowledge):
    """An option has no offer for the profile (its hardware, providers, regions, date): not a failure
    of the option, a fact about the price books (reason code ``no-offer``)."""


class OptionFailed(Exception):
    """An option's plugin raised something other than :class:`MissingKnowledge`: a defect. The edge
    logs the original exception (the ``__cause__``) with the request id and counts it; answers say
    only ``option-failed``, never the exception's text."""

    def __init__(self, option: str) -> None:
        super().__init__(f"option '{option}' failed")
        self.option = option


#: what an option that could not be assessed answers in ``error_code``
NO_OFFER, MISSING_KNOWLEDGE, OPTION_FAILED = "no-offer", "missing-knowledge", "option-failed"
#: the exceptions the core isolates per option: anything else is the core's own defect and propagates
ISOLATED = (MissingKnowledge, OptionFailed)


def failure(exc: BaseException) -> tuple[str, str]:
    """``(error_code, error)`` of an option that could not be assessed: the code, and a sentence safe
    to show a client (the knowledge base's own words for a gap; never a plugin's exception text)."""
    if isinstance(exc, NoOffer):
        return NO_OFFER, str(exc)
    if isinstance(exc, MissingKnowledge):
        return MISSING_KNOWLEDGE, str(exc)
    return OPTION_FAILED, "the option's computation failed; the service has logged it with the request id"


def said(exc: BaseException) -> str:
    """What :func:`failure` says of ``exc`` as a sentence to render: the message it was raised with
    where that is a message code (``app.core.text.Msg``: a ``NoOffer`` names the option, hardware and
    filters in the request's language), else the same text as ``failure``'s."""
    code, error = failure(exc)
    raised = exc.args[0] if code != OPTION_FAILED and len(exc.args) == 1 else None
    return raised if isinstance(raised, str) and type(raised) is not str else error


class PluginError(RuntimeError):
    """A plugin broke the contract at start-up (duplicate option key, malformed answer)."""
