"""Where the genuine third-party payloads the tests read live: ``tests/fixtures``.

Every file there names its source repository, path, commit and licence in its folder's
README; the suite and the benchmarks read payloads from nowhere else.
"""

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GITHUB_WEBHOOKS = FIXTURES / "github" / "webhooks" / "api.github.com"
