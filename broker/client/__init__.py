"""Reaching a cluster: how to (config), a long-lived connection with deadlines, and why a secured cluster refuses
us (diagnose)."""
