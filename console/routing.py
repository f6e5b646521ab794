from __future__ import annotations

from django.urls import path

from console.consumers import LiveConsumer, SearchConsumer, TailConsumer

websocket_urlpatterns = [
    path("ws/clusters/<slug:cluster>/topics/<str:topic>/search/", SearchConsumer.as_asgi()),
    path("ws/clusters/<slug:cluster>/topics/<str:topic>/tail/", TailConsumer.as_asgi()),
    path("ws/clusters/<slug:cluster>/<slug:view>/", LiveConsumer.as_asgi()),
]
