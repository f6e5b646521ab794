"""Topics and partitions: read them, and change them."""
