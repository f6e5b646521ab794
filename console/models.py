"""What the console itself owns (Kafka's state is never copied here)."""

from __future__ import annotations

from django.db import models


class TopicSchema(models.Model):
    """An Avro schema a user uploaded to decode a topic's keys or values."""

    KEY, VALUE = "key", "value"
    cluster = models.CharField(max_length=63)
    topic = models.CharField(max_length=249)
    part = models.CharField(max_length=5, choices=[(KEY, "key"), (VALUE, "value")])
    schema = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "topic", "part"], name="one_schema_per_part")]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.topic} {self.part}"


class LagSample(models.Model):
    """A group's committed offset and the log end of one partition at one moment (the lag history)."""

    cluster = models.CharField(max_length=63)
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    at = models.DateTimeField()
    committed = models.BigIntegerField(null=True)
    log_end = models.BigIntegerField(null=True)
    lag = models.BigIntegerField(null=True)
    lag_ms = models.BigIntegerField(null=True)
    # The partition's status as the console judged it when sampling (Burrow's rules; "" when not known).
    status = models.CharField(max_length=16, blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["cluster", "group", "at"], name="lag_by_group_time"),
            models.Index(fields=["at"], name="lag_by_time"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.group} {self.topic}-{self.partition} @ {self.at:%H:%M:%S}"


class CommitRing(models.Model):
    """A group's last commits of one partition, read from the offsets topic (broker.groups.commit_log.Rings):
    ``commits`` is a list of [commit time in epoch ms, committed offset, log end then], oldest first."""

    cluster = models.CharField(max_length=63)
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    commits = models.JSONField(default=list)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "group", "topic", "partition"], name="one_ring_per_partition")
        ]
        indexes = [models.Index(fields=["updated_at"], name="ring_by_time")]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.group} {self.topic}-{self.partition}: {len(self.commits)} commits"


class CommitWatch(models.Model):
    """How far the console has read a cluster's offsets topic: every commit up to ``read_at`` is in its rings
    (None while it cannot read the topic; ``failure`` says why)."""

    cluster = models.CharField(max_length=63, unique=True)
    read_at = models.DateTimeField(null=True)
    failure = models.TextField(blank=True, default="")

    def __str__(self) -> str:
        return f"{self.cluster}: read to {self.read_at}"


class ThroughputSample(models.Model):
    """Messages and bytes written per second over one sampling interval (console/background/lag_sampler.py): for
    the whole cluster (``kind`` cluster, ``name`` ""), one topic (``topic``) or one broker (``broker``, its id)."""

    cluster = models.CharField(max_length=63)
    kind = models.CharField(max_length=8)
    name = models.CharField(max_length=249, blank=True, default="")
    at = models.DateTimeField()
    seconds = models.FloatField()  # the interval the rates were measured over, ending at ``at``
    messages_per_s = models.FloatField()
    bytes_per_s = models.FloatField(null=True)  # not known for this interval (a replica shrank, a leader moved)
    disk_bytes = models.BigIntegerField(null=True)  # a broker's: what its replicas hold at the end of the interval

    class Meta:
        indexes = [
            models.Index(fields=["cluster", "kind", "at"], name="throughput_by_kind_time"),
            models.Index(fields=["cluster", "kind", "name", "at"], name="throughput_by_name_time"),
            models.Index(fields=["at"], name="throughput_by_time"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster} {self.kind} {self.name} @ {self.at:%H:%M:%S}: {self.messages_per_s:.1f}/s"


class ReplicationEvent(models.Model):
    """A change in a cluster's replication seen by the replication watch (console/background/replication_watch.py):
    broker registered or gone, controller changed, leader changed, ISR shrank or expanded."""

    cluster = models.CharField(max_length=63)
    at = models.DateTimeField()
    kind = models.CharField(max_length=32)
    text = models.CharField(max_length=500)
    topic = models.CharField(max_length=249, blank=True, default="")
    partition = models.IntegerField(null=True)
    broker = models.IntegerField(null=True)
    details = models.JSONField(default=dict)

    class Meta:
        indexes = [models.Index(fields=["cluster", "at"], name="event_by_cluster_time")]
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.cluster} @ {self.at:%H:%M:%S} {self.text}"


class Lease(models.Model):
    """Who runs a singleton job (the lag sampler) among several console processes, until when."""

    name = models.CharField(max_length=63, primary_key=True)
    owner = models.CharField(max_length=128)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} held by {self.owner} until {self.expires_at:%H:%M:%S}"


class Access(models.Model):
    """No table: the console's own permissions, which the roles (Django groups) are made of."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("view_console", "Read every page and the API"),
            ("produce_messages", "Produce messages"),
            ("reset_offsets", "Reset consumer group offsets"),
            ("change_topics", "Create topics, add partitions, change configs, upload schemas"),
            ("run_analytics", "Run analytics jobs"),
            ("delete_topics", "Delete topics and records"),
            ("delete_groups", "Delete consumer groups and their offsets"),
            ("reassign_partitions", "Reassign partitions"),
            ("write_zookeeper", "Write to ZooKeeper"),
            ("manage_users", "Create users and change their roles"),
        ]

    def __str__(self) -> str:
        return "console permissions"


class Grant(models.Model):
    """A scoped role: ``role`` on the clusters matching ``cluster`` (a glob), on all of each or on its resources of
    one kind whose names match ``pattern`` (console.identity.roles.Grant), given to one user or to everyone in a
    ``team`` (a group the identity provider or the directory names; a user's teams are kept as Django groups)."""

    user = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.CASCADE, related_name="grants")
    team = models.CharField(max_length=150, blank=True, default="")
    cluster = models.CharField(max_length=100)
    resource = models.CharField(max_length=16)
    pattern = models.CharField(max_length=255)
    role = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team", "cluster", "resource", "pattern", "id"]
        indexes = [models.Index(fields=["team"])]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(user__isnull=False) & models.Q(team=""))
                | (models.Q(user__isnull=True) & ~models.Q(team="")),
                name="grant_user_or_team",
            )
        ]

    def __str__(self) -> str:
        who = self.user.get_username() if self.user_id and self.user else f"team {self.team}"
        return f"{who}: {self.spec}"

    @property
    def spec(self) -> str:
        return f"{self.cluster}:{self.resource}:{self.pattern}:{self.role}"


class AuditEntry(models.Model):
    """One change someone made or tried to make, and how it ended."""

    DONE, FAILED, REFUSED = "done", "failed", "refused"
    at = models.DateTimeField(db_index=True)
    user = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL)
    username = models.CharField(max_length=150)  # kept when the user is deleted
    cluster = models.CharField(max_length=63, blank=True)
    action = models.CharField(max_length=63)
    target = models.CharField(max_length=512, blank=True)
    params = models.JSONField(default=dict)
    outcome = models.CharField(max_length=8, choices=[(DONE, "done"), (FAILED, "failed"), (REFUSED, "refused")])
    result = models.TextField(blank=True)
    remote_addr = models.GenericIPAddressField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["cluster", "at"], name="audit_by_cluster_time")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.username} {self.action} {self.target} {self.outcome}"


class AnalyticsJob(models.Model):
    """One run of an analytics report: what was asked, by whom, and how it went (its rows apart)."""

    QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = "queued", "running", "succeeded", "failed", "cancelled"
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED)]
    FINISHED = (SUCCEEDED, FAILED, CANCELLED)

    cluster = models.CharField(max_length=63)
    report = models.CharField(max_length=16)
    # topics, bucket, from_ms, to_ms, approximate, top_n (and groups for the lag report)
    params = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=STATUSES, default=QUEUED)
    progress = models.FloatField(default=0.0)
    stage = models.CharField(max_length=255, blank=True)
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL)
    username = models.CharField(max_length=150)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    pid = models.IntegerField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    spark_ui_url = models.CharField(max_length=255, blank=True)
    input_rows = models.BigIntegerField(null=True, blank=True)
    input_bytes = models.BigIntegerField(null=True, blank=True)
    malformed = models.JSONField(default=dict)
    summary = models.JSONField(default=dict)
    notes = models.JSONField(default=list)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["cluster", "created_at"], name="job_by_cluster_time"),
            models.Index(fields=["status"], name="job_by_status"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} {self.report} on {self.cluster}: {self.status}"

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None:
            return None
        from django.utils import timezone

        return ((self.finished_at or timezone.now()) - self.started_at).total_seconds()


class Transfer(models.Model):
    """A run that moves data (a copy, an import, a dead-letter redrive): what was asked, by whom, where it is.

    It runs in a thread of the console process that took it, which writes its progress here twice a second
    (``heartbeat_at``); cancelling is asked here (any process may), and a run whose heartbeat stopped (its
    process ended) reads as interrupted, with the position to resume from in its progress."""

    QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED, INTERRUPTED = (
        "queued",
        "running",
        "succeeded",
        "failed",
        "cancelled",
        "interrupted",
    )
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED, INTERRUPTED)]
    FINISHED = (SUCCEEDED, FAILED, CANCELLED, INTERRUPTED)

    kind = models.CharField(max_length=16)  # copy, import, redrive
    cluster = models.CharField(max_length=63)
    topic = models.CharField(max_length=249)
    spec = models.JSONField(default=dict)  # what was asked, checked
    status = models.CharField(max_length=12, choices=STATUSES, default=QUEUED)
    progress = models.JSONField(default=dict)
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL)
    username = models.CharField(max_length=150)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    resumed_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["cluster", "created_at"], name="transfer_by_cluster_time")]

    def __str__(self) -> str:
        return f"{self.kind} {self.pk} of {self.cluster}/{self.topic}: {self.status}"

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED


class AnalyticsResult(models.Model):
    """The rows a succeeded job produced (kept apart so job lists do not load them)."""

    job = models.OneToOneField(AnalyticsJob, on_delete=models.CASCADE, primary_key=True, related_name="result")
    rows = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"result of job {self.job_id}: {len(self.rows)} rows"


class LiveQuery(models.Model):
    """The live analytics query of a cluster (at most one): whether it should run, and its process."""

    STOPPED, STARTING, RUNNING, FAILED = "stopped", "starting", "running", "failed"
    cluster = models.CharField(max_length=63, primary_key=True)
    wanted = models.BooleanField(default=False)  # should run: a dead process is started again
    status = models.CharField(max_length=10, default=STOPPED)
    topics = models.JSONField(default=list)
    pid = models.IntegerField(null=True, blank=True)
    started_by = models.CharField(max_length=150, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    restarts = models.IntegerField(default=0)
    last_batch_at = models.DateTimeField(null=True, blank=True)
    progress = models.JSONField(default=dict)
    error = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"live query of {self.cluster}: {self.status}"


class LiveFigure(models.Model):
    """One live figure: a metric's count (and distinct users) for one key in one minute."""

    cluster = models.CharField(max_length=63)
    minute_ms = models.BigIntegerField()
    metric = models.CharField(max_length=16)
    key = models.CharField(max_length=512)
    count = models.BigIntegerField()
    users = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "minute_ms", "metric", "key"], name="one_live_figure")
        ]
        indexes = [models.Index(fields=["cluster", "metric", "minute_ms"], name="live_by_metric_time")]

    def __str__(self) -> str:
        return f"{self.cluster} {self.minute_ms} {self.metric} {self.key}: {self.count}"


class SavedQuery(models.Model):
    """A SQL query over topics a user saved on a cluster's SQL page: theirs to change or delete, and, when
    ``shared``, listed to everyone who can see the cluster (any user may open a query by its link)."""

    cluster = models.CharField(max_length=63)
    name = models.CharField(max_length=120)
    sql = models.TextField()
    owner = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL)
    owner_name = models.CharField(max_length=150)  # kept when the user is deleted
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["cluster", "owner"], name="saved_query_by_owner")]

    def __str__(self) -> str:
        return f"saved query {self.pk} {self.name!r} on {self.cluster} by {self.owner_name}"


class AlertChannel(models.Model):
    """Where alerts are sent: a webhook (plain JSON, Slack's or Teams' format) or email recipients (through the
    console's mail server, KAZAMI_SMTP_*). One for every cluster."""

    name = models.CharField(max_length=120, unique=True)
    kind = models.CharField(max_length=16, default="webhook")  # webhook or email
    url = models.CharField(max_length=2000, blank=True)  # a webhook's
    format = models.CharField(max_length=8, default="json")  # a webhook's: json, slack, teams
    to = models.JSONField(default=list)  # an email channel's recipients
    created_at = models.DateTimeField()
    created_by = models.CharField(max_length=150)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"alert channel {self.name} ({self.kind}, {self.format})"


class AlertRule(models.Model):
    """A rule of a cluster (broker.alerts.rules): what it watches, for which subjects, from what threshold, for
    how long before it fires, and where it is sent. ``builtin``: one a new deployment gets (offline partitions,
    a broker gone), which admins may change or delete."""

    cluster = models.CharField(max_length=63)
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=32)
    severity = models.CharField(max_length=10, default="warning")
    match = models.CharField(max_length=249, default="*")
    topics = models.CharField(max_length=249, default="*")
    statuses = models.JSONField(default=list)
    threshold = models.FloatField(default=0)
    for_s = models.FloatField(default=0)
    channels = models.ManyToManyField(AlertChannel, blank=True, related_name="rules")
    enabled = models.BooleanField(default=True)
    builtin = models.BooleanField(default=False)
    created_at = models.DateTimeField()
    created_by = models.CharField(max_length=150)

    class Meta:
        ordering = ["cluster", "name", "id"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="one_alert_rule_name")]

    def __str__(self) -> str:
        return f"alert rule {self.name} on {self.cluster} ({self.kind})"


class AlertState(models.Model):
    """A subject that breaks a rule now: since when, and since when it fires (null: pending its ``for``). Kept in
    the database so that a restart neither loses a firing alert nor sends it again."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="states")
    subject = models.CharField(max_length=255)
    breaking_since = models.DateTimeField()
    firing_since = models.DateTimeField(null=True, blank=True)
    value = models.FloatField(default=0)
    text = models.CharField(max_length=500, blank=True)
    # Someone said they are on it: shown beside the alert until it resolves.
    acknowledged_by = models.CharField(max_length=150, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rule", "subject"], name="one_alert_state")]

    def __str__(self) -> str:
        return f"{self.rule_id}/{self.subject}: {'firing' if self.firing_since else 'pending'}"


class AlertEvent(models.Model):
    """An alert that fired or resolved: the history, and what its deliveries are for."""

    FIRING, RESOLVED, TEST = "firing", "resolved", "test"
    rule = models.ForeignKey(AlertRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="events")
    cluster = models.CharField(max_length=63)
    rule_name = models.CharField(max_length=120)  # kept when the rule is deleted
    kind = models.CharField(max_length=32)
    severity = models.CharField(max_length=10)
    subject = models.CharField(max_length=255)
    state = models.CharField(max_length=10)
    at = models.DateTimeField(db_index=True)
    since = models.DateTimeField()
    value = models.FloatField(default=0)
    text = models.CharField(max_length=500, blank=True)
    silenced = models.BooleanField(default=False)  # held back by a silence: sent nowhere

    class Meta:
        indexes = [models.Index(fields=["cluster", "at"], name="alert_event_by_time")]

    def __str__(self) -> str:
        return f"{self.rule_name} {self.subject} {self.state} at {self.at:%H:%M:%S}"


class AlertDelivery(models.Model):
    """One event sent to one channel: tried until it is taken, with back-off, up to a number of attempts."""

    event = models.ForeignKey(AlertEvent, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.ForeignKey(AlertChannel, on_delete=models.CASCADE, related_name="deliveries")
    attempts = models.IntegerField(default=0)
    next_at = models.DateTimeField(null=True, blank=True)  # null: nothing more to try (delivered, or given up)
    delivered_at = models.DateTimeField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        indexes = [models.Index(fields=["next_at"], name="alert_delivery_due")]

    def __str__(self) -> str:
        return f"event {self.event_id} to {self.channel_id}: {'sent' if self.delivered_at else self.error or 'due'}"


class AlertSilence(models.Model):
    """Alerts held back for a while: of one rule (or every rule of the cluster), of the subjects a glob matches.
    What fires or resolves meanwhile is kept in the history, marked silenced, and sent nowhere."""

    cluster = models.CharField(max_length=63)
    rule = models.ForeignKey(AlertRule, null=True, blank=True, on_delete=models.CASCADE, related_name="silences")
    subject = models.CharField(max_length=255, default="*")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    comment = models.CharField(max_length=500, blank=True)
    created_by = models.CharField(max_length=150)

    class Meta:
        indexes = [models.Index(fields=["cluster", "ends_at"], name="alert_silence_by_end")]

    def __str__(self) -> str:
        return f"silence of {self.rule_id or 'every rule'} / {self.subject} until {self.ends_at:%Y-%m-%d %H:%M}"
