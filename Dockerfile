# syntax=docker/dockerfile:1

# ---- build stage: a static binary --------------------------------------------
FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
# Dependencies first, so source edits do not invalidate the module cache layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -ldflags="-s -w" -o /seckill .

# ---- runtime stage: small, non-root -------------------------------------------
FROM alpine:3.21
# ca-certificates for TLS to managed databases, tzdata for loc=Local and zoned
# times; busybox wget (part of alpine) serves the health checks.
RUN apk add --no-cache ca-certificates tzdata \
    && addgroup -S -g 10001 seckill \
    && adduser -S -D -H -u 10001 -G seckill -h /app seckill \
    && mkdir -p /app/data \
    && chown -R seckill:seckill /app
WORKDIR /app
COPY --from=build /seckill /seckill
# The schema also ships beside the binary for operators (`seckill migrate`).
COPY --from=build /src/sql /app/sql
USER seckill:seckill
# The image starts in production: it needs SECKILL_MYSQL_DSN, a real Redis
# (SECKILL_REDIS_ADDR, or the Sentinel or Cluster settings) and a
# SECKILL_JWT_SECRET of at least 32 bytes (`openssl rand -hex 32`), and
# without them it stops at once with one line naming what is missing. To try
# the product in a container on embedded backends, ask for development:
# `docker run -e SECKILL_ENV=development -p 127.0.0.1:8080:8080 seckill:local`.
ENV SECKILL_ENV=production SECKILL_HTTP_ADDR=:8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD wget -q -O /dev/null http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/seckill"]
CMD ["serve"]
