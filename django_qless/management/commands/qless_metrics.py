"""`manage.py qless_metrics`: serve qless's Prometheus metrics over HTTP, or print them once."""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ...metrics.exposition import exposition, qless_registry

#: The default port (in the range Prometheus exporters use; free in its registry list).
DEFAULT_PORT = 9808


class Command(BaseCommand):
    help = (
        "Prometheus exporter: serve every qless metric of every QLESS connection at "
        "http://ADDR:PORT/metrics, read from Redis at each scrape (or print them once)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default="127.0.0.1",
                            help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)")
        parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                            help=f"port to listen on (default {DEFAULT_PORT})")
        parser.add_argument("--once", action="store_true",
                            help="print one scrape to standard output and exit")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["once"]:
            self.stdout.write(exposition().decode(), ending="")
            return
        from prometheus_client import start_http_server  # noqa: PLC0415 - only when serving

        server, thread = start_http_server(options["port"], options["addr"], qless_registry())
        self.stdout.write(f"Serving qless metrics on http://{options['addr']}:"
                          f"{server.server_port}/metrics")
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        stop.wait()
        server.shutdown()
        thread.join(timeout=5)
