"""A stand-in mail relay that behaves like real ones do: greylisting and bounces.

Nothing leaves the machine: accepted messages are only logged. Addresses at
`greylist.example` are refused on the first attempt (greylisting servers ask senders to
come back later), addresses at `nxdomain.example` bounce for good.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("newsletter.mail")

GREYLISTING_DOMAINS = frozenset({"greylist.example"})
BOUNCING_DOMAINS = frozenset({"nxdomain.example"})


class MailServerBusyError(Exception):
    """The relay refused for now (SMTP 4xx): worth trying again later."""


class MailboxNotFoundError(Exception):
    """The address does not exist (SMTP 5xx): retrying will not help."""


def domain_of(address: str) -> str:
    """The part after the @, lower-cased."""
    return address.rpartition("@")[2].lower()


def deliver(address: str, subject: str, *, attempt: int) -> None:
    """Hand one message to the relay; `attempt` is 1 for the first try."""
    domain = domain_of(address)
    if domain in BOUNCING_DOMAINS:
        raise MailboxNotFoundError(f"550 5.1.1 <{address}>: recipient address rejected")
    if domain in GREYLISTING_DOMAINS and attempt == 1:
        raise MailServerBusyError(f"451 4.7.1 <{address}>: greylisted, please try again later")
    logger.info("mail to %s: %s", address, subject)
