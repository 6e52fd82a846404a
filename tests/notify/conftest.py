"""Fixtures of the notification tests: a local HTTP receiver."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.notify.receiver import Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()
