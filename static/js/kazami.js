// Small behaviours shared by every page. No inline scripts anywhere: this file is the only one.
(function () {
  "use strict";

  // Kafka times are epoch milliseconds (UTC): show them in the viewer's zone, UTC on hover.
  function localiseTimes(root) {
    root.querySelectorAll("time[data-epoch-ms]").forEach(function (el) {
      var ms = Number(el.getAttribute("data-epoch-ms"));
      if (!isFinite(ms)) return;
      var d = new Date(ms);
      el.textContent = d.toLocaleTimeString();
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
  document.addEventListener("htmx:afterSettle", function (e) { localiseTimes(e.target || document); });
  document.addEventListener("htmx:oobAfterSwap", function (e) { localiseTimes(e.target || document); });
  document.addEventListener("htmx:wsOpen", function () { setLive(true); });
  document.addEventListener("htmx:wsClose", function () { setLive(false); });
})();
