// A topic profile's page (templates/analytics/_profile_result.html): bars of records per partition (hot ones
// red) and of records per hour (labelled in the viewer's time zone), from the profile's own JSON.
(function () {
  "use strict";
  var source = document.getElementById("profile-data");
  if (!source || typeof Chart === "undefined") return;
  var profile = JSON.parse(source.textContent);
  var BLUE = "#2457c5", RED = "#c53030";

  function bars(canvas, labels, values, colors, title) {
    return new Chart(canvas, {
      type: "bar",
      data: { labels: labels, datasets: [{ label: title, data: values, backgroundColor: colors, maxBarThickness: 40 }] },
      options: {
        animation: false, maintainAspectRatio: false,
        scales: { y: { beginAtZero: true, title: { display: true, text: "records" } } },
        plugins: { legend: { display: false } }
      }
    });
  }

  var partitions = document.getElementById("partition-chart");
  if (partitions && profile.partitions) {
    bars(partitions,
      profile.partitions.map(function (p) { return "partition " + p.partition; }),
      profile.partitions.map(function (p) { return p.records; }),
      profile.partitions.map(function (p) { return p.hot ? RED : BLUE; }),
      "records");
  }
  var hours = document.getElementById("hour-chart");
  if (hours && profile.hours && profile.hours.length) {
    bars(hours,
      profile.hours.map(function (h) {
        return new Date(h.hour).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
      }),
      profile.hours.map(function (h) { return h.records; }),
      BLUE, "records");
  }
})();
