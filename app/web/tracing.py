"""Traces: OpenTelemetry spans per request and around evaluation, snapshot load and the writer.

Off by default. The standard variables switch them on: ``OTEL_TRACES_EXPORTER=otlp`` (or ``console``),
or an OTLP endpoint alone (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``);
``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` keep them off (``app.settings`` decides).
The SDK reads the rest of its variables itself: ``OTEL_SERVICE_NAME`` (default ``compute-advisor``),
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``/``_ARG``, ``OTEL_EXPORTER_OTLP_HEADERS``, … The OTLP
exporter installed speaks HTTP/protobuf (port 4318), not gRPC.

Request spans come from Litestar's OpenTelemetry plugin (the ASGI instrumentation, outermost, so
router 404s are traced too), named ``METHOD /route/{template}`` once routed; an incoming
``traceparent`` header continues the caller's trace. The service's own spans are made with the
``Tracer`` the composition root hands to the advisor, the knowledge store and the writer (a no-op
tracer while tracing is off).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from litestar.plugins.opentelemetry import OpenTelemetryConfig, OpenTelemetryPlugin
from opentelemetry import trace

from app import __version__

if TYPE_CHECKING:
    from litestar.types import ASGIApp, Receive, Scope, Send
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

    from app.settings import Settings

log = logging.getLogger(__name__)
SERVICE_NAME = "compute-advisor"


def tracer_provider(settings: Settings) -> TracerProvider | None:
    """An SDK tracer provider exporting to ``settings.trace_exporters``, or None: tracing off."""
    if not settings.trace_exporters:
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    resource = Resource.create({"service.version": __version__})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    for name in settings.trace_exporters:
        exporter: SpanExporter
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        else:
            exporter = ConsoleSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    log.info("tracing on: %s", ", ".join(settings.trace_exporters))
    return provider


def tracer(provider: Any | None) -> Tracer:
    """The service's tracer: from ``provider``, else one that records nothing."""
    if provider is None:
        return trace.NoOpTracer()
    return provider.get_tracer(SERVICE_NAME, __version__)  # type: ignore[no-any-return]


def _span_details(scope: Scope) -> tuple[str, dict[str, Any]]:
    """The request span's first name: the method alone (the route template is known only once routed)."""
    return str(scope.get("method") or "HTTP"), {}


def _note_trace(span: Span, scope: dict[str, Any]) -> None:
    """Keep the trace id for the request's log line."""
    context = span.get_span_context()
    if context.is_valid:
        scope.setdefault("state", {})["trace_id"] = format(context.trace_id, "032x")


def tracing_plugin(provider: TracerProvider) -> OpenTelemetryPlugin:
    """Litestar's OpenTelemetry plugin on ``provider`` (one span per request, no receive/send spans)."""
    return OpenTelemetryPlugin(
        OpenTelemetryConfig(
            tracer_provider=provider,
            exclude_spans=["receive", "send"],
            scope_span_details_extractor=_span_details,
            server_request_hook_handler=_note_trace,
        )
    )


def name_request_span(app: ASGIApp) -> ASGIApp:
    """Route middleware: name the request span after the route template (``GET /v1/gpus/{key}``), set
    ``http.route`` and the request id."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            template = scope.get("path_template") or scope["path"]
            span.update_name(f"{scope.get('method', 'HTTP')} {template}")
            span.set_attribute("http.route", template)
            if rid := (scope.get("state") or {}).get("request_id"):
                span.set_attribute("compute_advisor.request_id", rid)
        await app(scope, receive, send)

    return middleware
