"""Alerts: which rules a cluster breaks now (``rules``: pure, over what the lag sampler and the replication watch
already fetched), when a breach turns into a firing alert and when it resolves (``rules.step``), and how an
alert leaves the console (``deliver``: webhooks in plain JSON, Slack's and Teams' formats)."""
