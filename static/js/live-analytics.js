// The live analytics page: one chart of PV and UU per minute, outside the pushed fragment; each push
// brings its data (#live-line's data-line: pushed fragments lose their script elements) and the chart takes it,
// from the first push on.
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
    var spec = JSON.parse(source.getAttribute("data-line"));
    if (!chart) {
      chart = KazamiCharts.timeLine(canvas, spec);
      return;
    }
    spec.series.forEach(function (s, i) {
      chart.data.datasets[i].data = spec.times.map(function (t, j) { return { x: t, y: s.values[j] }; });
    });
    chart.options.scales.x.min = spec.times[0];  // the last hour moves on
    chart.options.scales.x.max = spec.times[spec.times.length - 1];
    chart.update();
  }
  document.addEventListener("DOMContentLoaded", draw);
  document.addEventListener("htmx:oobAfterSwap", draw);
})();
