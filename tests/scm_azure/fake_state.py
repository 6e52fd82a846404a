"""The fake Azure DevOps' state and vocabulary: repositories, answers, Azure's error shape.

An error answers as Azure does: ``{"$id": "1", "innerException": null, "message": ...,
"typeName": ..., "typeKey": ..., "errorCode": 0, "eventId": 3000}`` (the shape of every
Azure DevOps refusal; the messages the fake uses are Azure's, the status a message comes
with is the fake's choice where Microsoft does not document it).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.fixture_paths import FIXTURES

AZURE_FIXTURES = FIXTURES / "azure-devops"
IDENTITY = {
    "id": "3ff4a20f-306e-677e-8a01-57f35e71f109",
    "displayName": "Promoter Bot",
    "uniqueName": "promoter@fabrikam.example",
}
"""Whom the PAT belongs to: the author of the pull requests the promoter opens."""


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def genuine(name: str) -> dict[str, Any]:
    """A genuine fixture (``rest/pr.json``, ``webhooks/push.json``, ...), parsed afresh."""
    data: dict[str, Any] = json.loads((AZURE_FIXTURES / name).read_text())
    return data


@dataclass
class Answer:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class AzureError(Exception):
    """A refusal, answered in Azure's error shape."""

    def __init__(self, status: int, message: str, type_key: str) -> None:
        super().__init__(message)
        self.status, self.message, self.type_key = status, message, type_key

    def answer(self) -> Answer:
        return Answer(
            self.status,
            {
                "$id": "1",
                "innerException": None,
                "message": self.message,
                "typeName": f"Microsoft.TeamFoundation.Git.Server.{self.type_key}, "
                "Microsoft.TeamFoundation.Git.Server",
                "typeKey": self.type_key,
                "errorCode": 0,
                "eventId": 3000,
            },
        )


def not_found(what: str = "pull request") -> AzureError:
    if what == "pull request":
        message, kind = "TF401180: The requested pull request was not found.", "PullRequest"
    else:
        message, kind = f"TF401019: The {what} does not exist.", "Repository"
    return AzureError(404, message, f"Git{kind}NotFoundException")


def invalid(what: str) -> AzureError:
    """Azure's ``InvalidArgumentValueException`` (400)."""
    message = f"Invalid argument value.\r\nParameter name: {what}"
    return AzureError(400, message, "InvalidArgumentValueException")


@dataclass
class Policy:
    """A blocking branch policy on the repository's branches: ``reviewers`` (at least
    ``count`` approving votes, 5 and 10 both approve as Azure's minimum-reviewers policy
    counts them, the author's own vote left out) or ``status`` (a ``succeeded`` pull request
    status of ``genre/name``; ``reset`` wants it on the latest iteration)."""

    kind: str
    count: int = 1
    genre: str = ""
    name: str = ""
    reset: bool = False
    id: int = 0


@dataclass
class FakeRepo:
    project: str
    name: str
    path: Path
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    iterations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    commit_statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pr_statuses: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    reviewers: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    threads: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    policies: list[Policy] = field(default_factory=list)
    queued: set[int] = field(default_factory=set)
    """Pull requests whose completion Azure queued (``FakeAzure.complete_later``)."""


@dataclass
class Call:
    at: float
    method: str
    path: str
    status: int
    body: Any = None
