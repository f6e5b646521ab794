// The throughput chart of the overview and of a topic page: messages written per second over the last hour,
// a point added each time the numbers under it are fetched again.
(function () {
  "use strict";
  var source = document.getElementById("throughput-history");
  var canvas = document.getElementById("throughput-chart");
  if (!source || !canvas || typeof Chart === "undefined" || !window.KazamiCharts) return;
  var data = JSON.parse(source.textContent);
  if (!data.times.length) document.getElementById("throughput-chart-empty").hidden = false;
  var chart = KazamiCharts.timeLine(canvas, {
    times: data.times, step_ms: data.step_ms, series: [{ label: "messages/s", values: data.messages, width: 2 }]
  }, { yTitle: "messages per second" });
  document.addEventListener("htmx:afterSettle", function () {
    var now = document.getElementById("throughput-now");
    if (!now || !now.dataset.at) return;
    var at = Date.parse(now.dataset.at), points = chart.data.datasets[0].data;
    if (points.length && points[points.length - 1].x >= at) return;
    points.push({ x: at, y: Number(now.dataset.messages) });
    chart.options.scales.x.max = at;
    chart.update("none");
  });
})();
