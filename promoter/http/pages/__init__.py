"""The pages people read: the dashboard (``/``, ``/dashboard/{name}``: the overview, each
strategy's pipeline, environments, changes, history and buttons), the audit page, the
status page a PR's checks link to, and their script and style (``static/``). Built from
the API's JSON views, with its rule for reading.
"""

from promoter.http.pages.dashboard import STATIC, Dashboard, wants_html
from promoter.http.pages.status_page import status_page

__all__ = ["STATIC", "Dashboard", "status_page", "wants_html"]
