"""The overview's kinds of state, filters, counts and pages, and the strategy page's
pieces: links to the SCM, where each change is, the pipeline's edges, the buttons by role."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from promoter.config.loader import parse_config
from promoter.http.pages.actions import buttons
from promoter.http.pages.changes import mark
from promoter.http.pages.kinds import kind_of
from promoter.http.pages.links import Links, links_for
from promoter.http.pages.node import node
from promoter.http.pages.overview import PAGE, Cell, Row, overview, render
from promoter.http.pages.pipeline import depths, graph, upstreams

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def env(**fields: Any) -> dict[str, Any]:
    return {"branch": "environment/prod", "state": "blocked", "gates": [], **fields}


def test_waiting_for_ci_is_waiting_and_a_failed_gate_is_failing() -> None:
    assert kind_of(env(gates=[{"name": "ci", "phase": "pending"}])) == "waiting"
    assert kind_of(env(gates=[{"name": "scan", "phase": "failure"}])) == "failing"
    assert kind_of(env(state="ready")) == "waiting"
    assert kind_of(env(state="up-to-date")) == "up-to-date"
    assert kind_of(env(state="error")) == "error"
    assert kind_of(env(paused="health failed")) == "paused"
    assert kind_of(env(freezes=[{"scope": "environment"}])) == "frozen"
    held = env(proposed={"drySha": "b" * 40}, holds=[{"drySha": "b" * 40}])
    assert kind_of(held) == "held"
    assert kind_of(env(proposed={"drySha": "c" * 40}, holds=[{"drySha": "b" * 40}])) == "waiting"


def test_the_promoters_own_gates_tell_held_or_waiting_not_failing() -> None:
    hold = {"name": "promoter/hold", "phase": "failure"}
    held = env(proposed={"drySha": "b" * 40}, holds=[{"drySha": "b" * 40}], gates=[hold])
    assert kind_of(held) == "held"
    upstream = {"name": "promoter/previous-environment", "phase": "failure"}
    assert kind_of(env(gates=[upstream])) == "waiting"  # the one before it failed, not it
    assert kind_of(env(gates=[upstream, {"name": "ci", "phase": "failure"}])) == "failing"


def rows(n: int) -> list[Row]:
    kinds = ("up-to-date", "waiting", "failing")
    return [
        Row(
            f"app-{i:05d}",
            f"repo-{i % 3}",
            ("team-a",) if i % 2 else (),
            (
                Cell("environment/dev", "up-to-date", ""),
                Cell("environment/prod", kinds[i % 3], f"reason {i}"),
            ),
        )
        for i in range(n)
    ]


def test_the_overview_filters_counts_every_match_and_draws_one_page() -> None:
    every = rows(1000)
    found = overview(every, {})
    assert (found.matched, found.pages, len(found.rows)) == (1000, -(-1000 // PAGE), PAGE)
    assert found.counts["up-to-date"] == 1000 + 334
    failing = overview(every, {"state": "failing", "environment": "prod"})
    assert failing.matched == 333 and {r.cells[1].kind for r in failing.rows} == {"failing"}
    assert failing.counts == {**failing.counts, "failing": 333, "waiting": 333}
    narrow = overview(every, {"q": "app-0099", "repository": "repo-0", "label": "team-a"})
    assert [r.name for r in narrow.rows] == ["app-00993", "app-00999"]
    last = overview(every, {"page": "999"})
    assert last.page == last.pages and last.rows[-1].name == "app-00999"
    assert overview(every, {"page": "nope"}).page == 1


def test_the_overview_escapes_what_it_shows_and_keeps_the_filters_in_its_links() -> None:
    hostile = [Row("<b>x</b>", "r", ("<i>",), (Cell("environment/dev", "waiting", "<script>"),))]
    html = render(overview(hostile, {"q": "<b"}), {"q": "<b"}, 1)
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "<script>" not in html
    assert 'href="/?q=%3Cb&amp;state=failing"' in html


def test_links_go_to_the_scm_commit_and_compare_pages_and_never_carry_credentials() -> None:
    github = links_for("https://x-access-token:s3cret@github.com/acme/gitops.git", "github")
    assert github.commit("a" * 40) == f"https://github.com/acme/gitops/commit/{'a' * 40}"
    assert "s3cret" not in github.commit("a" * 40)
    gitlab = links_for("git@gitlab.example.com:group/gitops.git", "gitlab")
    assert gitlab.compare("a" * 40, "b" * 40) == (
        f"https://gitlab.example.com/group/gitops/-/compare/{'a' * 40}...{'b' * 40}"
    )
    assert links_for("/srv/gitops.git", "local").commit("a" * 40) == ""
    assert github.commit("javascript:alert(1)") == ""


def test_each_environment_marks_what_it_did_with_each_dry_commit() -> None:
    history = {"d": 0, "c": 1, "b": 2, "a": 3}  # newest first
    staging = {
        "active": {"drySha": "b"},
        "proposed": {"drySha": "d"},
        "reverts": [{"badDrySha": "c"}],
        "holds": [{"drySha": "c"}],
    }
    assert [mark(s, history, staging) for s in "dcba"] == ["proposed", "reverted", "runs", "in"]
    prod = {"active": {"drySha": "a"}, "proposed": {"drySha": "d"}, "holds": [{"drySha": "c"}]}
    assert [mark(s, history, prod) for s in "dcba"] == ["proposed", "held", "proposed", "runs"]


CONFIG = """\
scmProviders: [{name: local, local: {}}]
repositories: [{name: gitops, url: /tmp/gitops.git, scmProvider: local}]
promotionStrategies:
  - name: fan
    repository: gitops
    environments:
      - {branch: environment/qa}
      - {branch: environment/eu, dependsOn: [environment/qa]}
      - {branch: environment/us, dependsOn: [environment/qa]}
      - {branch: environment/global, dependsOn: [environment/eu, environment/us]}
daemon: {stateDir: /tmp/state}
"""


def test_the_pipeline_draws_dependson_as_edges_and_columns_by_depth() -> None:
    strategy = parse_config(CONFIG).promotion_strategies[0]
    assert upstreams(strategy) == [[], [0], [0], [1, 2]]
    assert depths(upstreams(strategy)) == [0, 1, 1, 2]
    svg = graph(strategy, {"environment/eu": "failing"})
    assert svg.count('class="edge"') == 4
    assert '<a href="#env-environment/eu" class="node kind-failing">' in svg
    assert "environment/global waits for environment/eu and environment/us" in svg


def test_buttons_are_offered_by_role_and_break_glass_names_what_it_skips() -> None:
    ready = env(
        pullRequest={"number": 7, "state": "open"},
        active={"drySha": "a" * 40},
        proposed={"drySha": "b" * 40},
        gates=[{"name": "security-scan", "phase": "failure"}],
        holds=[{"drySha": "c" * 40}],
    )
    assert buttons(ready, lambda op, e: False) == ""
    approver = buttons(ready, lambda op, e: op in ("merge", "approve"))
    assert 'data-op="merge"' in approver and 'data-op="approve"' in approver
    assert 'data-op="hold"' not in approver and 'data-op="promote"' not in approver
    merged = env(active={"drySha": "a" * 40}, proposed={"drySha": "a" * 40})
    assert "break-glass" not in buttons(merged, lambda op, e: True)  # nothing to promote
    admin = buttons(ready, lambda op, e: True)
    assert 'class="break-glass' in admin
    assert "skipping gate security-scan (failure); hold on cccccccc" in admin


def test_a_proposal_lists_the_hydrated_files_it_changes_with_the_full_diff_on_the_scm() -> None:
    github = links_for("https://github.com/acme/gitops.git", "github")
    old, new = "1" * 40, "2" * 40
    proposing = env(
        active={"drySha": "a" * 40, "hydratedSha": old},
        proposed={"drySha": "b" * 40, "hydratedSha": new},
    )
    found = [("M", "apps/guestbook/values.yaml"), ("A", "apps/guestbook/<new>.yaml")]
    html = node(proposing, {}, NOW, links=github, changed=found, allowed=lambda o, e: False)
    assert "What the proposal changes: 2 files" in html
    assert "<code>apps/guestbook/&lt;new&gt;.yaml</code>" in html
    assert f'href="https://github.com/acme/gitops/compare/{old}...{new}"' in html
    assert html.count('class="hydrated"') == 2  # running and proposed, each to report on


def test_an_environment_up_to_date_proposes_nothing_though_its_next_commit_differs() -> None:
    merged = env(
        state="up-to-date",
        active={"drySha": "a" * 40, "hydratedSha": "1" * 40},
        proposed={"drySha": "a" * 40, "hydratedSha": "2" * 40},
    )
    html = node(merged, {}, NOW, links=Links(), changed=[], allowed=lambda o, e: False)
    assert "What the proposal changes" not in html
    assert html.count('class="hydrated"') == 1
