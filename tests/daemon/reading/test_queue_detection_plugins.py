"""Whether a plugin can tell about merge queues is worked out once per plugin object, and
any object will do: one that cannot be weakly referred to is asked every time."""

from __future__ import annotations

import weakref
from typing import Literal

import pytest

from promoter.config import Repository
from promoter.daemon.reading.queue_detection import QueueDetection

REPO = Repository(name="r", url="/nowhere", scm_provider="local")


class Detects:
    merge_queue_scope: Literal["branch", "repository"] = "branch"

    def __init__(self) -> None:
        self.asked = 0

    def merge_queue_required(self, *, repo: Repository, branch: str) -> bool:
        self.asked += 1
        return branch == "environment/prod"


class Slotted:
    __slots__ = ()  # no __weakref__: cannot be kept by a weak reference
    merge_queue_scope: Literal["branch", "repository"] = "branch"

    def merge_queue_required(self, *, repo: Repository, branch: str) -> bool:
        return branch == "environment/prod"


class Blind:
    pass


def test_a_plugin_that_can_tell_is_asked_once_per_branch() -> None:
    plugin, detection = Detects(), QueueDetection()
    assert detection.required(plugin, REPO, "environment/prod")
    assert detection.required(plugin, REPO, "environment/prod")
    assert not detection.required(plugin, REPO, "environment/dev")
    assert plugin.asked == 2


def test_an_object_that_cannot_be_weakly_referred_to_is_checked_every_time() -> None:
    plugin, detection = Slotted(), QueueDetection()
    with pytest.raises(TypeError):
        weakref.ref(plugin)
    assert detection.required(plugin, REPO, "environment/prod")
    assert not detection.required(plugin, REPO, "environment/dev")


def test_a_plugin_that_cannot_tell_means_no_queue() -> None:
    detection = QueueDetection()
    assert not detection.required(Blind(), REPO, "environment/prod")
    assert not detection.required(Blind(), REPO, "environment/prod")
