"""The JSON API: reads of the strategies, the audit and DORA figures, the writes (commit
statuses, refresh, the manual operations, freezes), each write's way from its checks to
its audit entry, the bounded bodies and error answers, and the change stream (``/events``).
It reads the daemon through the ports and asks ``access`` who calls.
"""

from promoter.http.api.body import MAX_BODY, BodyTooLarge, read_body
from promoter.http.api.dora_view import strategy_dora
from promoter.http.api.events_stream import EventStream
from promoter.http.api.problems import MOVED
from promoter.http.api.routes import Api
from promoter.http.api.views import strategy_json, strategy_summary
from promoter.http.api.writes import MAX_REASON

__all__ = [
    "MAX_BODY",
    "MAX_REASON",
    "MOVED",
    "Api",
    "BodyTooLarge",
    "EventStream",
    "read_body",
    "strategy_dora",
    "strategy_json",
    "strategy_summary",
]
