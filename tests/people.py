"""People for the tests: named API tokens (one file each) and their grants, as the
``access:`` section of promoter.yaml; ``bearer(name)`` is the header a person sends."""

from __future__ import annotations

from pathlib import Path


def token_of(name: str) -> str:
    return f"token-of-{name}"


def bearer(name: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token_of(name)}"}


def access_yaml(
    directory: Path, grants: dict[str, list[str]], *, anonymous: str | None = None, more: str = ""
) -> str:
    """The body of ``access:`` (indented two spaces): a token per person of ``grants``,
    whose values are their grants' YAML flow mappings without the users, e.g.
    ``{"ada": ["role: approver, environments: [prod]"]}``."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["  tokens:"]
    for name in grants:
        path = directory / f"{name}.token"
        path.write_text(token_of(name) + "\n")
        lines.append(f"    - {{name: {name}, secret: {{fromFile: {path}}}}}")
    rules = [
        f"    - {{users: [{name}], {rule}}}" for name, given in grants.items() for rule in given
    ]
    lines += ["  grants:", *rules] if rules else []
    if anonymous is not None:
        lines.append(f"  anonymous: {anonymous}")
    if more:
        lines.append(more)
    return "\n".join(lines)
