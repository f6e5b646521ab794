from __future__ import annotations

from django.urls import path

from console.consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/clusters/<slug:cluster>/<slug:view>/", LiveConsumer.as_asgi()),
]
