# _fresh_throttle_counts: portal links opened here count against the portal's per-address
# throttle, so each test starts with none (else the order of the suite decides).
from tests.portal.conftest import (  # noqa: F401 - fixtures used here
    _fresh_throttle_counts,
    issue_link,
    signed_in,
)
from tests.staff.conftest import editor, no_role, privacy_admin, viewer  # noqa: F401
