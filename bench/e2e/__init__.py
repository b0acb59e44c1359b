"""End-to-end worker benchmarks: systems, measurements and the report.

`python bench/<script>.py` puts bench/ on the path, so the scripts import this package
directly; its modules also import the Redis harness of tests/ at the root, added here.
"""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
