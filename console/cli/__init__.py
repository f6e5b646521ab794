"""``kazami``: the console's answers on a command line, for a server without a browser.

A console script (``make install`` puts it in the virtualenv: ``.venv/bin/kazami``) over the same ``broker/``
functions the pages use, talking to Kafka (and ZooKeeper) directly with the console's settings: the
environment and ``KAZAMI_CLUSTERS_FILE``, as console.config reads them. No database, no Django: what it shows
is what the cluster holds (masking and roles are the web console's; whoever runs this has the cluster's
credentials already). Commands after Trifecta's (``kls``, ``kget``, ``kfirst``/``klast``, ``kfind``,
``kconsumers``, ``zls``/``zget``)::

    kazami clusters | topics | topic T | get T P O | first T [P] | last T [P] | tail T
    kazami find T KEY | search T QUERY | groups | lag G | zk ls PATH | zk get PATH

Tables for people; ``--json`` for scripts (one JSON document, or JSON Lines for records). Exit codes:
0 answered; 1 nothing matched (find, search); 2 a usage error or bad input; 3 not found (cluster, topic,
partition, offset, group, znode); 4 the cluster or ZooKeeper did not answer, or refused the credentials;
5 Kafka refused or cannot do it (no ZooKeeper on KRaft, an ACL); 130 interrupted.

commands.py parses and runs; output.py draws tables and records."""

from console.cli.commands import main

__all__ = ["main"]
