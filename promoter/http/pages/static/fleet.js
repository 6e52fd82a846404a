// The fleet view's filtering as one types, and the keys of every page: "/" searches,
// j/k or the arrows move through the strategies (or a strategy's environments), Enter
// opens, x shows a row's reasons, "?" lists the keys. The filters stay in the URL; the
// server filters, sorts and pages (dashboard.js fetches with the caller's credentials).
"use strict";
(function () {
  let sequence = 0, timer = null;

  function typing(target) {
    const tag = (target && target.tagName) || "";
    return tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || (target && target.isContentEditable);
  }

  function queryOf(form) {
    const params = new URLSearchParams();
    new FormData(form).forEach(function (value, key) {
      if (String(value).trim()) params.set(key, String(value));
    });
    return params.toString();
  }

  // The page for a query, fetched and swapped in place; an older answer arriving after a
  // newer one is dropped.
  async function show(query, push) {
    const mine = ++sequence;
    const url = "/" + (query ? "?" + query : "");
    const response = await fetch(url, {
      headers: window.promoter.headers({ Accept: "text/html" }), cache: "no-store",
    });
    const text = await response.text();
    if (mine !== sequence) return;
    const doc = new DOMParser().parseFromString(text, "text/html");
    if (push) history.pushState(null, "", url); else history.replaceState(null, "", url);
    window.promoter.swap(doc);
    const clear = document.querySelector('#fleet-filters a[href="/"]');
    if (clear) clear.hidden = !query;
    performance.mark("promoter-filtered");
  }

  function filter(now) {
    const form = document.getElementById("fleet-filters");
    if (!form) return;
    clearTimeout(timer);
    timer = setTimeout(function () { show(queryOf(form), false); }, now ? 0 : 120);
  }

  function rows() {
    return Array.prototype.slice.call(
      document.querySelectorAll("tr.strategy a.row-link, section.env > h2"));
  }

  function move(step) {
    const all = rows();
    if (!all.length) return;
    const at = all.indexOf(document.activeElement);
    const next = at < 0 ? (step > 0 ? 0 : all.length - 1)
      : Math.max(0, Math.min(all.length - 1, at + step));
    all[next].focus();
    all[next].scrollIntoView({ block: "nearest" });
  }

  function toggleReasons() {
    const row = document.activeElement && document.activeElement.closest("tr.strategy");
    if (row) row.classList.toggle("open");
  }

  function keys() {
    const dialog = document.getElementById("keys");
    if (dialog.open) dialog.close(); else dialog.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const search = document.getElementById("q");
    if (typing(event.target)) {
      if (event.key === "Escape" && event.target === search) {
        search.blur();
        move(1);
      } else if (event.key === "ArrowDown" && event.target === search) {
        event.preventDefault();
        move(1);
      }
      return;
    }
    if (document.getElementById("keys").open) return;
    if (event.key === "/" && search) {
      event.preventDefault();
      search.focus();
      search.select();
    } else if (event.key === "j" || event.key === "ArrowDown") {
      event.preventDefault();
      move(1);
    } else if (event.key === "k" || event.key === "ArrowUp") {
      event.preventDefault();
      move(-1);
    } else if (event.key === "x") {
      toggleReasons();
    } else if (event.key === "?") {
      event.preventDefault();
      keys();
    }
  });

  document.addEventListener("input", function (event) {
    if (event.target.closest && event.target.closest("#fleet-filters")) filter(false);
  });
  document.addEventListener("change", function (event) {
    if (event.target.tagName === "SELECT" && event.target.closest("#fleet-filters")) filter(true);
  });
  document.addEventListener("submit", function (event) {
    if (event.target.id !== "fleet-filters") return;
    event.preventDefault();
    filter(true);
  });
  document.addEventListener("click", function (event) {
    const link = event.target.closest && event.target.closest("a[data-fleet]");
    if (link && !event.ctrlKey && !event.metaKey && !event.shiftKey && event.button === 0) {
      event.preventDefault();
      const query = new URL(link.href, location.href).searchParams.toString();
      show(query, true).then(function () { syncForm(query); });
      return;
    }
    const cell = event.target.closest && event.target.closest("tr.strategy .cells");
    if (cell) cell.closest("tr.strategy").classList.toggle("open");
    if (event.target.id === "keys-button") keys();
  });

  // A count, a header or the pager changed the URL: the form says what it now holds.
  function syncForm(query) {
    const form = document.getElementById("fleet-filters");
    if (!form) return;
    const params = new URLSearchParams(query);
    Array.prototype.forEach.call(form.elements, function (field) {
      if (!field.name || field.type === "submit") return;
      if (field.type === "hidden") field.disabled = !params.get(field.name);
      else field.value = params.get(field.name) || (field.name === "sort" ? "name" : "");
    });
  }

  window.addEventListener("popstate", function () {
    if (!document.getElementById("fleet-filters")) return;
    const query = location.search.replace(/^\?/, "");
    show(query, false).then(function () { syncForm(query); });
  });

  document.addEventListener("DOMContentLoaded", function () {
    performance.mark("promoter-interactive");
  });
})();
