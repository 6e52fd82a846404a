"""The memory of labels an SCM did not keep: backoff doubling to an hour, ended by a keep."""

from __future__ import annotations

from promoter.state.labels import FIRST_RETRY, MAX_RETRY, UnheldLabels


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_label_not_kept_is_set_aside_with_a_backoff_that_doubles_to_an_hour() -> None:
    clock = Clock()
    unheld = UnheldLabels(clock=clock)
    waits = []
    for _ in range(8):
        refused = unheld.observe("gitops", ["promotion", "dev"], ["dev"])
        assert list(refused) == ["promotion"]
        assert unheld.current("gitops") == ("promotion",)
        assert unheld.current("other") == ()
        waits.append(refused["promotion"])
        clock.now += refused["promotion"]
        assert unheld.current("gitops") == ()  # due: asked for again
    assert waits[:3] == [FIRST_RETRY, 2 * FIRST_RETRY, 4 * FIRST_RETRY]
    assert waits[-1] == MAX_RETRY


def test_a_write_that_keeps_the_label_ends_its_backoff() -> None:
    clock = Clock()
    unheld = UnheldLabels(clock=clock)
    unheld.observe("gitops", ["promotion"], [])
    clock.now += FIRST_RETRY
    assert unheld.observe("gitops", ["promotion"], ["promotion"]) == {}
    assert unheld.observe("gitops", ["promotion"], []) == {"promotion": FIRST_RETRY}


def test_a_refusal_while_the_label_is_set_aside_is_no_new_detection() -> None:
    clock = Clock()
    unheld = UnheldLabels(clock=clock)
    assert unheld.observe("gitops", ["promotion"], []) == {"promotion": FIRST_RETRY}
    assert unheld.observe("gitops", ["promotion"], []) == {}  # another PR, the same pass
    clock.now += FIRST_RETRY
    assert unheld.observe("gitops", ["promotion"], []) == {"promotion": 2 * FIRST_RETRY}
