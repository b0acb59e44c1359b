"""The registry a scrape reads, and the text it returns (Prometheus exposition format)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from .collector import QlessCollector, default_collector


def qless_registry(collector: QlessCollector | None = None) -> CollectorRegistry:
    """A registry holding only the qless collector (not the process' default metrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector or default_collector())
    return registry


def exposition(registry: CollectorRegistry | None = None) -> bytes:
    """One scrape, as Prometheus' text format."""
    return generate_latest(registry or qless_registry())
