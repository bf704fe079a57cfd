"""Structured logs: JSON lines by default (one event per line, machine-readable), or a
console format for people; the standard library's loggers are routed through structlog."""

from __future__ import annotations

import logging
import sys

import structlog
from structlog.typing import Processor


def configure_logging(level: str = "info", fmt: str = "json", component: str | None = None) -> None:
    """Route logging to stderr; with ``component``, every line says which process wrote it
    (``hub``, ``controller-manager``: they share a terminal or a journal)."""
    renderer = structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    shared: list[Processor] = [
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if component is not None:
        shared.append(_component(component))
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, structlog.processors.format_exc_info, renderer],
        foreign_pre_chain=shared,
    ))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def _component(name: str) -> Processor:
    def add(_logger: object, _method: str, event: structlog.typing.EventDict) -> structlog.typing.EventDict:
        event.setdefault("component", name)
        return event

    return add
