"""Demo workloads for the embedded cluster, so there is always something real to look at."""
