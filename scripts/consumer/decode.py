#!/usr/bin/env python3
"""Decode docket's event log outside Go, from the schema files alone.

Reads records as kcat prints them with
    kcat -C -e -q -f '%p %o %K %S %h\n%k%s'
(a text line with partition, offset, key length, value length and headers,
then the raw key and value bytes) on stdin, and writes one JSON line per
record: partition, offset, key, the docket-type header, the record name of
the writer schema and the decoded record. Byte values are written as base64
and timestamps as microseconds since the epoch, so the output compares
exactly with what the Go codec wrote.

Only schemas/*.avsc and schemas/history/*.avsc are used: the event files
refer to the shared records Meta and LineItem by name, so they are inlined
at their first use (as the Parsing Canonical Form does) before the
fingerprint is computed. Values are Avro single-object encoded (C3 01 +
8-byte little-endian CRC-64-AVRO fingerprint + body).
"""
import base64
import datetime
import glob
import io
import json
import os
import sys

import fastavro
from fastavro.schema import fingerprint, to_parsing_canonical_form

NAMESPACE = "docket.events"
SHARED = ("Meta", "LineItem")
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def inline(node, shared, seen):
    """Replace the first reference to each shared record by its definition."""
    if isinstance(node, str):
        name = node if "." in node else NAMESPACE + "." + node
        short = name.rsplit(".", 1)[1]
        if name.startswith(NAMESPACE + ".") and short in shared and short not in seen:
            seen.add(short)
            return inline(shared[short], shared, seen)
        return node
    if isinstance(node, list):
        return [inline(n, shared, seen) for n in node]
    if isinstance(node, dict):
        return {k: (inline(v, shared, seen) if k in ("type", "items", "fields", "values") else v)
                for k, v in node.items()}
    return node


def load_schemas(directory):
    """Map of 8-byte fingerprint (as in the value header) to parsed schema."""
    out = {}
    sets = [(directory, ""), (os.path.join(directory, "history"), ".v*")]
    for d, suffix in sets:
        shared = {}
        for s in SHARED:
            files = sorted(glob.glob(os.path.join(d, s + suffix + ".avsc")))
            with open(files[-1]) as f:  # the newest version of the record
                shared[s] = json.load(f)
        for path in glob.glob(os.path.join(d, "*.avsc")):
            name = os.path.basename(path).split(".")[0]
            if name in SHARED:
                continue
            with open(path) as f:
                schema = inline(json.load(f), shared, set())
            parsed = fastavro.parse_schema(schema, _write_hint=False)
            fp = fingerprint(to_parsing_canonical_form(parsed), "CRC-64-AVRO")
            # fastavro's hex string is the fingerprint's little-endian
            # bytes, the order of the value header.
            out[bytes.fromhex(fp)] = (name, parsed)
    return out


def plain(v):
    """JSON-able form: bytes as base64, datetimes as epoch microseconds."""
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode()
    if isinstance(v, datetime.datetime):
        return (v - EPOCH) // datetime.timedelta(microseconds=1)
    return v


def records(stream):
    """Yield (partition, offset, key, value, headers) from kcat's output."""
    while True:
        line = stream.readline()
        if not line:
            return
        if line == b"\n":
            continue
        part, off, klen, vlen, *hdr = line.rstrip(b"\n").decode().split(" ", 4)
        klen, vlen = int(klen), int(vlen)
        key = stream.read(klen) if klen > 0 else b""
        value = stream.read(vlen) if vlen > 0 else b""
        headers = dict(h.split("=", 1) for h in (hdr[0].split(",") if hdr and hdr[0] else []))
        yield int(part), int(off), key, value, headers


def main():
    schemas = load_schemas(sys.argv[1])
    n = 0
    for part, off, key, value, headers in records(sys.stdin.buffer):
        if value[:2] != b"\xc3\x01":
            sys.exit(f"{part}/{off}: not single-object encoded: {value[:2].hex()}")
        name, schema = schemas[value[2:10]]
        rec = fastavro.schemaless_reader(io.BytesIO(value[10:]), schema, None)
        print(json.dumps({"partition": part, "offset": off, "key": key.decode(), "type_header": headers.get("docket-type"),
                          "type": name, "record": plain(rec)}, sort_keys=True))
        n += 1
    print(f"decoded {n} records", file=sys.stderr)


if __name__ == "__main__":
    main()
