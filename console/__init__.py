"""The Django project and app: settings, URLs, views, websocket consumers, models the console owns."""
