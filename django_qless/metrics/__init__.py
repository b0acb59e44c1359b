"""Prometheus metrics: what qless holds in Redis, as metric families (`prometheus_client`)."""
