"""Outbound notifications: the executor's events, filtered per sink, formatted
(CloudEvents 1.0, Slack, Teams), signed with HMAC-SHA256 and delivered with retries
from a bounded queue kept in the state directory."""

from promoter.notify.events import Notification, from_action
from promoter.notify.formats import render, sign
from promoter.notify.notifier import Notifier
from promoter.notify.queue import Delivery, DeliveryQueue
from promoter.notify.sender import Sender, send_once

__all__ = [
    "Delivery",
    "DeliveryQueue",
    "Notification",
    "Notifier",
    "Sender",
    "from_action",
    "render",
    "send_once",
    "sign",
]
