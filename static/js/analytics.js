// A job's page: draws the result's charts (the rows' table pages and sorts itself through htmx links, which
// leave the charts alone), and reloads once when the job it shows finishes (the
// status is pushed over the websocket; the result's charts and table come with the full page).
(function () {
  "use strict";
  var source = document.getElementById("chart-data");
  if (source && window.KazamiCharts && typeof Chart !== "undefined") {
    var data = JSON.parse(source.textContent);
    var line = document.getElementById("line-chart");
    if (line && data.line) KazamiCharts.timeLine(line, data.line);
    var area = document.getElementById("area-chart");
    if (area && data.area) KazamiCharts.timeLine(area, data.area);
    var bar = document.getElementById("bar-chart");
    if (bar && data.bars) KazamiCharts.bars(bar, data.bars);
    var stack = document.getElementById("stacked-chart");
    if (stack && data.stacked) KazamiCharts.stacked(stack, data.stacked);
  }
  var page = document.getElementById("job-page");
  function check() {
    var status = document.getElementById("job-status");
    if (!page || !status) return;
    if (page.dataset.finished === "0" && status.dataset.finished === "1") {
      page.dataset.finished = "1";
      document.querySelectorAll(".when-running").forEach(function (el) { el.hidden = true; });
      window.location.reload();
    }
  }
  document.addEventListener("htmx:oobAfterSwap", check);
  document.addEventListener("htmx:afterSettle", check);
})();
