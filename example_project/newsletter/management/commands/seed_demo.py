"""`manage.py seed_demo`: create demo rows and enqueue jobs that end in every qless state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from newsletter.demo import seed, summary


class Command(BaseCommand):
    help = (
        "Create demo subscribers and issues and enqueue the demo jobs (welcome emails, an "
        "issue pipeline, a long export, imports, a recurring purge, a paused queue)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--quick", action="store_true",
                            help="make the long export job finish in well under a second")
        parser.add_argument("--manifest", type=Path,
                            help="write the enqueued jids, by role, to this JSON file")

    def handle(self, *args: Any, quick: bool, manifest: Path | None, **options: Any) -> None:
        """Seed, then print what was enqueued."""
        result = seed(quick=quick)
        if manifest is not None:
            manifest.write_text(result.dumps(), encoding="utf-8")
        self.stdout.write("Enqueued demo jobs:")
        for role, count in summary(result).items():
            self.stdout.write(f"  {count:3d}  {role}")
