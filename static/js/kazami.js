// Small behaviours shared by every page. No inline scripts anywhere: this file is the only one.
(function () {
  "use strict";

  // Kafka times are epoch milliseconds (UTC): show them in the viewer's zone, UTC on hover.
  function localiseTimes(root) {
    root.querySelectorAll("time[data-epoch-ms]").forEach(function (el) {
      var ms = Number(el.getAttribute("data-epoch-ms"));
      if (!isFinite(ms)) return;
      var d = new Date(ms);
      el.textContent = el.getAttribute("data-format") === "datetime" ? d.toLocaleString() : d.toLocaleTimeString();
      el.title = d.toISOString();
    });
  }

  function setLive(state) {
    var el = document.getElementById("live-status");
    if (!el) return;
    el.hidden = false;
    el.textContent = state ? "live" : "reconnecting…";
    el.classList.toggle("offline", !state);
  }

  document.addEventListener("DOMContentLoaded", function () { localiseTimes(document); });

  // A row of messages opens in place: the whole record under it (its page's ?part=expanded), and closes again.
  document.addEventListener("click", function (e) {
    var button = e.target.closest ? e.target.closest("button.expand[data-expand]") : null;
    if (!button) return;
    var row = button.closest("tr");
    var next = row.nextElementSibling;
    if (next && next.classList.contains("expanded-row")) {
      next.remove();
      button.setAttribute("aria-expanded", "false");
      return;
    }
    button.setAttribute("aria-expanded", "true");
    htmx.ajax("GET", button.getAttribute("data-expand"), { target: row, swap: "afterend" });
  });
  // A connector's buttons follow its live state: Pause only while it runs, Resume only while paused or stopped.
  function offerActions() {
    var status = document.getElementById("connector-status");
    if (!status || !status.dataset.state) return;
    var state = status.dataset.state, failed = Number(status.dataset.failedTasks || 0);
    document.querySelectorAll("button[data-offered-when]").forEach(function (b) {
      var when = b.getAttribute("data-offered-when");
      var ok = when === "failed-tasks" ? failed > 0 : when.split(" ").indexOf(state) >= 0;
      b.disabled = !ok;
      if (ok) b.removeAttribute("title");
      else b.title = b.getAttribute("data-why-not") || "";
    });
  }
  // A Stop button is offered only while what it stops runs (its progress says data-running).
  function offerStops() {
    document.querySelectorAll("button[data-stops]").forEach(function (b) {
      var progress = document.getElementById(b.getAttribute("data-stops"));
      b.disabled = !(progress && progress.hasAttribute("data-running"));
    });
  }
  ["htmx:afterSettle", "htmx:oobAfterSwap", "htmx:wsAfterMessage"].forEach(function (name) {
    document.addEventListener(name, offerStops);
  });
  document.addEventListener("DOMContentLoaded", offerStops);
  document.addEventListener("DOMContentLoaded", offerActions);
  document.addEventListener("htmx:afterSettle", offerActions);
  document.addEventListener("htmx:oobAfterSwap", offerActions);
  document.addEventListener("htmx:wsAfterMessage", offerActions);
  document.addEventListener("htmx:afterSettle", function (e) { localiseTimes(e.target || document); });
  document.addEventListener("htmx:oobAfterSwap", function (e) { localiseTimes(e.target || document); });
  // A live tail keeps the newest rows only, so a long-open page stays light.
  function pruneRows(root) {
    var body = document.getElementById("tail-rows");
    if (!body) return;
    while (body.rows.length > 500) body.deleteRow(body.rows.length - 1);
  }
  document.addEventListener("htmx:oobAfterSwap", pruneRows);

  // Search: the stop button is useful only while a search runs.
  document.addEventListener("htmx:wsOpen", function () { setLive(true); });
  // A pasted or redirected search link with start=1 (find by key over every partition) starts at once.
  document.addEventListener("htmx:wsOpen", function () {
    var form = document.querySelector("form[data-autostart]");
    if (!form) return;
    form.removeAttribute("data-autostart");
    form.requestSubmit();
  });
  document.addEventListener("htmx:wsClose", function () { setLive(false); });

  // A form or the button that submits it may ask first (data-confirm): the policy forbids inline handlers.
  document.addEventListener("submit", function (e) {
    var asker = (e.submitter && e.submitter.closest("[data-confirm]")) || e.target.closest("form[data-confirm]");
    if (asker && !window.confirm(asker.getAttribute("data-confirm"))) e.preventDefault();
  });
})();
