"""Moving data: records exported and imported as files, copied between topics and clusters, dead letters sent
back where they came from. ``records`` is the file format, ``dead_letters`` reads where a dead letter came from."""
