"""Work a console process does beside serving pages: analytics jobs, the lag sampler, the replication watch, the
live analytics query."""
