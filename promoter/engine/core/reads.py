"""The value-or-reason type of the snapshot's reads that can fail or not be asked.

A read made only when a gate asks for it, or one that can fail (an SCM that does not
answer, a plugin that cannot read it, git that cannot tell), is a ``Read``: its value, or
the reason it could not be read, or neither (not asked). The rules fail closed on a
reason: the gate that needed the read waits, in the read's own words.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Read(Frozen, Generic[T]):
    """A value read from git or the SCM, or why it could not be read; neither: not asked.

    Build it through a parametrized alias (``ReviewsRead(value=...)``): pydantic validates an
    unparametrized ``Read`` again when it is given to a field."""

    value: T | None = None
    reason: str | None = None
    """Why the value could not be read (set only without a value)."""
