from tests.portal.conftest import issue_link, signed_in  # noqa: F401 - fixtures used here
from tests.staff.conftest import editor, no_role, privacy_admin, viewer  # noqa: F401
