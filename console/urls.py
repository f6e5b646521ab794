from __future__ import annotations

from django.urls import path, register_converter

from console.params import Int32Converter, Int64Converter
from console.views import access, analytics, disks, groups, messages, reassign, topics, zookeeper
from console.views import acls as acl_views
from console.views import alerts as alert_views
from console.views import brokerconfigs as broker_config_views
from console.views import cluster as cluster_views
from console.views import connect as connect_views
from console.views import grants as grant_views
from console.views import masking as masking_views
from console.views import quotas as quota_views
from console.views import schemas as schema_views
from console.views import sql as sql_views
from console.views import transactions as transaction_views
from console.views import transfers as transfer_views

# Whole numbers in a path within Kafka's ranges (int32 partitions, brokers, tasks; int64 offsets, positions,
# job ids): a larger one matches no route, a 404.
register_converter(Int32Converter, "int32")
register_converter(Int64Converter, "int64")

CLUSTER = "clusters/<slug:cluster>/"
TOPIC = CLUSTER + "topics/<str:topic>/"
PARTITION = TOPIC + "partitions/<int32:partition>/"
# A group id may hold "/" (Kafka allows any string), so it is a path; the pages under a group
# come before the group's own page, which would otherwise swallow them.
GROUP = CLUSTER + "groups/<path:group>/"
BROKER = CLUSTER + "brokers/<int32:broker>/"
REPLICA = BROKER + "partitions/<str:topic>/<int32:partition>/"
SEGMENT = REPLICA + "segments/<int64:base>/"
CONNECTOR = CLUSTER + "connectors/<str:connect_name>/<str:name>/"
# A subject may hold "/" (confluent-kafka's Protobuf serializer registers an imported file as a subject named by
# its path, "shop/common/money.proto"): the routes below the subject come before the subject's own page, which
# would otherwise take "<subject>/diff/" as a subject.
SUBJECT = CLUSTER + "schemas/<path:subject>/"

urlpatterns = [
    path("", cluster_views.index, name="index"),
    # Who may do what
    path("login/", access.login, name="login"),
    path("logout/", access.logout, name="logout"),
    path("oidc/authenticate/", access.sso_start, name="oidc-start"),
    path("oidc/callback/", access.sso_callback, name="oidc-callback"),
    path("audit/", access.audit_log, name="audit-log"),
    path("users/", access.users, name="users"),
    path("users/grants/", grant_views.grant_new, name="grant-new"),
    path("users/grants/<int:grant>/delete/", grant_views.grant_delete, name="grant-delete"),
    path("users/<str:username>/", access.user_change, name="user-change"),
    path(CLUSTER, cluster_views.cluster_overview, name="cluster-overview"),
    # Topics
    path(CLUSTER + "quorum/", cluster_views.quorum, name="quorum"),
    path(CLUSTER + "throughput/", cluster_views.cluster_throughput, name="cluster-throughput"),
    path(CLUSTER + "replication/", cluster_views.replication, name="replication"),
    path(CLUSTER + "reassign/", reassign.page, name="reassign"),
    path(CLUSTER + "reassign/plan.json", reassign.plan_file, name="reassign-plan-file"),
    path(CLUSTER + "quotas/", quota_views.page, name="quotas"),
    path(CLUSTER + "masking/", masking_views.page, name="masking"),
    path(f"api/{CLUSTER}masking/", masking_views.api_rules, name="api-masking"),
    # ACLs and SCRAM users
    path(CLUSTER + "acls/", acl_views.acl_list, name="acl-list"),
    path(CLUSTER + "acls/new/", acl_views.acl_new, name="acl-new"),
    path(CLUSTER + "acls/delete/", acl_views.acl_delete, name="acl-delete"),
    path(CLUSTER + "acls/export.csv", acl_views.acl_export, name="acl-export"),
    path(CLUSTER + "acls/import/", acl_views.acl_import, name="acl-import"),
    path(CLUSTER + "acls/principals/<path:principal>/", acl_views.principal_page, name="acl-principal"),
    path(CLUSTER + "acls/users/", acl_views.users_page, name="acl-users"),
    path(CLUSTER + "embedded-brokers/", cluster_views.broker_stop_start, name="broker-stop-start"),
    path(CLUSTER + "zookeeper/", zookeeper.zookeeper, name="zookeeper"),
    path(CLUSTER + "zookeeper/tree/", zookeeper.zookeeper_tree, name="zookeeper-tree"),
    path(CLUSTER + "zookeeper/change/", zookeeper.zookeeper_change, name="zookeeper-change"),
    path(CLUSTER + "zookeeper/servers/", zookeeper.zookeeper_servers, name="zookeeper-servers"),
    path(f"api/{CLUSTER}zookeeper/", zookeeper.zookeeper_api, name="api-zookeeper"),
    path(f"api/{CLUSTER}zookeeper/servers/", zookeeper.zookeeper_servers_api, name="api-zookeeper-servers"),
    path(CLUSTER + "topics/", topics.topic_list, name="topic-list"),
    path(CLUSTER + "topics-new/", topics.topic_new, name="topic-new"),
    path(TOPIC, topics.topic_detail, name="topic-detail"),
    path(TOPIC + "add-partitions/", topics.topic_add_partitions, name="topic-add-partitions"),
    path(TOPIC + "configs/", topics.topic_configs, name="topic-configs"),
    path(TOPIC + "delete-records/", topics.topic_delete_records, name="topic-delete-records"),
    path(TOPIC + "delete/", topics.topic_delete, name="topic-delete"),
    path(TOPIC + "acls/", acl_views.topic_acls, name="topic-acls"),
    # Messages
    path(TOPIC + "messages/", messages.topic_messages, name="topic-messages"),
    path(TOPIC + "consumers/", topics.topic_consumers_part, name="topic-consumers"),
    path(PARTITION, messages.browse, name="messages-browse"),
    path(PARTITION + "offsets/<int64:offset>/", messages.detail, name="message-detail"),
    path(TOPIC + "find-key/", messages.find_key, name="topic-find-key"),
    path(TOPIC + "search/", messages.search, name="topic-search"),
    path(TOPIC + "tail/", messages.tail, name="topic-tail"),
    path(TOPIC + "produce/", messages.produce, name="topic-produce"),
    path(TOPIC + "move/", transfer_views.move_page, name="topic-move"),
    path(TOPIC + "schema/", messages.upload_schema, name="topic-schema"),
    # Disks: log dirs, segment files, batches, indexes
    path(CLUSTER + "disks/", disks.logdirs_page, name="disks"),
    path(BROKER + "logdirs/", disks.logdirs_page, name="broker-logdirs"),
    path(CLUSTER + "brokers/configs/", broker_config_views.cluster_page, name="cluster-broker-configs"),
    path(BROKER + "configs/", broker_config_views.broker_page, name="broker-configs"),
    path(REPLICA + "segments/", disks.segments_page, name="segments"),
    path(REPLICA + "producers/", disks.producers_page, name="replica-producers"),
    path(REPLICA + "offsets/<int64:offset>/", disks.replica_offset, name="replica-offset"),
    path(PARTITION + "offsets/<int64:offset>/on-disk/", disks.on_disk, name="message-on-disk"),
    path(SEGMENT, disks.segment_page, name="segment"),
    path(SEGMENT + "batches/<int64:position>/", disks.batch_page, name="segment-batch"),
    path(SEGMENT + "index/", disks.index_page, {"kind": "index"}, name="segment-index"),
    path(SEGMENT + "timeindex/", disks.index_page, {"kind": "timeindex"}, name="segment-timeindex"),
    # Consumer groups
    path(CLUSTER + "groups/", groups.group_list, name="group-list"),
    path(CLUSTER + "groups-report.<str:fmt>", groups.export, name="group-export"),
    path(GROUP + "reset/", groups.reset, name="group-reset"),
    path(GROUP + "delete/", groups.delete_group, name="group-delete"),
    path(GROUP + "delete-offsets/", groups.delete_offsets, name="group-delete-offsets"),
    path(GROUP, groups.group_detail, name="group-detail"),
    path("metrics", groups.metrics, name="metrics"),
    # Transactions
    path(CLUSTER + "transactions/", transaction_views.transaction_list, name="transaction-list"),
    path(CLUSTER + "transactions/hanging/", transaction_views.hanging_page, name="transaction-hanging"),
    path(PARTITION + "producers/", transaction_views.producers_page, name="transaction-producers"),
    # Analytics
    path(CLUSTER + "analytics/", analytics.analytics_home, name="analytics-home"),
    path(CLUSTER + "analytics/live/", analytics.live_page, name="analytics-live"),
    path(CLUSTER + "analytics/sql/", sql_views.sql_page, name="analytics-sql"),
    path(
        CLUSTER + "analytics/sql/queries/<int64:query_id>/delete/",
        sql_views.saved_query_delete,
        name="analytics-sql-delete",
    ),
    path(CLUSTER + "analytics/jobs/<int64:job_id>/", analytics.job_page, name="analytics-job"),
    path(CLUSTER + "analytics/jobs/<int64:job_id>/cancel/", analytics.job_cancel, name="analytics-job-cancel"),
    path(
        CLUSTER + "analytics/jobs/<int64:job_id>/result.<str:fmt>",
        analytics.job_download,
        name="analytics-job-download",
    ),
    path(TOPIC + "analytics/<str:report>/", analytics.quick_job, name="topic-quick-job"),
    path(CLUSTER + "groups-lag-report/", analytics.lag_report_job, name="group-lag-report"),
    # Kafka Connect
    path(CLUSTER + "connectors/", connect_views.connector_list, name="connector-list"),
    path(CLUSTER + "connectors-new/", connect_views.connector_new, name="connector-new"),
    path(CLUSTER + "connect-plugins/", connect_views.plugins_page, name="connector-plugins"),
    path(CONNECTOR, connect_views.connector_detail, name="connector-detail"),
    path(CONNECTOR + "action/", connect_views.connector_action, name="connector-action"),
    path(f"api/{CLUSTER}connectors/", connect_views.api_connectors, name="api-connectors"),
    path(f"api/{CLUSTER}connect-plugins/", connect_views.api_plugins, name="api-connect-plugins"),
    path(
        f"api/{CLUSTER}connect-plugins/<str:connect_name>/<str:plugin>/config/",
        connect_views.api_plugin_config,
        name="api-connect-plugin-config",
    ),
    path(f"api/{CLUSTER}connect-validate/<str:connect_name>/", connect_views.api_validate, name="api-connect-validate"),
    path(f"api/{CONNECTOR}", connect_views.api_connector, name="api-connector"),
    path(f"api/{CONNECTOR}status/", connect_views.api_status, name="api-connector-status"),
    path(f"api/{CONNECTOR}config/", connect_views.api_config, name="api-connector-config"),
    path(f"api/{CONNECTOR}offsets/", connect_views.api_offsets, name="api-connector-offsets"),
    path(
        f"api/{CONNECTOR}tasks/<int32:task>/restart/", connect_views.api_restart_task, name="api-connector-task-restart"
    ),
    path(f"api/{CONNECTOR}<str:action>/", connect_views.api_action, name="api-connector-action"),
    # Schema registry
    path(CLUSTER + "schemas/", schema_views.schema_list, name="schema-list"),
    path(CLUSTER + "schema-config/", schema_views.global_config, name="schema-config"),
    path(SUBJECT + "diff/", schema_views.subject_diff, name="schema-diff"),
    path(SUBJECT + "check/", schema_views.subject_check, name="schema-check"),
    path(SUBJECT + "action/", schema_views.subject_action, name="schema-action"),
    path(SUBJECT, schema_views.subject_page, name="schema-subject"),
    path(f"api/{CLUSTER}schemas/", schema_views.api_schemas, name="api-schemas"),
    path(f"api/{CLUSTER}schema-config/", schema_views.api_compatibility, name="api-schema-config"),
    path(f"api/{SUBJECT}compatibility/", schema_views.api_compatibility, name="api-schema-compatibility"),
    path(f"api/{SUBJECT}check/", schema_views.api_check, name="api-schema-check"),
    path(f"api/{SUBJECT}versions/<str:version>/", schema_views.api_version, name="api-schema-version"),
    path(f"api/{SUBJECT}", schema_views.api_subject, name="api-schema-subject"),
    # JSON API
    path("api/clusters/", cluster_views.api_clusters, name="api-clusters"),
    path("api/alerts/channels/", alert_views.api_channels, name="api-alert-channels"),
    path("api/alerts/channels/<int:channel>/", alert_views.api_channel_delete, name="api-alert-channel"),
    path("api/alerts/channels/<int:channel>/test/", alert_views.api_channel_test, name="api-alert-channel-test"),
    path(f"api/{CLUSTER}alerts/", alert_views.api_alerts, name="api-alerts"),
    path(CLUSTER + "alerts/", alert_views.alerts_page, name="alerts"),
    path(CLUSTER + "alerts/firing/", alert_views.alerts_part, name="alerts-firing"),
    path(f"api/{CLUSTER}alerts/rules/", alert_views.api_rules, name="api-alert-rules"),
    path(f"api/{CLUSTER}alerts/silences/", alert_views.api_silences, name="api-alert-silences"),
    path(f"api/{CLUSTER}alerts/silences/<int:silence>/", alert_views.api_silence_delete, name="api-alert-silence"),
    path(f"api/{CLUSTER}alerts/ack/", alert_views.api_ack, name="api-alert-ack"),
    path(f"api/{CLUSTER}alerts/prometheus.yml", alert_views.api_prometheus_rules, name="api-alert-prometheus"),
    path(f"api/{CLUSTER}alerts/rules/<int:rule>/", alert_views.api_rule_delete, name="api-alert-rule"),
    path(f"api/{CLUSTER}", cluster_views.api_cluster, name="api-cluster"),
    path(f"api/{CLUSTER}quorum/", cluster_views.api_quorum, name="api-quorum"),
    path(f"api/{CLUSTER}replication/", cluster_views.api_replication, name="api-replication"),
    path(f"api/{CLUSTER}events/", cluster_views.api_events, name="api-events"),
    # Before the stop/start pattern, which would take "configs" for an action.
    path(f"api/{CLUSTER}brokers/configs/", broker_config_views.api_cluster, name="api-cluster-broker-configs"),
    path(f"api/{BROKER}configs/", broker_config_views.api_broker, name="api-broker-configs"),
    path(f"api/{BROKER}stop/", cluster_views.api_broker_stop_start, {"action": "stop"}, name="api-broker-stop"),
    path(f"api/{BROKER}start/", cluster_views.api_broker_stop_start, {"action": "start"}, name="api-broker-start"),
    path(f"api/{CLUSTER}reassignments/", reassign.api_progress, name="api-reassignments"),
    path(f"api/{CLUSTER}reassignments/generate/", reassign.api_generate, name="api-reassign-generate"),
    path(f"api/{CLUSTER}reassignments/execute/", reassign.api_execute, name="api-reassign-execute"),
    path(f"api/{CLUSTER}reassignments/verify/", reassign.api_verify, name="api-reassign-verify"),
    path(f"api/{CLUSTER}reassignments/cancel/", reassign.api_cancel, name="api-reassign-cancel"),
    path(f"api/{CLUSTER}elections/", reassign.api_elect, name="api-elect"),
    path(f"api/{CLUSTER}quotas/", quota_views.api_quotas, name="api-quotas"),
    path(f"api/{CLUSTER}acls/", acl_views.api_acls, name="api-acls"),
    path(f"api/{CLUSTER}acls/principals/<path:principal>/", acl_views.api_principal, name="api-acl-principal"),
    path(f"api/{CLUSTER}users/", acl_views.api_users, name="api-scram-users"),
    path(f"api/{CLUSTER}users/<str:name>/", acl_views.api_user, name="api-scram-user"),
    path(f"api/{CLUSTER}topics/", topics.api_topic_list, name="api-topic-list"),
    path(f"api/{TOPIC}", topics.api_topic_detail, name="api-topic-detail"),
    path(f"api/{TOPIC}delete/", topics.api_topic_delete, name="api-topic-delete"),
    path(f"api/{TOPIC}partitions/", topics.api_topic_add_partitions, name="api-topic-add-partitions"),
    path(f"api/{TOPIC}configs/", topics.api_topic_configs, name="api-topic-configs"),
    path(f"api/{TOPIC}delete-records/", topics.api_topic_delete_records, name="api-topic-delete-records"),
    path(f"api/{TOPIC}produce/", messages.api_produce, name="api-produce"),
    path(f"api/{TOPIC}copy/", transfer_views.api_copy, name="api-topic-copy"),
    path(f"api/{TOPIC}export/", transfer_views.api_export, name="api-topic-export"),
    path(f"api/{TOPIC}import/", transfer_views.api_import, name="api-topic-import"),
    path(f"api/{TOPIC}dead-letters/", transfer_views.api_dead_letters, name="api-topic-dead-letters"),
    path(f"api/{TOPIC}redrive/", transfer_views.api_redrive, name="api-topic-redrive"),
    path("api/tasks/<int:task>/", transfer_views.api_task, name="api-task"),
    path(TOPIC + "tasks/<int:task>/", transfer_views.task_page, name="task-page"),
    path("api/tasks/<int:task>/cancel/", transfer_views.api_task_cancel, name="api-task-cancel"),
    path("api/tasks/<int:task>/resume/", transfer_views.api_task_resume, name="api-task-resume"),
    path(f"api/{TOPIC}find-key/", messages.api_find_key, name="api-find-key"),
    path(f"api/{TOPIC}search/", messages.api_search, name="api-search"),
    path(f"api/{TOPIC}messages/", messages.api_topic_messages, name="api-topic-messages"),
    path(f"api/{PARTITION}messages", messages.api_messages, name="api-messages"),
    path(f"api/{PARTITION}messages/", messages.api_messages),
    path(f"api/{PARTITION}messages/<int64:offset>", messages.api_message, name="api-message"),
    path(f"api/{BROKER}logdirs/", disks.logdirs_api, name="api-logdirs"),
    path(f"api/{REPLICA}segments/", disks.segments_api, name="api-segments"),
    path(f"api/{REPLICA}producers/", disks.producers_api, name="api-replica-producers"),
    path(f"api/{SEGMENT}batches", disks.batches_api, name="api-segment-batches"),
    path(f"api/{SEGMENT}batches/<int64:position>/records", disks.records_api, name="api-segment-records"),
    path(f"api/{SEGMENT}index", disks.index_api, {"kind": "index"}, name="api-segment-index"),
    path(f"api/{SEGMENT}timeindex", disks.index_api, {"kind": "timeindex"}, name="api-segment-timeindex"),
    path(f"api/{CLUSTER}groups/", groups.api_group_list, name="api-group-list"),
    path(f"api/{GROUP}reset/", groups.api_group_reset, name="api-group-reset"),
    path(f"api/{GROUP}delete/", groups.api_group_delete, name="api-group-delete"),
    path(f"api/{GROUP}delete-offsets/", groups.api_group_delete_offsets, name="api-group-delete-offsets"),
    path(f"api/{GROUP}", groups.api_group_detail, name="api-group-detail"),
    path(f"api/{CLUSTER}transactions/", transaction_views.api_transactions, name="api-transactions"),
    path(f"api/{CLUSTER}transactions/hanging/", transaction_views.api_hanging, name="api-transactions-hanging"),
    path(f"api/{CLUSTER}transactions/abort/", transaction_views.api_abort, name="api-transactions-abort"),
    path(f"api/{PARTITION}producers/", transaction_views.api_producers, name="api-partition-producers"),
    path(f"api/{CLUSTER}jobs/", analytics.api_jobs, name="api-jobs"),
    path(f"api/{CLUSTER}analytics/live/", analytics.api_live, name="api-live"),
    path(f"api/{CLUSTER}analytics/sql/tables/", sql_views.api_tables, name="api-sql-tables"),
    path(f"api/{CLUSTER}analytics/sql/queries/", sql_views.api_saved_queries, name="api-sql-queries"),
    path(f"api/{CLUSTER}analytics/sql/queries/<int64:query_id>/", sql_views.api_saved_query, name="api-sql-query"),
    path("api/jobs/<int64:job_id>/", analytics.api_job, name="api-job"),
    path("api/jobs/<int64:job_id>/cancel/", analytics.api_job_cancel, name="api-job-cancel"),
    path("api/jobs/<int64:job_id>/result/", analytics.api_job_result, name="api-job-result"),
    path("api/audit/", access.audit_api, name="api-audit"),
    path("api/grants/", grant_views.api_grants, name="api-grants"),
    path("api/grants/<int:grant>/", grant_views.api_grant, name="api-grant"),
    path("healthz", cluster_views.health, name="health"),
]

handler400 = "console.errors.handler400"
handler404 = "console.errors.handler404"
handler500 = "console.errors.handler500"
