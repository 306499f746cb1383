"""The usage tests use the API's, the staff pages' and the portal's fixtures."""

from tests.api.conftest import (  # noqa: F401
    _fresh_throttle_counts,
    agent,
    issue_token,
    make_agent,
)
from tests.facts.conftest import host_loop  # noqa: F401
from tests.portal.conftest import issue_link, signed_in  # noqa: F401
from tests.staff.conftest import editor, no_role, privacy_admin, viewer  # noqa: F401
