"""Scrub credential material out of text that ends up in errors or logs (plugin stderr)."""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[REDACTED]"

_PEM_PRIVATE = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S
)
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)()[^\s\"',;]{8,}")
_ASSIGNED = re.compile(
    r"(?i)\b(token|password|passwd|secret|api[_-]?key|client[_-]?key[_-]?data)(\s*[:=]\s*)(\"?)[^\s\"',;]{8,}"
)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")
_CRED_JSON = re.compile(r'("(?:token|clientKeyData|client-key-data|password)"\s*:\s*")((?:[^"\\]|\\.)*)(")')


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Replace known secrets and anything that looks like a credential by ``[REDACTED]``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, REDACTED)
    text = _PEM_PRIVATE.sub(REDACTED, text)
    text = _CRED_JSON.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    text = _JWT.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _ASSIGNED.sub(lambda m: m.group(1) + m.group(2) + m.group(3) + REDACTED, text)
    return text


def truncate(text: str, limit: int) -> str:
    """Keep the *end* of ``text`` (where plugins usually print the reason they fail)."""
    if len(text) <= limit:
        return text
    return f"[... {len(text) - limit} characters truncated ...]" + text[-limit:]
