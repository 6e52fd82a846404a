"""The REST client on PyGithub's Requester: one per thread, answers never crossed."""

from __future__ import annotations

import gc
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from promoter.config import Repository
from scm_plugins.calls import ScmCalls
from scm_plugins.github import GitHubScm
from scm_plugins.github.client import GitHubClient
from scm_plugins.github.errors import translate
from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME, TOKEN
from .fake_github import FakeGitHub

THREADS, CALLS = 8, 25


def test_concurrent_calls_from_many_threads_each_get_their_own_answer(
    plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sandbox: GitSandbox
) -> None:
    shas = []
    for i in range(THREADS):
        sandbox.commit("environment/dev-next", {"app.yaml": f"image: v{i}\n"}, f"hydrate {i}")
        shas.append(sandbox.branch_sha("environment/dev-next") or "")
    for i, sha in enumerate(shas):
        fake.post_status(FULL_NAME, sha, f"gate-{i}", "success")
    barrier = threading.Barrier(THREADS)

    def read(i: int) -> set[str]:
        barrier.wait()
        seen: set[str] = set()
        for _ in range(CALLS):
            statuses = plugin.get_commit_statuses(repo=repo, sha=shas[i])
            seen.update(s.key for s in statuses)
        return seen

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show up
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            answers = list(pool.map(read, range(THREADS)))
    finally:
        sys.setswitchinterval(interval)
    assert answers == [{f"gate-{i}"} for i in range(THREADS)]


def test_each_thread_has_its_own_requester_and_close_closes_them_all(fake: FakeGitHub) -> None:
    client = GitHubClient(base_url=fake.base_url, calls=ScmCalls("github", translate))
    used = []

    def call() -> None:
        client.request(
            "get_repo", "GET", f"/repos/{FULL_NAME}/pulls", authorization=f"token {TOKEN}"
        )
        used.append(client._requester())

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(r) for r in used}) == 3
    client.close()
    assert len(client._requesters) == 0


def test_a_finished_threads_requester_is_released(fake: FakeGitHub) -> None:
    client = GitHubClient(base_url=fake.base_url, calls=ScmCalls("github", translate))
    path = f"/repos/{FULL_NAME}/pulls"

    def call() -> None:
        client.request("find_pull_request", "GET", path, authorization=f"token {TOKEN}")

    for _ in range(20):  # a thread pool that recycles idle threads
        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
    gc.collect()
    assert len(client._requesters) == 0
    client.close()
