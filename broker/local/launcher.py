"""Start, stop and inspect the embedded cluster: Apache Kafka brokers with ZooKeeper, or in KRaft mode.

The brokers, controllers and ZooKeeper are plain JVM processes started from the jars of the Kafka
release the cluster runs (broker/local/versions.py: 3.9.1 from ``broker/local/jars/`` by default, a 4.x
release from ``broker/local/jars-<version>/``, copied by Maven). Each process runs in its own session so
it outlives the command that started it; its pid is kept in the data folder, so every later command
finds it again. This module holds the commands; the configuration files are written by configs.py,
the processes are started, stopped and probed by jvm.py, ZooKeeper mode's view of the cluster is in
zkview.py, KRaft's own steps (cluster id, storage format, the quorum's view) in kraft.py, the secure
listener's users in secure.py, the ports and layout in layout.py, the releases and their jars in
versions.py.

Layout of the data folder (``var/cluster/`` by default)::

    cluster.json              what was started: Kafka version, mode, ports, node ids, pids (layout.py)
    config/server-N.properties, config/log4j.properties (Kafka 3) or config/log4j2.properties (Kafka 4)
    config/zookeeper.properties, zookeeper/     ZooKeeper mode: ZooKeeper's configuration and data
    kafka-logs-N/             node N's log.dirs (in KRaft also its metadata log, formatted at the first `up`)
    logs/<process>.out and logs/<process>/server.log   (processes: zookeeper, broker-N, controller-N)

KRaft mode (``up --kraft``; always for Kafka 4) has no ZooKeeper: by default each broker is a
controller too (combined mode, three processes); ``--controllers N`` runs the quorum in N processes of
their own (node ids 100, 101, ...). Controllers listen on ``base port + 100 + i``.

With a secure listener (``up(..., sasl_ssl_port_offset=100)``, ``up --sasl-ssl``) each broker also
listens for SASL_SSL clients on its port + the offset (brokers still talk to each other in
PLAINTEXT), and the folder holds::

    certs/                    a throwaway CA, the broker's and a client's certificate (broker/local/certs.py)
    secrets.json              the generated SASL users and passwords, readable by the owner only
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from broker.local import kraft
from broker.local.configs import (
    broker_properties,
    controller_properties,
    log4j2_properties,
    log4j_properties,
    secure_listener_properties,
    write_configs,
    zookeeper_properties,
)
from broker.local.jvm import (
    BROKER_HEAP,
    CONTROLLER_HEAP,
    ZOOKEEPER_HEAP,
    broker_answers,
    check_java,
    pid_alive,
    port_in_use,
    port_open,
    zookeeper_serving,
)
from broker.local.jvm import java_major as _java_major
from broker.local.jvm import spawn as _spawn
from broker.local.jvm import stop_pid as _stop_pid
from broker.local.jvm import wait as _wait
from broker.local.layout import (
    ClusterLayout,
    LauncherError,
    free_controller_port_offset,
)
from broker.local.secure import (
    DEFAULT_SASL_SSL_OFFSET,
    PLAIN_USER,
    SASL_MECHANISMS,
    SCRAM_USER,
    SaslUser,
    SecureListener,
    create_scram_credentials,
    ensure_sasl_users,
    grant_secure_users,
    secure_listener,
    secure_listener_accepts,
)
from broker.local.versions import DEFAULT_KAFKA4_VERSION, DEFAULT_VERSION, release
from broker.local.zkview import clear_stale_registrations as _clear_stale_registrations
from broker.local.zkview import registered_brokers, registrations

__all__ = [  # what callers and tests use from here, wherever it lives now
    "DEFAULT_KAFKA4_VERSION",
    "DEFAULT_SASL_SSL_OFFSET",
    "DEFAULT_VERSION",
    "PLAIN_USER",
    "SASL_MECHANISMS",
    "SCRAM_USER",
    "ClusterLayout",
    "LauncherError",
    "SaslUser",
    "SecureListener",
    "_java_major",
    "broker_answers",
    "broker_properties",
    "check_java",
    "controller_properties",
    "ensure_sasl_users",
    "log4j2_properties",
    "log4j_properties",
    "pid_alive",
    "port_in_use",
    "port_open",
    "registered_brokers",
    "secure_listener",
    "secure_listener_properties",
    "write_configs",
    "zookeeper_properties",
    "zookeeper_serving",
]

HERE = Path(__file__).resolve().parent
JARS = release().jars  # the default release's jars (tools and benchmarks run Kafka's own tools from them)
REPO_ROOT = HERE.parent.parent
DEFAULT_DATA = REPO_ROOT / "var" / "cluster"


# ---------------------------------------------------------------- jars


def jars_ready(version: str | None = None) -> bool:
    return release(version).ready()


def fetch_jars(echo: Callable[[str], None] = print, version: str | None = None) -> None:
    """Copy a Kafka release's jars (default 3.9.1) from Maven Central into its folder once; later calls do
    nothing. Raises MavenError."""
    release(version).fetch(echo)


def classpath(version: str | None = None) -> str:
    return release(version).classpath


# ---------------------------------------------------------------- commands


def _resolve_layout(
    data: str | Path | None,
    brokers: int,
    zookeeper_port: int,
    base_port: int,
    sasl_ssl_port_offset: int | None,
    kafka_version: str | None = None,
    kraft: bool = False,
    controllers: int = 0,
) -> tuple[ClusterLayout, ClusterLayout]:
    """(the layout to use: the one saved in ``data``, else the one asked for; the one asked for)."""
    root = str(Path(data or DEFAULT_DATA).resolve())
    chosen = release(kafka_version)
    # Kafka 4 has no ZooKeeper mode, and separate controllers only exist in KRaft mode.
    kraft = kraft or not chosen.has_zookeeper or controllers > 0
    asked = ClusterLayout(
        data=root,
        brokers=brokers,
        zookeeper_port=zookeeper_port,
        base_port=base_port,
        sasl_ssl_port_offset=sasl_ssl_port_offset,
        kafka_version=chosen.version,
        kraft=kraft,
        controllers=controllers if kraft else 0,
        controller_port_offset=free_controller_port_offset(sasl_ssl_port_offset, brokers, controllers),
    )
    return ClusterLayout.load(root) or asked, asked


def describe(layout: ClusterLayout) -> str:
    """In words: how many brokers (and controllers) of which Kafka, in which mode, on which ports."""
    where = f"on ports {layout.base_port}+"
    if not layout.kraft:
        return f"{layout.brokers} brokers {where} (ZooKeeper {layout.zookeeper_port}), Kafka {layout.kafka_version}"
    controllers = f"controllers on {layout.controller_port(layout.controller_ids[0])}+"
    nodes = (
        f"{layout.brokers} broker+controller nodes"
        if layout.combined
        else f"{layout.brokers} brokers and {layout.controllers} controllers"
    )
    return f"{nodes} {where} ({controllers}), Kafka {layout.kafka_version} in KRaft mode"


def up(
    data: str | Path | None = None,
    brokers: int = 3,
    zookeeper_port: int = 2181,
    base_port: int = 9092,
    echo: Callable[[str], None] = print,
    timeout: float = 180,
    sasl_ssl_port_offset: int | None = None,
    kafka_version: str | None = None,
    kraft: bool = False,
    controllers: int = 0,
) -> ClusterLayout:
    """Start every process of the cluster that is not already running and wait until it is whole.

    ZooKeeper mode (Kafka 3.x, the default): ZooKeeper, then the brokers, until all are registered and a
    controller is elected. KRaft mode (``kraft``, any Kafka 4 ``kafka_version``, or ``controllers`` > 0):
    each node's storage is formatted once, then every node starts, until each broker is registered and
    unfenced and the quorum has a leader; ``controllers`` > 0 runs that many controllers on their own,
    else each broker is a controller too. With ``sasl_ssl_port_offset``, each broker also gets a
    SASL_SSL listener on its port + the offset, with generated certificates and users, and ``up``
    waits until that listener accepts them. A data folder keeps the cluster it was first started with.
    Returns the layout; raises LauncherError (MavenError when the jars cannot be fetched)."""
    layout, asked = _resolve_layout(
        data, brokers, zookeeper_port, base_port, sasl_ssl_port_offset, kafka_version, kraft, controllers
    )
    if describe(layout) != describe(asked):
        echo(f"Note: {layout.data} already holds a cluster of {describe(layout)}; using it as it is.")
    elif layout.sasl_ssl_port_offset != sasl_ssl_port_offset:
        has = "a" if layout.secure else "no"
        echo(f"Note: {layout.data} already holds a cluster with {has} SASL_SSL listener; using it as it is.")
    if layout.sasl_ssl_port_offset is not None and layout.sasl_ssl_port_offset < layout.brokers:
        raise LauncherError(
            f"The SASL_SSL port offset ({layout.sasl_ssl_port_offset}) must be at least the number of brokers "
            f"({layout.brokers}), or the ports of two brokers' listeners would be the same."
        )
    check_java()
    layout.release.fetch(echo)
    started = _up_kraft(layout, echo, timeout) if layout.kraft else _up_zookeeper(layout, echo, timeout)
    if not started:
        return layout
    if layout.secure:
        listener = secure_listener(layout)
        create_scram_credentials(layout, list(listener.users))
        grant_secure_users(layout, list(listener.users))
        _wait(
            lambda: secure_listener_accepts(layout, listener),
            60,
            "the SASL_SSL listeners to accept the generated users",
            layout,
        )
    _echo_started(layout, echo)
    return layout


def _up_zookeeper(layout: ClusterLayout, echo: Callable[[str], None], timeout: float) -> bool:
    """Start ZooKeeper and the brokers that are not running; False when all were up already."""
    zk_alive = pid_alive(layout.pids.get("zookeeper"))
    brokers_alive = {b: pid_alive(layout.pids.get(f"broker-{b}")) for b in layout.broker_ids}
    if zk_alive and all(brokers_alive.values()):
        ids, controller = registered_brokers(layout)
        if ids >= set(layout.broker_ids) and controller is not None:
            echo(f"The cluster in {layout.data} is already up: nothing to do.")
            return False

    # Ports we are about to bind must be free (ours are running, so they are skipped).
    wanted = [] if zk_alive else [layout.zookeeper_port]
    wanted += [port for b, alive in brokers_alive.items() if not alive for port in _node_ports(layout, b)]
    _check_ports_free(wanted)

    write_configs(layout)
    config = layout.root / "config"
    if not zk_alive:
        layout.pids["zookeeper"] = _spawn(
            layout,
            "zookeeper",
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            config / "zookeeper.properties",
            ZOOKEEPER_HEAP,
        )
        layout.save()
        _wait(
            lambda: zookeeper_serving(layout.zookeeper_port), 60, f"ZooKeeper on port {layout.zookeeper_port}", layout
        )
        echo(f"ZooKeeper    127.0.0.1:{layout.zookeeper_port}  pid {layout.pids['zookeeper']}")
    starting = [b for b, alive in brokers_alive.items() if not alive]
    _clear_stale_registrations(layout, starting)
    started_at = time.time() - 1.0
    for b in starting:
        layout.pids[f"broker-{b}"] = _spawn(
            layout, f"broker-{b}", "kafka.Kafka", config / f"server-{b}.properties", BROKER_HEAP
        )
        layout.save()
    _wait(
        lambda: _all_registered(layout, starting, started_at),
        timeout,
        "every broker to register and a controller to be elected",
        layout,
    )
    return True


def _up_kraft(layout: ClusterLayout, echo: Callable[[str], None], timeout: float) -> bool:
    """Format what is not formatted and start the nodes that are not running; False when all were up already."""
    alive = {name: pid_alive(layout.pids.get(name)) for name in layout.process_names}
    if all(alive.values()) and _kraft_whole(layout):
        echo(f"The cluster in {layout.data} is already up: nothing to do.")
        return False
    starting = [name for name, up in alive.items() if not up]
    _check_ports_free([port for name in starting for port in _node_ports(layout, _node_id(name))])
    if layout.cluster_id is None:
        layout.cluster_id = kraft.new_cluster_id()
        layout.save()
    write_configs(layout)
    kraft.format_storage(layout, check_java(), [*layout.separate_controller_ids, *layout.broker_ids])
    config = layout.root / "config"
    for name in starting:  # separate controllers first: the brokers need them to register
        node_id = _node_id(name)
        heap = CONTROLLER_HEAP if name.startswith("controller-") else BROKER_HEAP
        layout.pids[name] = _spawn(layout, name, "kafka.Kafka", config / f"server-{node_id}.properties", heap)
        layout.save()
    _wait(
        lambda: _kraft_whole(layout, check_alive=True),
        timeout,
        "every broker to register with the controllers and the quorum to elect a leader",
        layout,
    )
    return True


def _node_id(process_name: str) -> int:
    return int(process_name.rsplit("-", 1)[1])


def _node_ports(layout: ClusterLayout, node_id: int) -> list[int]:
    """The ports node ``node_id`` binds: a broker's client listeners, a controller's controller listener."""
    ports = []
    if node_id in layout.broker_ids:
        ports.append(layout.broker_port(node_id))
        if layout.secure:
            ports.append(layout.sasl_ssl_port(node_id))
    if node_id in layout.controller_ids:
        ports.append(layout.controller_port(node_id))
    return ports


def _check_ports_free(ports: list[int]) -> None:
    for port in ports:
        if port_in_use(port):
            raise LauncherError(
                f"Port {port} on 127.0.0.1 is already in use by another program; stop it or choose other "
                f"ports (--zookeeper-port, --base-port, with a new --data folder)."
            )


def _kraft_whole(layout: ClusterLayout, check_alive: bool = False) -> bool:
    """Every broker answers, is registered and unfenced, and the quorum has a leader. With ``check_alive``,
    raises LauncherError when a process of the cluster has exited (it will not come back by waiting)."""
    if check_alive:
        for name in layout.process_names:
            if not pid_alive(layout.pids.get(name)):
                raise LauncherError(f"{name} exited during start; see {layout.root / 'logs' / name}.")
    if not all(broker_answers(layout.broker_port(b)) for b in layout.broker_ids):
        return False
    view = kraft.quorum_view(layout)
    return view is not None and view.brokers >= set(layout.broker_ids) and view.leader is not None


def _echo_started(layout: ClusterLayout, echo: Callable[[str], None]) -> None:
    for n in layout.separate_controller_ids:
        name = layout.process_name(n, True)
        echo(f"Controller {n} 127.0.0.1:{layout.controller_port(n)}  pid {layout.pids[name]}")
    for b in layout.broker_ids:
        also = f"  (controller on :{layout.controller_port(b)})" if layout.combined else ""
        echo(f"Broker {b}     127.0.0.1:{layout.broker_port(b)}  pid {layout.pids[f'broker-{b}']}{also}")
    if layout.kraft:
        view = kraft.quorum_view(layout)
        echo(f"Controller   node {view.leader if view else None} (quorum leader)")
        echo(f"KRaft        Kafka {layout.kafka_version}, cluster id {layout.cluster_id}, no ZooKeeper")
    else:
        _, controller = registered_brokers(layout)
        echo(f"Controller   broker {controller}")
    if layout.secure:
        _echo_secure(layout, echo)
    echo(f"Data and logs in {layout.data}")


def _echo_secure(layout: ClusterLayout, echo: Callable[[str], None]) -> None:
    """Where the secure listener is and where its secrets are, never the secrets themselves."""
    listener = secure_listener(layout)
    echo(f"SASL_SSL     {layout.sasl_ssl_bootstrap_servers}  (client certificate required, inter-broker PLAINTEXT)")
    for user in listener.users:
        echo(f"  user {user.name}: {', '.join(user.mechanisms)}")
    echo(f"  CA {listener.ca}, client {listener.client_cert} + {listener.client_key.name}")
    echo(f"  passwords in {listener.secrets} (readable by you only); `python -m broker.local secure-env` prints")
    echo("  the console's KAFKA_* settings for it")


def _all_registered(layout: ClusterLayout, starting: list[int], started_at: float) -> bool:
    """Every broker registered (those just started, by a registration newer than their start)."""
    for b in layout.broker_ids:
        if not pid_alive(layout.pids.get(f"broker-{b}")):
            raise LauncherError(f"Broker {b} exited during start; see {layout.root / 'logs' / f'broker-{b}'}.")
    found, controller = registrations(layout)
    fresh = all(b in found and found[b] >= started_at for b in starting)
    registered = fresh and set(found) >= set(layout.broker_ids) and controller is not None
    if not (registered and all(broker_answers(layout.broker_port(b)) for b in layout.broker_ids)):
        return False
    return metadata_lists_every_broker(layout)


def metadata_lists_every_broker(layout: ClusterLayout) -> bool:
    """True when the cluster's metadata lists every broker: the controller has taken them all in, so a
    topic can be created with their full replication factor (registration alone is not enough)."""
    from kafka import KafkaAdminClient

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=layout.bootstrap_servers.split(","), bootstrap_timeout_ms=3000, request_timeout_ms=3000
        )
    except Exception:  # noqa: BLE001 - not ready yet; asked again
        return False
    try:
        seen = {b["broker_id"] for b in admin.describe_cluster()["brokers"]}
    except Exception:  # noqa: BLE001 - not ready yet; asked again
        return False
    finally:
        admin.close()
    return seen >= set(layout.broker_ids)


def _require_layout(data: str | Path | None) -> ClusterLayout:
    layout = ClusterLayout.load(Path(data or DEFAULT_DATA).resolve())
    if layout is None:
        raise LauncherError(f"No cluster in {Path(data or DEFAULT_DATA)}: start one with `python -m broker.local up`.")
    return layout


def status(data: str | Path | None = None) -> dict[str, object]:
    """What runs now: ZooKeeper (None on KRaft), each broker (address, pid, alive, registered), on KRaft
    each controller, and the controller (on KRaft the quorum's leader)."""
    layout = _require_layout(data)
    if layout.kraft:
        view = kraft.quorum_view(layout)
        ids, controller = (set(view.brokers), view.leader) if view else (set(), None)
        zookeeper: dict[str, object] | None = None
    else:
        ids, controller = registered_brokers(layout)
        zk_pid = layout.pids.get("zookeeper")
        zookeeper = {"address": layout.zookeeper_connect, "pid": zk_pid, "alive": pid_alive(zk_pid)}
    found: dict[str, object] = {
        "data": layout.data,
        "kafka_version": layout.kafka_version,
        "mode": layout.mode,
        "zookeeper": zookeeper,
        "bootstrap_servers": layout.bootstrap_servers,
        "brokers": [
            {
                "id": b,
                "address": f"127.0.0.1:{layout.broker_port(b)}",
                "pid": layout.pids.get(f"broker-{b}"),
                "alive": pid_alive(layout.pids.get(f"broker-{b}")),
                "registered": b in ids,
            }
            for b in layout.broker_ids
        ],
        "controller": controller,
    }
    if layout.kraft:
        found["cluster_id"] = layout.cluster_id
        found["controllers"] = [
            {
                "id": n,
                "address": f"127.0.0.1:{layout.controller_port(n)}",
                "pid": layout.pids.get(layout.process_name(n, not layout.combined)),
                "alive": pid_alive(layout.pids.get(layout.process_name(n, not layout.combined))),
                "broker": layout.combined,
            }
            for n in layout.controller_ids
        ]
    from broker.local import connect, registry

    found["connect"] = connect.status(layout.data)
    found["registry"] = registry.status(layout.data)
    if layout.secure:
        certs = layout.certs
        found["sasl_ssl"] = {
            "bootstrap_servers": layout.sasl_ssl_bootstrap_servers,
            "ca": str(certs.ca),
            "client_cert": str(certs.client_cert),
            "client_key": str(certs.client_key),
            "secrets": str(layout.secrets_path),
        }
    return found


def secure_env(data: str | Path | None = None, mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
    """The console's environment variables for the cluster's SASL_SSL listener with ``mechanism``'s user,
    password included (for ``eval "$(python -m broker.local secure-env)"``). Raises LauncherError."""
    layout = _require_layout(data)
    listener = secure_listener(layout)
    user = listener.user_for(mechanism)
    return {
        "KAFKA_BOOTSTRAP_SERVERS": layout.sasl_ssl_bootstrap_servers,
        "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "KAFKA_SASL_MECHANISM": mechanism,
        "KAFKA_SASL_USERNAME": user.name,
        "KAFKA_SASL_PASSWORD": user.password,
        "KAFKA_SSL_CAFILE": str(listener.ca),
        "KAFKA_SSL_CERTFILE": str(listener.client_cert),
        "KAFKA_SSL_KEYFILE": str(listener.client_key),
        "ZOOKEEPER_CONNECT": layout.zookeeper_connect,  # empty on KRaft: no ZooKeeper
    }


def _check_broker_id(layout: ClusterLayout, broker_id: int) -> None:
    if broker_id not in layout.broker_ids:
        raise LauncherError(f"No broker {broker_id}: this cluster has brokers {layout.broker_ids}.")


def stop_broker(
    broker_id: int, data: str | Path | None = None, echo: Callable[[str], None] = print, kill: bool = False
) -> None:
    """Stop one broker (a clean, controlled shutdown; killed after 60 s) and wait until it is gone. In
    combined KRaft mode that node's controller stops with it. ``kill``: SIGKILL at once, as a crash (the
    cluster notices only when the broker's session expires; its logs are recovered at the next start)."""
    layout = _require_layout(data)
    _check_broker_id(layout, broker_id)
    pid = layout.pids.get(f"broker-{broker_id}")
    if not pid_alive(pid):
        echo(f"Broker {broker_id} is not running.")
        return
    _stop_pid(pid, timeout=0 if kill else 60)
    how = "killed" if kill else "stopped"
    echo(f"Broker {broker_id} {how}{' (and its controller)' if layout.combined else ''}.")


def start_broker(
    broker_id: int, data: str | Path | None = None, echo: Callable[[str], None] = print, timeout: float = 120
) -> None:
    """Start one broker again and wait until it is registered (in ZooKeeper, or with the KRaft quorum and
    unfenced)."""
    layout = _require_layout(data)
    _check_broker_id(layout, broker_id)
    name = f"broker-{broker_id}"
    if pid_alive(layout.pids.get(name)):
        echo(f"Broker {broker_id} is already running.")
        return
    if not layout.kraft and not pid_alive(layout.pids.get("zookeeper")):
        raise LauncherError("ZooKeeper is not running: start the whole cluster with `python -m broker.local up`.")
    for taken in _node_ports(layout, broker_id):
        if port_in_use(taken):
            raise LauncherError(f"Port {taken} on 127.0.0.1 is already in use by another program.")
    write_configs(layout)
    if not layout.kraft:
        _clear_stale_registrations(layout, [broker_id])
    started_at = time.time() - 1.0
    layout.pids[name] = _spawn(
        layout, name, "kafka.Kafka", layout.root / "config" / f"server-{broker_id}.properties", BROKER_HEAP
    )
    layout.save()
    if layout.kraft:
        _wait(lambda: _kraft_whole(layout), timeout, f"broker {broker_id} to register and be unfenced", layout)
    else:
        _wait(
            lambda: _all_registered(layout, [broker_id], started_at),
            timeout,
            f"broker {broker_id} to register",
            layout,
        )
    echo(f"Broker {broker_id} started on 127.0.0.1:{layout.broker_port(broker_id)}.")


def _check_controller_id(layout: ClusterLayout, node_id: int) -> None:
    if node_id in layout.separate_controller_ids:
        return
    if not layout.kraft:
        raise LauncherError(f"The cluster in {layout.data} runs in ZooKeeper mode: it has no KRaft controllers.")
    if layout.combined:
        raise LauncherError(
            f"The cluster in {layout.data} has no separate controllers: each broker is a controller too "
            "(stop-broker N / start-broker N stop and start both)."
        )
    raise LauncherError(f"No controller {node_id}: this cluster's controllers are {layout.separate_controller_ids}.")


def stop_controller(node_id: int, data: str | Path | None = None, echo: Callable[[str], None] = print) -> None:
    """Stop one separate KRaft controller and wait until it is gone (the quorum elects another leader
    while a majority runs)."""
    layout = _require_layout(data)
    _check_controller_id(layout, node_id)
    pid = layout.pids.get(layout.process_name(node_id, True))
    if not pid_alive(pid):
        echo(f"Controller {node_id} is not running.")
        return
    _stop_pid(pid, timeout=30)
    echo(f"Controller {node_id} stopped.")


def start_controller(
    node_id: int, data: str | Path | None = None, echo: Callable[[str], None] = print, timeout: float = 120
) -> None:
    """Start one separate KRaft controller again and wait until the cluster is whole (every broker
    registered, a quorum leader)."""
    layout = _require_layout(data)
    _check_controller_id(layout, node_id)
    name = layout.process_name(node_id, True)
    if pid_alive(layout.pids.get(name)):
        echo(f"Controller {node_id} is already running.")
        return
    _check_ports_free(_node_ports(layout, node_id))
    write_configs(layout)
    started_ms = int(time.time() * 1000)
    layout.pids[name] = _spawn(
        layout, name, "kafka.Kafka", layout.root / "config" / f"server-{node_id}.properties", CONTROLLER_HEAP
    )
    layout.save()

    def rejoined() -> bool:
        if not pid_alive(layout.pids.get(name)):
            raise LauncherError(f"Controller {node_id} exited during start; see {layout.root / 'logs' / name}.")
        view = kraft.quorum_view(layout)
        return view is not None and view.leader is not None and view.caught_up.get(node_id, -1) >= started_ms

    _wait(rejoined, timeout, f"controller {node_id} to catch up with the quorum leader", layout)
    echo(f"Controller {node_id} started on 127.0.0.1:{layout.controller_port(node_id)}.")


def down(data: str | Path | None = None, echo: Callable[[str], None] = print) -> None:
    """Stop every broker, then the separate controllers or ZooKeeper. Data stays in the data folder for the
    next `up`."""
    layout = ClusterLayout.load(Path(data or DEFAULT_DATA).resolve())
    if layout is None:
        echo("No cluster to stop.")
        return
    from broker.local import connect, registry

    stopped_registry = registry.stop(layout.data, echo)  # needs no Kafka, but belongs to this cluster's `up`
    stopped_connect = connect.stop(layout.data, echo)  # before the brokers it needs to shut down cleanly
    running = [b for b in layout.broker_ids if pid_alive(layout.pids.get(f"broker-{b}"))]
    # All brokers get SIGTERM at once; the last ones skip the leader hand-over that has nowhere to go.
    _stop_together(layout, [f"broker-{b}" for b in running], echo)
    # Separate controllers after the brokers: a broker's controlled shutdown asks the active controller.
    controllers = [
        n for n in layout.separate_controller_ids if pid_alive(layout.pids.get(layout.process_name(n, True)))
    ]
    _stop_together(layout, [layout.process_name(n, True) for n in controllers], echo)
    zookeeper_running = pid_alive(layout.pids.get("zookeeper"))
    if zookeeper_running:
        _stop_pid(layout.pids.get("zookeeper"), timeout=15)
        echo("ZooKeeper stopped.")
    if not running and not controllers and not zookeeper_running and not stopped_connect and not stopped_registry:
        echo("Nothing was running.")
    echo(f"Data kept in {layout.data}.")


# How long combined KRaft nodes may go on trying a controlled shutdown once too few controllers are left
# to elect a leader: none can be granted then, and a broker waits for it up to five minutes.
QUORUM_LOST_GRACE = 3.0


def _stop_together(layout: ClusterLayout, names: list[str], echo: Callable[[str], None], timeout: float = 30) -> None:
    """SIGTERM every process in ``names`` at once and wait until all are gone (killed after ``timeout``).

    In combined KRaft mode a node's controller stops when its broker has finished, so the last brokers
    can be left asking for a controlled shutdown that a quorum without a majority can never grant: they
    are killed ``QUORUM_LOST_GRACE`` seconds after the majority is gone (their logs are recovered at the
    next start, as after a crash). Separate controllers are stopped after the brokers and never meet this."""
    pids = {name: layout.pids[name] for name in names}
    for pid in pids.values():
        os.kill(pid, signal.SIGTERM)
    majority = len(layout.controller_ids) // 2 + 1
    deadline = time.monotonic() + timeout
    lost_at: float | None = None
    left = list(names)
    while left:
        still = [name for name in left if pid_alive(pids[name])]
        for name in left:
            if name not in still:
                echo(f"{name.replace('-', ' ').capitalize()} stopped.")
        left = still
        now = time.monotonic()
        if layout.combined and lost_at is None and 0 < len(left) < majority:
            alive_voters = [n for n in layout.controller_ids if pid_alive(layout.pids.get(layout.process_name(n)))]
            if len(alive_voters) < majority:
                lost_at = now
        if left and (now > deadline or (lost_at is not None and now - lost_at > QUORUM_LOST_GRACE)):
            for name in left:
                os.kill(pids[name], signal.SIGKILL)
                why = "no controller quorum left to grant its controlled shutdown" if lost_at else "timed out"
                echo(f"{name.replace('-', ' ').capitalize()} killed ({why}; its logs are recovered at the next start).")
            for name in left:
                while pid_alive(pids[name]):
                    time.sleep(0.05)
            return
        time.sleep(0.1)


def _require_zookeeper_mode(layout: ClusterLayout) -> None:
    if layout.kraft:
        raise LauncherError(f"The cluster in {layout.data} runs in KRaft mode: it has no ZooKeeper.")


def stop_zookeeper(data: str | Path | None = None, echo: Callable[[str], None] = print) -> None:
    """Stop ZooKeeper alone and wait until it is gone. The brokers keep running and serve clients from
    the metadata they hold; what needs ZooKeeper (new topics, leader elections) waits until it is back."""
    layout = _require_layout(data)
    _require_zookeeper_mode(layout)
    pid = layout.pids.get("zookeeper")
    if not pid_alive(pid):
        echo("ZooKeeper is not running.")
        return
    _stop_pid(pid, timeout=15)
    echo("ZooKeeper stopped.")


def start_zookeeper(data: str | Path | None = None, echo: Callable[[str], None] = print, timeout: float = 60) -> None:
    """Start ZooKeeper again and wait until it serves, every running broker is registered in it and a
    controller is elected (a broker whose session expired meanwhile registers anew)."""
    layout = _require_layout(data)
    _require_zookeeper_mode(layout)
    if pid_alive(layout.pids.get("zookeeper")):
        echo("ZooKeeper is already running.")
        return
    if port_in_use(layout.zookeeper_port):
        raise LauncherError(f"Port {layout.zookeeper_port} on 127.0.0.1 is already in use by another program.")
    layout.pids["zookeeper"] = _spawn(
        layout,
        "zookeeper",
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        layout.root / "config" / "zookeeper.properties",
        ZOOKEEPER_HEAP,
    )
    layout.save()
    _wait(
        lambda: zookeeper_serving(layout.zookeeper_port), timeout, f"ZooKeeper on port {layout.zookeeper_port}", layout
    )
    running = {b for b in layout.broker_ids if pid_alive(layout.pids.get(f"broker-{b}"))}

    def registered() -> bool:
        ids, controller = registered_brokers(layout)
        return ids >= running and controller is not None

    _wait(registered, timeout, "the running brokers to register in ZooKeeper again", layout)
    echo(f"ZooKeeper started on 127.0.0.1:{layout.zookeeper_port}; brokers {sorted(running)} are registered.")
