from __future__ import annotations

from django.urls import path

from console.live.consumers import LiveConsumer, SearchConsumer, TailConsumer
from console.live.disk_checks import SegmentCheckConsumer

websocket_urlpatterns = [
    path("ws/clusters/<slug:cluster>/topics/<str:topic>/search/", SearchConsumer.as_asgi()),
    path("ws/clusters/<slug:cluster>/topics/<str:topic>/tail/", TailConsumer.as_asgi()),
    path(
        "ws/clusters/<slug:cluster>/brokers/<int:broker>/partitions/<str:topic>/<int:partition>/check/",
        SegmentCheckConsumer.as_asgi(),
    ),
    path("ws/clusters/<slug:cluster>/<slug:view>/", LiveConsumer.as_asgi()),
]
