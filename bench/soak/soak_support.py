"""What the soak scripts share: hand-encoded protobuf (no generated stubs needed, only grpcio),
a minimal decoder for the few answers they read, and process memory."""

import random


def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, value):
    """One field: an int as a varint, bytes as length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def decode(data):
    """{field number: [values]} of a message's varint and length-delimited fields."""
    fields, i = {}, 0
    while i < len(data):
        key, i = _read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _read_varint(data, i)
        elif wire == 2:
            size, i = _read_varint(data, i)
            value, i = data[i:i + size], i + size
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def _read_varint(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def generate_request(seed, prompt="text", words=100, max_tokens=16, deadline_ms=0):
    """A GenerateRequest: text (field 1) of fresh random words or tokens (3) of random ids,
    max_tokens (4), seed (5), deadline_ms (9)."""
    rng = random.Random(seed)
    if prompt == "text":
        letters = "abcdefghijklmnopqrstuvwxyz"
        text = " ".join("".join(rng.choice(letters) for _ in range(rng.randrange(3, 9)))
                        for _ in range(words)).encode()
        body = field(1, text)
    else:
        ids = b"".join(varint(rng.randrange(1, 500)) for _ in range(words))
        body = field(3, field(1, ids))
    body += field(4, max_tokens) + field(5, seed)
    if deadline_ms:
        body += field(9, deadline_ms)
    return body


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return float("nan")
