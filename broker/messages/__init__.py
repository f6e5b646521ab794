"""Messages: read a partition's log, search it with the filter language, mask it, produce to it, follow its
transactions."""
