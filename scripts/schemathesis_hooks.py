"""Schemathesis hooks for docket's description (scripts/schemathesis.sh).

The upload forms declare the document part as any of the formats docket
reads; Schemathesis has no serializer for the binary ones, so they are sent
as the raw bytes (or text) it generated, which is what a client sends.
"""
import schemathesis

MEDIA = ("application/pdf", "image/png", "image/jpeg", "image/tiff", "text/csv", "text/html")


@schemathesis.serializer(*MEDIA)
def raw_bytes(ctx, value):
    if isinstance(value, bytes):
        return value
    if value is None:
        return b""
    return str(value).encode("utf-8", "surrogatepass")
