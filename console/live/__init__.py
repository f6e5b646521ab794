"""Live pages: websocket consumers that only route (and the session checks and cancellable-task base they stand on),
the pollers and shared tails that feed them, the partials they push."""
