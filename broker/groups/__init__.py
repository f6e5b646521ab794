"""Consumer groups of every type (classic, KIP-848 consumer, share) and their lag, its status and offset resets."""
