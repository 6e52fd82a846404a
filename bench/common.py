"""Helpers shared by the benchmarks: repositories built fast, counters, the daemon, the report.

Every benchmark prints its figures as one JSON line, then a readable summary, and
exits 1 when a target is missed. Counters come from the daemon's own Prometheus
registry (``promoter.metrics``), so a benchmark measures what production exports.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = "http://127.0.0.1"
"""The base URL of the benchmarks' TestClients: the daemon answers only the Host names it
serves (DNS rebinding), and starlette's default ``testserver`` is none."""
if str(ROOT) not in sys.path:  # ``python bench/x.py`` puts bench/, not the root, on the path
    sys.path.insert(0, str(ROOT))

from promoter.git.metadata import METADATA_FILE, NOTES_REF, render_metadata  # noqa: E402
from promoter.http import ThreadServer  # noqa: E402
from promoter.metrics import REGISTRY  # noqa: E402

T = TypeVar("T")

WRITE_OPERATIONS = frozenset(
    {
        "open_pull_request",
        "update_pull_request",
        "merge_pull_request",
        "close_pull_request",
        "comment_pull_request",
        "label_pull_request",
        "set_commit_status",
        "create_status",
        "create_check_run",
    }
)
"""SCM operations that change something (every other counted operation is a read)."""

IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
}


# --- counters --------------------------------------------------------------------------


def counter(name: str, **labels: str) -> float:
    """Sum of the samples of counter ``name`` whose labels include ``labels``."""
    total = 0.0
    for metric in REGISTRY.collect():
        for sample in metric.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def scm_operations(provider: str | None = None) -> dict[str, float]:
    """``promoter_scm_calls_total`` summed per operation (all outcomes)."""
    found: dict[str, float] = {}
    for metric in REGISTRY.collect():
        for sample in metric.samples:
            if sample.name != "promoter_scm_calls_total":
                continue
            if provider is not None and sample.labels.get("provider") != provider:
                continue
            op = sample.labels["operation"]
            found[op] = found.get(op, 0.0) + sample.value
    return found


@dataclass
class Counters:
    """Git and SCM counters at one instant; subtract two to get what happened in between."""

    fetches: float = 0.0
    ls_remotes: float = 0.0
    reconciles: float = 0.0
    scm: dict[str, float] = field(default_factory=dict)

    @classmethod
    def now(cls, provider: str | None = None) -> Counters:
        return cls(
            fetches=counter("promoter_git_fetches_total"),
            ls_remotes=counter("promoter_git_ls_remote_total"),
            reconciles=counter("promoter_reconcile_total"),
            scm=scm_operations(provider),
        )

    def __sub__(self, other: Counters) -> Counters:
        ops = set(self.scm) | set(other.scm)
        diff = {op: self.scm.get(op, 0.0) - other.scm.get(op, 0.0) for op in ops}
        return Counters(
            fetches=self.fetches - other.fetches,
            ls_remotes=self.ls_remotes - other.ls_remotes,
            reconciles=self.reconciles - other.reconciles,
            scm={op: n for op, n in sorted(diff.items()) if n},
        )

    @property
    def scm_calls(self) -> float:
        return sum(self.scm.values())

    @property
    def scm_writes(self) -> float:
        return sum(n for op, n in self.scm.items() if op in WRITE_OPERATIONS)

    def as_json(self) -> dict[str, Any]:
        return {
            "git_fetches": int(self.fetches),
            "git_ls_remotes": int(self.ls_remotes),
            "reconciles": int(self.reconciles),
            "scm_calls": int(self.scm_calls),
            "scm_writes": int(self.scm_writes),
            "scm_by_operation": {op: int(n) for op, n in self.scm.items()},
        }


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def cpu_seconds() -> float:
    """CPU time of this process and of its git children, user and system: those that
    ended (``RUSAGE_CHILDREN``) and those still running (``live_children_cpu``: the
    persistent ``git cat-file`` processes, which end only when the daemon stops)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    ended = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    return ended + live_children_cpu()


def live_children_cpu() -> float:
    """CPU time so far of this process's children still running, from Linux's
    ``/proc/self/task/*/children`` and each child's ``stat`` (utime and stime, in clock
    ticks); 0 where there is no such file. A child that ends between two readings moves
    from here to ``RUSAGE_CHILDREN`` with all its time, so differences stay right."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    try:
        tasks = list(Path("/proc/self/task").iterdir())
    except OSError:
        return 0.0
    for task in tasks:
        try:
            pids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in pids:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue  # ended meanwhile: RUSAGE_CHILDREN has it once it is waited for
            fields = stat.rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / tick


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation; 0.0 for no values."""
    data = sorted(values)
    if not data:
        return 0.0
    if len(data) == 1:
        return data[0]
    return statistics.quantiles(data, n=1000, method="inclusive")[round(q * 10) - 1]


# --- waiting and reporting -----------------------------------------------------------


def wait_for(check: Callable[[], T | None], *, timeout: float, what: str, poll: float = 0.01) -> T:
    """Poll ``check`` until it returns something truthy; ``TimeoutError`` naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(poll)


class Events:
    """The daemon's action events (an observer), time-stamped as they are emitted."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.seen: list[tuple[float, str, str, int | None]] = []
        """(perf_counter time, kind, environment branch, PR number)"""

    def __call__(self, event: Any) -> None:
        now = time.perf_counter()
        with self._cond:
            self.seen.append((now, event.kind, event.environment, event.pr))
            self._cond.notify_all()

    def mark(self) -> int:
        """A position: ``wait(..., after=mark)`` only looks at events from here on."""
        with self._cond:
            return len(self.seen)

    def wait(
        self, kind: str, environment: str, *, after: int, timeout: float = 30.0
    ) -> tuple[float, int | None]:
        """The first ``kind`` event for ``environment`` since ``after``: (time, PR number)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for at, k, env, pr in self.seen[after:]:
                    if k == kind and env == environment:
                        return at, pr
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no {kind} event for {environment} in {timeout:.0f}s")
                self._cond.wait(left)


def report(figures: Mapping[str, Any], summary: Iterable[str]) -> None:
    """The benchmark's output: one JSON line, a blank line, the readable summary."""
    print(json.dumps(figures, sort_keys=False), flush=True)
    print()
    for line in summary:
        print(line)
    sys.stdout.flush()


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "cpus": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "python": sys.version.split()[0],
        "git": subprocess.run(
            ["git", "--version"], capture_output=True, text=True, check=False
        ).stdout.strip(),
    }


def quiet_logs() -> None:
    """Only warnings and errors from the daemon: a benchmark's output is its figures."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    logging.getLogger("promoter").setLevel(logging.WARNING)
    logging.getLogger("uvicorn").setLevel(logging.WARNING)


# --- processes ---------------------------------------------------------------------------


def run(main: Callable[[], int]) -> int:
    """Run a benchmark's ``main``; nothing it started outlives it.

    SIGTERM interrupts it as Ctrl-C does (the ``with`` blocks that stop its servers and
    replicas run), and when it ends, however it ends, every process it started and that
    still runs (a replica, an API stand-in, a plugin, a git) is ended: SIGTERM, then
    SIGKILL. The benchmark is its processes' subreaper (Linux): one whose parent died
    stays its descendant instead of going to init, so it is found and ended too.
    """
    _subreaper()
    previous = signal.signal(signal.SIGTERM, _interrupted)
    try:
        return main()
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        left = end_descendants()
        if left:
            print(f"ended what was left running: {left}", file=sys.stderr, flush=True)
        signal.signal(signal.SIGTERM, previous)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _subreaper() -> None:
    """Become the subreaper of this process's descendants (Linux's PR_SET_CHILD_SUBREAPER;
    elsewhere, descendants whose parent died are not found)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)


def descendants(pid: int) -> list[int]:
    """The live processes below ``pid``, children first (from ``/proc``)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(0), []):
            found.append(child)
            todo.append(child)
    return found


def end_descendants(grace: float = 10.0) -> list[int]:
    """End every process below this one: SIGTERM, SIGKILL after ``grace`` seconds for
    what is left; the ones that were running."""
    left = descendants(os.getpid())
    for pid in left:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _reap(descendants(os.getpid())):
        time.sleep(0.05)
    for pid in [*left, *descendants(os.getpid())]:
        _signal(pid, signal.SIGKILL)
    _reap(descendants(os.getpid()))
    return left


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _reap(pids: list[int]) -> list[int]:
    """Collect the exit status of those of ``pids`` that ended; the ones still running."""
    running = []
    for pid in pids:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child: its own parent reaps it
            done = 0
        if not done:
            running.append(pid)
    return running


def run_child(args: list[str], *, timeout: float) -> dict[str, Any]:
    """Run ``python <args>`` in a fresh process and return the JSON line it printed."""
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            found: dict[str, Any] = json.loads(line)
            return found
    raise RuntimeError(
        f"{' '.join(args)} exited {done.returncode} without figures:\n{done.stderr[-3000:]}"
    )


# --- git -------------------------------------------------------------------------------


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(repo), *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, **IDENTITY},
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.decode().strip()}")
    return done.stdout.decode().strip()


class FastImport:
    """A ``git fast-import`` stream: thousands of commits, refs and notes in one process."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._mark = 0
        self._when = 1_700_000_000

    def _data(self, payload: bytes) -> None:
        self._parts.append(b"data %d\n" % len(payload) + payload + b"\n")

    def blob(self, payload: bytes) -> str:
        self._mark += 1
        self._parts.append(b"blob\nmark :%d\n" % self._mark)
        self._data(payload)
        return f":{self._mark}"

    def commit(
        self,
        ref: str,
        message: str,
        files: Mapping[str, str],
        *,
        parent: str | None = None,
        notes: Mapping[str, str] | None = None,
    ) -> str:
        """A commit on ``ref`` whose tree is exactly ``files`` (path -> blob mark or text).

        ``notes`` (commit mark -> text) makes this a commit of a notes ref instead.
        """
        self._mark += 1
        self._when += 1
        out = [f"commit {ref}", f"mark :{self._mark}"]
        out.append(f"committer bench <bench@localhost> {self._when} +0000")
        self._parts.append(("\n".join(out) + "\n").encode())
        self._data(message.encode())
        lines = [f"from {parent}"] if parent else []
        if notes is None:
            lines.append("deleteall")
        for path, content in sorted(files.items()):
            if content.startswith(":"):
                lines.append(f"M 100644 {content} {path}")
            else:
                payload = content.encode()
                lines.append(f"M 100644 inline {path}\ndata {len(payload)}\n{content}")
        for target, text in (notes or {}).items():
            payload = text.encode()
            lines.append(f"N inline {target}\ndata {len(payload)}\n{text}")
        self._parts.append(("\n".join(lines) + "\n\n").encode())
        return f":{self._mark}"

    def reset(self, ref: str, target: str) -> None:
        self._parts.append(f"reset {ref}\nfrom {target}\n\n".encode())

    def run(self, repo: Path) -> dict[str, str]:
        """Feed the stream to ``repo``; the SHA of every mark."""
        marks = repo / "bench-marks"
        stream = b"".join(self._parts) + b"done\n"
        args = ["fast-import", "--quiet", "--done", f"--export-marks={marks}"]
        git(repo, *args, stdin=stream)
        found = dict(line.split(" ", 1) for line in marks.read_text().splitlines())
        marks.unlink()
        return found


def init_bare(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--bare", "--quiet", "--initial-branch=main")
    return path


# --- a fleet of strategies -----------------------------------------------------------

ENVIRONMENTS = ("dev", "staging", "prod-eu", "prod-us")


@dataclass
class Fleet:
    """``strategies`` strategies x ``len(environments)`` environments over a few bare repos.

    Strategy ``app-<i>`` lives in repository ``gitops-<i % repos>``; its environment
    branches are ``app-<i>/<env>`` and ``app-<i>/<env>-next``, hydrated from the
    repository's shared dry branch ``main``. Every environment runs dry ``D1``; every
    ``pending_every``-th strategy has ``D2`` proposed for its first environment.
    """

    root: Path
    strategies: int
    repos: int = 5
    environments: tuple[str, ...] = ENVIRONMENTS
    pending_every: int = 4
    active: dict[str, str] = field(default_factory=dict)
    """``<strategy>/<env>`` -> the hydrated SHA the environment runs."""
    proposed: dict[str, str] = field(default_factory=dict)
    """``<strategy>/<env>`` -> the tip of its proposed branch."""
    dry: dict[str, str] = field(default_factory=dict)
    """``D1``/``D2`` -> the dry SHAs (the same in every repository: same content, same time)."""

    def repo_path(self, index: int) -> Path:
        return self.root / f"gitops-{index}.git"

    def strategy_names(self) -> list[str]:
        return [f"app-{i}" for i in range(self.strategies)]

    def repositories_spec(self, provider: str, *, owner: str = "") -> list[dict[str, Any]]:
        """promoter.yaml's ``repositories`` for the fleet, ref polling off (``owner``:
        the SCM's ``path`` is ``<owner>/gitops-<r>``)."""
        return [
            {
                "name": f"gitops-{r}",
                "url": str(self.repo_path(r)),
                "scmProvider": provider,
                "pollInterval": 0,
                **({"path": f"{owner}/gitops-{r}"} if owner else {}),
            }
            for r in range(self.repos)
        ]

    def strategies_spec(self, *, active: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """promoter.yaml's ``promotionStrategies``: each gated on ``ci`` (proposed) and
        on ``active`` (the environment before)."""
        gates = {"activeCommitStatuses": [{"key": key} for key in active]} if active else {}
        return [
            {
                "name": f"app-{i}",
                "repository": f"gitops-{i % self.repos}",
                **gates,
                "proposedCommitStatuses": [{"key": "ci"}],
                "environments": [{"branch": f"app-{i}/{env}"} for env in self.environments],
            }
            for i in range(self.strategies)
        ]

    def is_pending(self, index: int) -> bool:
        return self.pending_every > 0 and index % self.pending_every == 0

    def build(self) -> Fleet:
        for r in range(self.repos):
            self._build_repo(r)
        return self

    def _build_repo(self, r: int) -> None:
        path = init_bare(self.repo_path(r))
        dry = FastImport()
        d1 = dry.commit("refs/heads/main", "Add apps\n", {"apps/README.md": "apps\n"})
        d2 = dry.commit("refs/heads/main", "Bump apps\n", {"apps/README.md": "v2\n"}, parent=d1)
        marks = dry.run(path)
        self.dry = {"D1": marks[d1], "D2": marks[d2]}
        metadata = {
            name: render_metadata(dry_sha=sha, repo_url=str(path), subject=name)
            for name, sha in self.dry.items()
        }
        stream = FastImport()
        blobs = {name: stream.blob(text.encode()) for name, text in metadata.items()}
        planned: list[tuple[str, str, str]] = []  # (key, "active" | "proposed", mark)
        notes: dict[str, str] = {}
        for i in range(r, self.strategies, self.repos):
            for n, env in enumerate(self.environments):
                key = f"app-{i}/{env}"
                files = {
                    f"apps/app-{i}/{env}/manifest.yaml": f"app: app-{i}\nenv: {env}\nimage: 1\n",
                    METADATA_FILE: blobs["D1"],
                }
                mark = stream.commit(f"refs/heads/{key}", f"hydrate D1 for {key}\n", files)
                notes[mark] = metadata["D1"]
                planned.append((key, "active", mark))
                if n == 0 and self.is_pending(i):
                    manifest = f"app: app-{i}\nenv: {env}\nimage: 2\n"
                    files = {
                        f"apps/app-{i}/{env}/manifest.yaml": manifest,
                        METADATA_FILE: blobs["D2"],
                    }
                    ref = f"refs/heads/{key}-next"
                    nxt = stream.commit(ref, f"hydrate D2 for {key}\n", files, parent=mark)
                    notes[nxt] = metadata["D2"]
                    planned.append((key, "proposed", nxt))
                else:
                    stream.reset(f"refs/heads/{key}-next", mark)
                    planned.append((key, "proposed", mark))
        stream.commit(NOTES_REF, "Notes added by the bench hydrator\n", {}, notes=notes)
        marks = stream.run(path)
        # As a hosting's housekeeping (``git gc``) leaves a repository that has lived: its
        # refs in ``packed-refs``. fast-import leaves one loose file per ref, which every
        # ``receive-pack`` and local clone of the daemon's would read (twice their CPU).
        git(path, "pack-refs", "--all")
        for key, kind, mark in planned:
            (self.active if kind == "active" else self.proposed)[key] = marks[mark]


def serve(app: Any, port: int) -> Callable[[], None]:
    """Run ``app`` under uvicorn on 127.0.0.1:``port`` in a thread; returns a stopper."""
    return ThreadServer(app, port, name="bench-uvicorn").start().stop
