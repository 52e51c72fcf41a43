# Builds the one docket binary into a small image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /docket ./cmd/docket

FROM gcr.io/distroless/static-debian12
COPY --from=build /docket /docket
ENTRYPOINT ["/docket"]
