// The lag history chart of a group page: total lag and each partition, from the JSON the page
// carries; live pushes of the group fragment add a point for the total.
(function () {
  "use strict";
  var source = document.getElementById("lag-history");
  var canvas = document.getElementById("lag-chart");
  if (!source || !canvas || typeof Chart === "undefined") return;
  var data = JSON.parse(source.textContent);
  if (!data.times.length) document.getElementById("chart-empty").hidden = false;
  var palette = ["#2457c5", "#1f8a4c", "#b7791f", "#c53030", "#6b46c1", "#0e7490", "#be185d", "#4d7c0f"];
  var datasets = [{ label: "total", data: data.total, borderColor: "#141a26", borderWidth: 2.5, pointRadius: 0, tension: 0.2 }];
  Object.keys(data.partitions).forEach(function (name, i) {
    datasets.push({ label: name, data: data.partitions[name], borderColor: palette[i % palette.length],
                    borderWidth: 1, pointRadius: 0, tension: 0.2, hidden: Object.keys(data.partitions).length > 12 });
  });
  var labels = data.times.map(function (ms) { return new Date(ms).toLocaleTimeString(); });
  var chart = new Chart(canvas, {
    type: "line",
    data: { labels: labels, datasets: datasets },
    options: { animation: false, maintainAspectRatio: false, interaction: { mode: "index", intersect: false },
               scales: { y: { beginAtZero: true, title: { display: true, text: "messages behind" } } },
               plugins: { legend: { position: "bottom" } } }
  });
  document.addEventListener("htmx:oobAfterSwap", function (e) {
    var el = document.getElementById("group");
    if (!el || !el.dataset.at) return;
    chart.data.labels.push(new Date(Number(el.dataset.at)).toLocaleTimeString());
    chart.data.datasets[0].data.push(Number(el.dataset.totalLag));
    var now = {};
    el.querySelectorAll("tr[data-tp]").forEach(function (row) {
      if (row.dataset.lag !== undefined) now[row.dataset.tp] = Number(row.dataset.lag);
    });
    for (var i = 1; i < chart.data.datasets.length; i++) {
      var label = chart.data.datasets[i].label;
      chart.data.datasets[i].data.push(label in now ? now[label] : null);
    }
    chart.update();
    document.getElementById("chart-empty").hidden = true;
  });
})();
