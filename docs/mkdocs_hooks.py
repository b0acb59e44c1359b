"""MkDocs hook: serve docs/images/*.png (written by the admin's browser test) as images/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

IMAGES = Path(__file__).resolve().parent / "images"


def on_files(files: Files, config: Any) -> Files:
    """Add every screenshot so pages can link `images/<name>.png` (checked in strict mode)."""
    for image in sorted(IMAGES.glob("*.png")):
        files.append(
            File(
                f"images/{image.name}",
                src_dir=str(IMAGES.parent),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files
