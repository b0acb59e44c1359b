"""Per-function figures for the Functions pages' browser tests: a few klasses over a week."""

from __future__ import annotations

import random

from django_qless.core import Client
from django_qless.core import fn_metrics as fm
from django_qless.core.deploys import mark_deploy
from django_qless.worker.fn_tally import FunctionTally

#: (klass, queue, typical run time in seconds, share of executions that fail).
KLASSES = (
    ("app.reports.build_monthly", "reports", 1.8, 0.02),
    ("app.mail.send_welcome", "mail", 0.14, 0.01),
    ("app.mail.send_digest", "mail", 0.35, 0.0),
    ("app.billing.charge_card", "billing", 0.6, 0.08),
    ("app.search.reindex_product", "search", 0.03, 0.0),
    ("app.images.thumbnail", "media", 0.09, 0.004),
)
#: The klass the function page's tests open.
SHOWN = "app.billing.charge_card"


def seed(qless: Client, hours: int = 24 * 7, seed_value: int = 26) -> None:
    """A week of executions (denser in the last hour) and two deploys."""
    rng = random.Random(seed_value)
    now = qless.now()
    pipe = qless.redis.pipeline(transaction=False)
    # Per minute over the last hour, then per hour back to a week.
    moments = [now - 60 * m for m in range(60)] + [now - 3600 * h for h in range(1, hours)]
    for at in moments:
        tally = FunctionTally()
        # An hour's slot holds as many jobs as the last hour's sixty minutes.
        scale = 1 if at > now - 3600 else 60
        for klass, queue, typical, failing in KLASSES:
            for _ in range(rng.randint(2, 12) * scale):
                outcome = "completed"
                if rng.random() < failing:
                    outcome = rng.choice(("failed", "retried"))
                run = rng.lognormvariate(0, 0.5) * typical
                tally.count(klass, queue, outcome, run, rng.expovariate(1 / 0.2))
        fm.add_functions(pipe, tally.take(), at)
    pipe.execute()
    mark_deploy(qless.redis, "v3.4.0", now - 25 * 60)
    mark_deploy(qless.redis, "v3.3.2", now - 30 * 3600)
