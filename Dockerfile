# chatd: a static binary on a distroless, non-root base.
#
#   docker build -t chatd .
#   docker run -p 8080:8080 -v chatd-data:/data chatd
#
# The database (SQLite by default) lives in the /data volume; set CHATD_DB
# to a postgres:// URL to use PostgreSQL instead (see compose.yaml).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION}" -o /out/chatd ./cmd/chatd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/chatd /usr/local/bin/chatd
# distroless "nonroot" is uid/gid 65532; the volume is created owned by it.
USER 65532:65532
WORKDIR /data
VOLUME /data
ENV CHATD_ADDR=0.0.0.0:8080 \
    CHATD_DB=/data/chatd.db
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/chatd"]
CMD ["serve"]
