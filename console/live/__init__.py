"""Live pages: websocket consumers that only route, the pollers and shared tails that feed them, the partials
they push."""
