"""The names the Azure DevOps tests share: the PAT, its variable, the repository on the fake."""

from __future__ import annotations

import sys
from pathlib import Path

TOKEN = "azure-devops-test-pat-0123456789abcdef"
TOKEN_ENV = "PROMOTER_TEST_AZURE_DEVOPS_PAT"
PROJECT, NAME = "Fabrikam Fiber", "gitops"
BIN = Path(sys.executable).parent
"""Where pip installed the ``promoter-scm-azure-devops`` console script (the venv's bin)."""
