"""Settings of the Sentinel failover workers: the fault suite's, plus `REPLICA_ACK`.

`QLESS_FAULTS_REPLICA_ACK` (JSON, e.g. `{"REPLICAS": 1, "TIMEOUT": 0.5}`) turns on
`REPLICA_ACK` for the default connection; without it the connection is the plain one.
"""

from __future__ import annotations

import json
import os

from tests.faults.settings import *  # noqa: F403
from tests.faults.settings import QLESS

_ack = os.environ.get("QLESS_FAULTS_REPLICA_ACK")
if _ack:
    _connection = {
        "URL": QLESS["URL"], "OPTIONS": QLESS["OPTIONS"], "REPLICA_ACK": json.loads(_ack),
    }
    QLESS = {
        **{key: value for key, value in QLESS.items() if key not in ("URL", "OPTIONS")},
        "CONNECTIONS": {"default": _connection},
    }
