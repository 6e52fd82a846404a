# The image manifests/deployment.yaml runs: `docker build -t REGISTRY/promoter:TAG .`
# (see docs/kubernetes.md). Slim Python, git for the mirrors (Debian's: 2.39 or newer; the promoter
# needs 2.38), a non-root user.
FROM python:3.12-slim

RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml README.md ./
COPY promoter ./promoter
COPY scm_plugins ./scm_plugins
COPY webhooks ./webhooks
RUN pip install --no-cache-dir . && rm -rf /src

RUN groupadd --gid 10001 promoter \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp promoter
USER 10001:10001
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /var/lib/promoter
EXPOSE 8080
ENTRYPOINT ["promoter"]
CMD ["serve", "--kubernetes", "--host", "0.0.0.0"]
