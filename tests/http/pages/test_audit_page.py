"""The audit page offers its filters as a form that keeps them in the URL, and keeps them
when the API refuses the read."""

from __future__ import annotations

from starlette.responses import JSONResponse

from promoter.http.pages.audit_page import audit_page

ENTRY = {
    "at": "2026-11-29T06:00:00Z",
    "who": "ana",
    "via": "token",
    "action": "hold",
    "strategy": "shop",
    "environment": "prod",
    "outcome": "refused",
    "status": 403,
    "message": "not allowed",
}


def test_the_audit_page_offers_its_filters_filled_with_those_in_the_url() -> None:
    answer = JSONResponse({"entries": [ENTRY], "next": "abc"})
    params = {"strategy": "shop", "who": "<ana>", "outcome": "refused", "ignored": "x"}
    page = audit_page(answer, params)
    assert '<form class="filters" method="get" action="/audit"' in page
    assert 'name="strategy" size="14" value="shop"' in page
    assert 'name="who" size="12" value="&lt;ana&gt;"' in page
    assert '<option value="refused" selected>' in page
    assert 'name="environment" size="10" value=""' in page
    assert "ignored" not in page
    assert "/audit?strategy=shop&amp;who=%3Cana%3E&amp;outcome=refused&amp;before=abc" in page


def test_a_refused_read_keeps_the_filters_and_says_why() -> None:
    answer = JSONResponse({"error": "reading the audit needs the admin role"}, status_code=403)
    page = audit_page(answer, {"action": "merge"})
    assert 'name="action" size="10" value="merge"' in page
    assert "reading the audit needs the admin role" in page
