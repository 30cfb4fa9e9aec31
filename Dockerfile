# syntax=docker/dockerfile:1
#
# itemgraph's container image: `itemgraph serve` for the long-lived deployment (ECS,
# Kubernetes, any VM), subscriptions included (each replica reads the table's stream).
#
#   docker build -t itemgraph .
#   docker run -p 8080:8080 -e ITEMGRAPH_TABLE=itemgraph -e AWS_REGION=eu-west-1 \
#     -e ITEMGRAPH_JWT_SECRET=… -e ITEMGRAPH_CURSOR_SECRET=… itemgraph
#
# Configuration comes from ITEMGRAPH_* environment variables only (docs/CONFIGURATION.md);
# AWS credentials from the usual chain (the task's or pod's role). tests/cli/image.rs runs
# what this image runs: the same binary, command, environment and health check.

# --- build: the server binary, from the committed Cargo.lock -------------------------------
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --package itemgraph --bin itemgraph \
    && cp target/release/itemgraph /usr/local/bin/itemgraph

# --- run: glibc and nothing else, as an unprivileged user ----------------------------------
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /usr/local/bin/itemgraph /usr/local/bin/itemgraph
ENV ITEMGRAPH_LISTEN=0.0.0.0:8080 \
    ITEMGRAPH_STORE=dynamodb \
    ITEMGRAPH_SEED=none \
    ITEMGRAPH_METRICS_LISTEN=0.0.0.0:9090
EXPOSE 8080 9090
# distroless's `nonroot` user, by number so that Kubernetes can check runAsNonRoot.
USER 65532:65532
# Liveness: `itemgraph health` asks this container's own server for GET /healthz (the
# base image has no curl). Load balancers should use GET /readyz, which checks the table.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/itemgraph", "health"]
# SIGTERM: the server stops accepting connections, finishes in-flight requests and closes
# WebSockets (1001), within ITEMGRAPH_SHUTDOWN_TIMEOUT.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/itemgraph"]
CMD ["serve"]
