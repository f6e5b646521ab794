# Console image for docker-compose.yml: Django + Channels served by Daphne on port 8888.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Front-end libraries (htmx, chart.js) are served from node_modules/*/dist. Node.js is only
# needed for `npm ci`, so it is removed again in the same layer to keep the image small.
COPY package.json package-lock.json ./
RUN apt-get update \
    && apt-get install -y --no-install-recommends nodejs npm \
    && npm ci --omit=dev --no-audit --no-fund \
    && npm cache clean --force \
    && apt-get purge -y --auto-remove nodejs npm \
    && rm -rf /var/lib/apt/lists/*

COPY . .
RUN pip install .

# Analytics jobs: PySpark drives Spark from this container, which needs Java, and Spark's Kafka
# connector jars (analytics/pom.xml), fetched once with Maven; Maven is removed again after.
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless maven \
    && python -m analytics fetch-jars \
    && rm -rf /root/.m2 \
    && apt-get purge -y --auto-remove maven \
    && rm -rf /var/lib/apt/lists/*

# Run unprivileged; var/ is where the console may write (e.g. collected static files).
RUN useradd --system --uid 10001 --home-dir /app --no-create-home kazami \
    && mkdir -p /app/var \
    && chown kazami /app/var
USER kazami

EXPOSE 8888
CMD ["sh", "-c", "python manage.py migrate --noinput && exec python -m console.serve --host 0.0.0.0 --port 8888"]
