from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.facts.conftest import host_loop  # noqa: F401 - the agent host's loop, for the store

# Portal links opened here count against the portal's per-address throttle: start each test
# with no counts, as the portal's own tests do (else the order of the suite decides).
# A traveller signed in to the portal through a real link (the download package's tests).
from tests.portal.conftest import (  # noqa: F401
    _fresh_throttle_counts,  # noqa: F401
    issue_link,
    signed_in,
    two_travellers,
)

from .receiver import Receiver


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    settings.DEBUG = True  # the receiver is plain http:// on 127.0.0.1
    running = Receiver().start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def recipient(receiver, settings):
    """A recipient of every event, pointed at the receiver, with the secret it was given."""
    from memoryadmin.facts.actors import Actor
    from memoryadmin.privacy.recipients import webhook_recipient_add

    row, secret = webhook_recipient_add(
        name="CRM", url=receiver.url, events=None, actor=Actor.system("test")
    )
    receiver.secret = secret
    return row
