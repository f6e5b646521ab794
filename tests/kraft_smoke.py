"""Every page and API the console has, read once against the cluster the environment names (prototype
check for KRaft and Kafka 4, not a pytest module): what answers an error, and which pages say "unknown",
"Dead" or "ZooKeeper".

    python -m broker.local up --data var/k43 --kafka-version 4.3.0 --base-port 15092
    KAZAMI_VAR_DIR=var/smoke KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:15092,127.0.0.1:15093,127.0.0.1:15094 \\
        ZOOKEEPER_CONNECT= python -m tests.kraft_smoke page-views tasks -- task-workers kip848-group share-group-1

Arguments: topics, then ``--`` and groups. Django runs in this process, with its own SQLite database in
``KAZAMI_VAR_DIR``.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

FLAGS = ("zookeeper", "unknown", "dead")


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    os.environ["KAZAMI_LAG_SAMPLER"] = "0"
    os.environ["KAZAMI_MAX_AGE"] = "0"
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    from console.access import set_role

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]  # the test client's host
    call_command("migrate", verbosity=0)
    user = User.objects.filter(username="smoke").first() or User.objects.create_user("smoke", password="smoke-pw-1")
    set_role(user, "admin")
    client = Client()
    client.force_login(user)

    topics, _, groups = (
        (argv[: argv.index("--")], None, argv[argv.index("--") + 1 :]) if "--" in argv else (argv, None, [])
    )
    c, api = "/clusters/local/", "/api/clusters/local/"
    urls = [c, api, c + "topics/", c + "topics/?internal=1", api + "topics/", c + "disks/"]
    for t in topics:
        urls += [
            f"{c}topics/{t}/",
            f"{api}topics/{t}/",
            f"{c}topics/{t}/partitions/0/",
            f"{api}topics/{t}/partitions/0/messages",
            f"{c}topics/{t}/partitions/0/offsets/0/",
            f"{c}topics/{t}/partitions/0/offsets/0/on-disk/",
            f"{c}topics/{t}/search/",
            f"{c}topics/{t}/find-key/?key=k",
            f"{c}topics/{t}/tail/",
            f"{c}topics/{t}/produce/",
            f"{c}brokers/0/partitions/{t}/0/segments/",
            f"{c}brokers/0/partitions/{t}/0/segments/0/",
            f"{c}brokers/0/partitions/{t}/0/segments/0/index/",
            f"{c}brokers/0/partitions/{t}/0/producers/",
        ]
    urls += [f"{c}brokers/{b}/logdirs/" for b in range(3)]
    urls += [c + "groups/", c + "groups/?hide_empty=1", api + "groups/", c + "groups-report.csv", "/metrics"]
    for g in groups:
        urls += [f"{c}groups/{g}/", f"{api}groups/{g}/", f"{c}groups/{g}/reset/"]
    urls += ["/users/", "/audit/", c + "analytics/", "/healthz"]

    failed = 0
    for url in urls:
        answer: Any = client.get(url)
        body = answer.content.decode(errors="replace")
        flags = [word for word in FLAGS if word in body.lower()]
        note = ""
        if answer.status_code >= 400:
            failed += 1
            note = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))[:200]
        print(f"{answer.status_code} {url} {' '.join(flags)} {note}".rstrip())
    print(f"{failed} of {len(urls)} answered an error")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
