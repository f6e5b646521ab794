"""ASGI entry point served by Daphne: HTTP (with static files) and websockets."""

from __future__ import annotations

import gc
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from django.core.asgi import get_asgi_application

django_app = get_asgi_application()

from console.background import lag_sampler, replication_watch  # noqa: E402
from console.errors import StaticFiles  # noqa: E402
from console.live.origin import SameOrigin  # noqa: E402
from console.live.routing import websocket_urlpatterns  # noqa: E402

lag_sampler.start()  # only when serving: management commands never import this module
replication_watch.start()

application = ProtocolTypeRouter(
    {
        "http": StaticFiles(django_app),
        "websocket": SameOrigin(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# What starting made (Django, the apps, kafka-python: ~100,000 objects) lives as long as the process: frozen
# out of the cyclic collector, so the full collections that come every few hundred requests walk only what
# the requests made. Walking it all took tens of milliseconds, a page's p99 (the message_page benchmark).
gc.collect()
gc.freeze()
