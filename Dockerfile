# Builds the one docket binary into a small image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /docket ./cmd/docket

# Debian slim rather than distroless: workers run Tesseract (scans) and
# poppler (PDF fallback, rasterising textless pages) as external programs.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng poppler-utils ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /docket /docket
ENTRYPOINT ["/docket"]
