"""Secret references: a secret comes from an environment variable or a file, never inline."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from promoter.errors import ConfigError
from promoter.redaction import remember


class SecretRef(BaseModel):
    """Where to read a secret: exactly one of ``fromEnv`` or ``fromFile``."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid")

    from_env: str | None = Field(default=None, alias="fromEnv", description="environment variable")
    from_file: str | None = Field(default=None, alias="fromFile", description="file path")

    @model_validator(mode="before")
    @classmethod
    def _no_inline(cls, data: Any) -> Any:
        if isinstance(data, str):
            raise ValueError(
                "secrets are never written inline; use {fromEnv: VAR} or {fromFile: PATH}"
            )
        return data

    @model_validator(mode="after")
    def _exactly_one(self) -> SecretRef:
        if (self.from_env is None) == (self.from_file is None):
            raise ValueError("give exactly one of fromEnv or fromFile")
        return self

    def describe(self) -> str:
        """Where the secret comes from, safe to log."""
        return f"env:{self.from_env}" if self.from_env else f"file:{self.from_file}"

    def resolve(self) -> str:
        """The secret's value, stripped of a trailing newline.

        ConfigError when it is absent, empty or only whitespace: an empty webhook key or
        API token would let anyone through. The value is remembered by
        ``promoter.redaction`` so that no error text or log line can show it.
        """
        if self.from_env is not None:
            value = os.environ.get(self.from_env)
            if value is None or value == "":
                raise ConfigError([f"environment variable {self.from_env} is not set"])
        else:
            assert self.from_file is not None
            try:
                raw = Path(self.from_file).expanduser().read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
                raise ConfigError([f"cannot read secret file {self.from_file}: {why}"]) from exc
            value = raw.rstrip("\r\n")
        if not value.strip():
            raise ConfigError([f"the secret from {self.describe()} is empty or only whitespace"])
        remember(value)
        return value
