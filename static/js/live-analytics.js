// The live analytics page: one chart of PV and UU per minute, outside the pushed fragment; each push
// brings its data (#live-line) and the chart takes it.
(function () {
  "use strict";
  var chart = null;
  function draw() {
    var source = document.getElementById("live-line");
    var canvas = document.getElementById("live-chart");
    var card = document.getElementById("live-chart-card");
    if (!source || !canvas || !window.KazamiCharts || typeof Chart === "undefined") return;
    card.hidden = false;
    var tables = document.getElementById("live-tables");
    if (tables) tables.hidden = false;
    var spec = JSON.parse(source.textContent);
    if (!chart) {
      chart = KazamiCharts.timeLine(canvas, spec);
      return;
    }
    spec.series.forEach(function (s, i) {
      chart.data.datasets[i].data = spec.times.map(function (t, j) { return { x: t, y: s.values[j] }; });
    });
    chart.update();
  }
  document.addEventListener("DOMContentLoaded", draw);
  document.addEventListener("htmx:oobAfterSwap", draw);
})();
