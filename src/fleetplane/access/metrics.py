"""Prometheus metrics of the access library (KEP-4322, "Monitoring Requirements").

The KEP asks for "Number of Credential Obtention, categorized per plugin type, reply state" and
"Latency to obtain credentials, categorized per plugin type" without naming them, so:

* ``clusterprofile_credential_fetch_total{provider, result}``: counter of plugin executions.
  ``result`` is one of :data:`RESULTS`.
* ``clusterprofile_credential_fetch_duration_seconds{provider}``: histogram of plugin execution time
  (every execution, successful or not).
* ``clusterprofile_credential_cache_total{provider, result}``: counter of credential look-ups served
  from the cache (``hit``) or needing an execution (``miss``); misses joining an execution already in
  flight count as ``shared``.

"provider" is the provider name from the provider file (bounded by the file). They are registered on
the default ``prometheus_client`` registry exactly once, however often this module is imported or
reloaded.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, Counter, Histogram

RESULTS = (
    "success",
    "not_found",  # executable missing or not executable
    "untrusted",  # refused before running: relative command, or a file others could replace
    "exit_error",  # non-zero exit status
    "timeout",
    "invalid_output",  # not an ExecCredential, wrong apiVersion, no token or cert/key...
    "interactive_unsupported",
    "error",  # anything else (e.g. OS errors while starting the process)
)

FETCH_TOTAL_NAME = "clusterprofile_credential_fetch_total"
FETCH_DURATION_NAME = "clusterprofile_credential_fetch_duration_seconds"
CACHE_TOTAL_NAME = "clusterprofile_credential_cache_total"


def _existing(name: str):
    # prometheus_client registers counters under "<name>" (without _total) and "<name>_total".
    names = getattr(REGISTRY, "_names_to_collectors", {})
    return names.get(name) or names.get(name.removesuffix("_total"))


def _counter(name: str, doc: str, labels: tuple[str, ...]) -> Counter:
    existing = _existing(name)
    if existing is not None:
        return existing
    try:
        return Counter(name, doc, labels)
    except ValueError:  # raced with another registration
        return _existing(name)


def _histogram(name: str, doc: str, labels: tuple[str, ...]) -> Histogram:
    existing = _existing(name)
    if existing is not None:
        return existing
    try:
        return Histogram(
            name, doc, labels, buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
        )
    except ValueError:
        return _existing(name)


CREDENTIAL_FETCH_TOTAL = _counter(
    FETCH_TOTAL_NAME,
    "Exec credential plugin executions for ClusterProfile access, by provider and result.",
    ("provider", "result"),
)
CREDENTIAL_FETCH_DURATION = _histogram(
    FETCH_DURATION_NAME,
    "Time taken to obtain a credential from an exec credential plugin, by provider.",
    ("provider",),
)
CREDENTIAL_CACHE_TOTAL = _counter(
    CACHE_TOTAL_NAME,
    "Credential look-ups for ClusterProfile access served from the cache (hit), by a new plugin "
    "execution (miss) or by joining one in flight (shared).",
    ("provider", "result"),
)


def observe_fetch(provider: str, result: str, seconds: float) -> None:
    CREDENTIAL_FETCH_TOTAL.labels(provider=provider, result=result).inc()
    CREDENTIAL_FETCH_DURATION.labels(provider=provider).observe(seconds)


def observe_cache(provider: str, result: str) -> None:
    CREDENTIAL_CACHE_TOTAL.labels(provider=provider, result=result).inc()
