// The dashboard's small script: live updates over server-sent events, and the
// operation buttons. Every call carries the API token typed in the header (kept in this
// tab's sessionStorage) as Authorization: Bearer, never as a cookie; the page reads
// fully without it. It is a file of its own: the CSP allows no inline script.
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

  function headers(extra) {
    const out = Object.assign({}, extra || {});
    const token = (sessionStorage.getItem(KEY) || "").trim();
    if (token) out.Authorization = "Bearer " + token;
    return out;
  }

  async function refresh() {
    const response = await fetch(location.href, { headers: headers({ Accept: "text/html" }) });
    const doc = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = doc.getElementById("live");
    if (!fresh) return;
    main().innerHTML = fresh.innerHTML;
    main().dataset.strategy = fresh.dataset.strategy || "";
    main().dataset.auth = fresh.dataset.auth || "";
    if (response.ok) listen();
  }

  // Server-sent events read with fetch (an EventSource cannot send a header): one
  // stream at a time, opened again when it ends, with the last event id.
  let streaming = false, lastId = "";
  async function listen() {
    if (streaming || main().dataset.auth) return;
    streaming = true;
    const state = document.getElementById("live-state");
    try {
      while (true) {
        try {
          const extra = { Accept: "text/event-stream" };
          if (lastId) extra["Last-Event-ID"] = lastId;
          const response = await fetch("/events", { headers: headers(extra), cache: "no-store" });
          if (!response.ok || !response.body) throw new Error(String(response.status));
          state.textContent = "live";
          await read(response.body.getReader());
        } catch (e) {
          state.textContent = "reconnecting";
          await new Promise(function (done) { setTimeout(done, 1000); });
        }
      }
    } finally {
      streaming = false;
    }
  }

  async function read(reader) {
    const decoder = new TextDecoder();
    let buffer = "";
    while (true) {
      const chunk = await reader.read();
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        dispatch(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  }

  function dispatch(block) {
    let event = "message", data = "";
    block.split("\n").forEach(function (line) {
      const at = line.indexOf(":");
      const field = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
      if (field === "id") lastId = value;
      else if (field === "event") event = value;
      else if (field === "data") data += value;
    });
    if (event !== "change") return;
    const names = JSON.parse(data).strategies || [];
    const here = main().dataset.strategy;
    if (here) {
      if (names.indexOf(here) >= 0) refresh();
      return;
    }
    // The overview: thousands of strategies change all the time; at most every 5 s.
    if (!pending) pending = setTimeout(function () { pending = null; refresh(); }, 5000);
  }
  let pending = null;

  async function operate(button) {
    const op = button.dataset.op, env = button.dataset.env;
    const strategy = main().dataset.strategy;
    let reason = "from the dashboard", drySha = null;
    if (op === "hold" || op === "promote") {
      const answer = window.prompt(button.dataset.confirm, op === "hold" ? "held from the dashboard" : "");
      if (answer === null || (op === "promote" && !answer.trim())) return;
      reason = answer;
    } else if (op === "pin") {
      const answer = window.prompt(button.dataset.confirm, button.dataset.default || "");
      if (answer === null || !answer.trim()) return;
      drySha = answer.trim();
      reason = "pinned from the dashboard";
    } else if (!window.confirm(button.dataset.confirm)) {
      return;
    }
    say(op + " on " + env + "…", "pending");
    try {
      const response = await fetch(
        "/api/v1/strategies/" + encodeURIComponent(strategy) + "/" + op,
        {
          method: "POST",
          headers: headers({ "Content-Type": "application/json" }),
          body: JSON.stringify(drySha ? { environment: env, reason: reason, drySha: drySha }
                                      : { environment: env, reason: reason }),
        }
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
    const body = { strategy: strategy };
    if (env) body.environment = env;
    if (op === "freeze") {
      const reason = window.prompt("Freeze " + what + "? No promotion until unfrozen. Why:", "");
      if (!reason) return;
      body.reason = reason;
    } else if (!window.confirm("Unfreeze " + what + "?")) {
      return;
    }
    const response = await fetch("/api/v1/" + op, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body)
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
    document.getElementById("token-form").addEventListener("submit", function (e) {
      e.preventDefault();
      refresh();
    });
    // A token typed in shows the page as its holder sees it (their buttons).
    field.addEventListener("change", function () { refresh(); });
    document.addEventListener("click", function (event) {
      const button = event.target.closest("button[data-op]");
      if (button) operate(button);
      const switcher = event.target.closest("button[data-freeze]");
      if (switcher) freeze(switcher);
    });
    // The first stream starts from the page's own id: a change made between the
    // page and the stream is told at once.
    lastId = main().dataset.eventId || "";
    if (main().dataset.auth === "needed" && field.value.trim()) refresh();
    else listen();
  });
})();
