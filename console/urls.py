from __future__ import annotations

from django.urls import path

from console.views import api, pages

CLUSTER = "clusters/<slug:cluster>/"

urlpatterns = [
    path("", pages.index, name="index"),
    path(CLUSTER, pages.cluster_overview, name="cluster-overview"),
    path("api/clusters/", api.clusters, name="api-clusters"),
    path(f"api/{CLUSTER}", api.cluster, name="api-cluster"),
    path("healthz", api.health, name="health"),
]

handler400 = "console.errors.handler400"
handler404 = "console.errors.handler404"
handler500 = "console.errors.handler500"
