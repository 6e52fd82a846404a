// The dashboard's small script: live updates over server-sent events, and the
// operation buttons (they call the JSON API with the bearer token typed in the header).
// The page reads fully without it.
"use strict";
(function () {
  document.documentElement.classList.add("js");
  const KEY = "promoter-token";

  function main() { return document.getElementById("live"); }

  function say(text, kind) {
    const box = document.getElementById("message");
    box.textContent = text;
    box.className = kind || "";
  }

  async function refresh() {
    const response = await fetch(location.href, { headers: { Accept: "text/html" } });
    if (!response.ok) return;
    const doc = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = doc.getElementById("live");
    if (fresh) main().innerHTML = fresh.innerHTML;
  }

  function listen() {
    const state = document.getElementById("live-state");
    const source = new EventSource("/events");
    source.onopen = function () { state.textContent = "live"; };
    source.onerror = function () { state.textContent = "reconnecting"; };
    source.addEventListener("change", function (event) {
      const names = JSON.parse(event.data).strategies || [];
      const here = main().dataset.strategy;
      if (!here || names.indexOf(here) >= 0) refresh();
    });
  }

  async function operate(button) {
    const op = button.dataset.op, env = button.dataset.env;
    const strategy = main().dataset.strategy;
    let reason = "";
    if (op === "hold") {
      const answer = window.prompt(button.dataset.confirm, "held from the dashboard");
      if (answer === null) return;
      reason = answer;
    } else if (!window.confirm(button.dataset.confirm)) {
      return;
    } else {
      reason = "from the dashboard";
    }
    const headers = { "Content-Type": "application/json" };
    const token = document.getElementById("token").value.trim();
    if (token) headers.Authorization = "Bearer " + token;
    say(op + " on " + env + "…", "pending");
    try {
      const response = await fetch(
        "/api/v1/strategies/" + encodeURIComponent(strategy) + "/" + op,
        { method: "POST", headers: headers, body: JSON.stringify({ environment: env, reason: reason }) }
      );
      let body = {};
      try { body = await response.json(); } catch (e) { body = {}; }
      if (!response.ok) {
        say(op + " on " + env + " refused (" + response.status + "): " + (body.error || response.statusText), "error");
        return;
      }
      say(op + " on " + env + ": done", "ok");
      refresh();
    } catch (e) {
      say(op + " on " + env + " failed: " + e, "error");
    }
  }

  async function freeze(button) {
    const op = button.dataset.freeze, env = button.dataset.env || null;
    const strategy = main().dataset.strategy;
    const what = env ? env + " of " + strategy : "strategy " + strategy;
    const body = { strategy: strategy, user: "dashboard" };
    if (env) body.environment = env;
    if (op === "freeze") {
      const reason = window.prompt("Freeze " + what + "? No promotion until unfrozen. Why:", "");
      if (!reason) return;
      body.reason = reason;
    } else if (!window.confirm("Unfreeze " + what + "?")) {
      return;
    }
    const headers = { "Content-Type": "application/json" };
    const token = document.getElementById("token").value.trim();
    if (token) headers.Authorization = "Bearer " + token;
    const response = await fetch("/api/v1/" + op, {
      method: "POST", headers: headers, body: JSON.stringify(body)
    });
    let answer = {};
    try { answer = await response.json(); } catch (e) { answer = {}; }
    if (!response.ok) {
      say(op + " " + what + " refused (" + response.status + "): " + (answer.error || response.statusText), "error");
      return;
    }
    say(op + " " + what + ": done", "ok");
    refresh();
  }

  document.addEventListener("DOMContentLoaded", function () {
    const field = document.getElementById("token");
    field.value = sessionStorage.getItem(KEY) || "";
    field.addEventListener("input", function () { sessionStorage.setItem(KEY, field.value); });
    document.getElementById("token-form").addEventListener("submit", function (e) { e.preventDefault(); });
    document.addEventListener("click", function (event) {
      const button = event.target.closest("button[data-op]");
      if (button) operate(button);
      const switcher = event.target.closest("button[data-freeze]");
      if (switcher) freeze(switcher);
    });
    listen();
  });
})();
