"""Clients that follow jobs while their coordinators die, and the record of what each saw.

A client acts as a user of a durable job should: it takes a job as accepted once it has its id
(Submit's reply, Generate's first event, a streamed chat chunk naming the job), and from then on
follows the job until its `finished` event, reconnecting after any break with the count of
events it has (gRPC Watch with "last-event-id" metadata; GET /v1/jobs/{id}/events with
Last-Event-ID). Generate's client stays on the job's holder; Watch's and the HTTP events'
clients start on another coordinator, which relays the holder's events. Any coordinator of the
store may answer: one that is down or restarting (UNAVAILABLE, 503 or a refused connection), or
one that answers UNAVAILABLE naming the holder instead of relaying, sends the client to the
next after a short pause. A request refused before its id came is sent again, as a new job. A
streamed chat through the gateway has no resume: once its job is named, a broken stream leaves
the job to finish on its own, which the run checks from the store. Import it after putting this
folder on sys.path; every RPC opens a fresh channel, so that a coordinator restarted on its port
is dialled at once instead of after gRPC's reconnect backoff.
"""

import http.client
import json
import time
import urllib.error
import urllib.request

import grpc
from google.protobuf import json_format

from job_runs import sse_messages

FOLLOW_SECONDS = 180  # How long a client keeps trying to reach its job before giving up.
PAUSE = 0.1           # Between attempts: a coordinator restarts in about a second.
CALL_TIMEOUT = 120
# What a dying or restarting coordinator's connection ends with on the HTTP side.
HTTP_BREAKS = (urllib.error.URLError, ConnectionError, http.client.HTTPException, OSError)


class Seen:
    """What one client saw of one job: the request it sent (`kind`, pool `key`), the job id once
    acknowledged, the events in the order received (gRPC GenerateEvents; over HTTP with their
    ids in `ids`) and when each came, a chat's streamed text when its stream ran to the end, the
    times its stream broke and came back, and why it gave up, if it did."""

    def __init__(self, role, key):
        self.role = role
        self.key = key
        self.job_id = None
        self.events = []
        self.times = []  # When each event came (monotonic).
        self.ids = []
        self.text = None
        self.breaks = []  # [monotonic time of the break, of the next event or None]
        self.error = None

    def broke(self):
        if self.job_id and (not self.breaks or self.breaks[-1][1] is not None):
            self.breaks.append([time.monotonic(), None])

    def got(self, event, event_id=None):
        now = time.monotonic()
        if self.breaks and self.breaks[-1][1] is None:
            self.breaks[-1][1] = now
        self.events.append(event)
        self.times.append(now)
        if event_id is not None:
            self.ids.append(event_id)


class ChaosClients:
    """Clients of the coordinators at gRPC `addresses` and HTTP `bases` (one of each per
    coordinator slot, the same order), and of the smg `gateway` when there is one."""

    def __init__(self, pb, rpc, addresses, bases, gateway=None):
        self.pb = pb
        self.rpc = rpc
        self.addresses = list(addresses)
        self.bases = list(bases)
        self.gateway = gateway

    def call(self, i, method, request):
        """Unary `method` of the coordinator of slot i % slots, on a fresh channel."""
        with grpc.insecure_channel(self.addresses[i % len(self.addresses)]) as channel:
            return getattr(self.rpc.GenerationStub(channel), method)(request,
                                                                      timeout=CALL_TIMEOUT)

    def submit(self, request, start):
        """Submits `request`, trying each coordinator in turn from slot `start` while they are
        UNAVAILABLE; returns (job id, the slot that took it)."""
        deadline = time.monotonic() + FOLLOW_SECONDS
        i = start
        while True:
            try:
                return self.call(i, "Submit", request).job_id, i
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
            i += 1
            time.sleep(PAUSE)

    def _stream(self, seen, i, method, request, metadata=()):
        """Reads a streaming call into `seen`; True once its `finished` event came, False when
        the stream broke or ended early (UNAVAILABLE: the coordinator is down or does not hold
        the job); other errors are raised."""
        with grpc.insecure_channel(self.addresses[i % len(self.addresses)]) as channel:
            call = getattr(self.rpc.GenerationStub(channel), method)(
                request, timeout=CALL_TIMEOUT, metadata=metadata)
            try:
                for event in call:
                    seen.job_id = seen.job_id or event.job_id
                    seen.got(event)
                    if event.HasField("finished"):
                        return True
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
        return False

    def follow(self, seen, start):
        """Watch from the event after the ones `seen` has, reconnecting from slot `start` on."""
        deadline = time.monotonic() + FOLLOW_SECONDS
        i = start
        while time.monotonic() < deadline:
            ref = self.pb.JobRef(job_id=seen.job_id)
            if self._stream(seen, i, "Watch", ref,
                            metadata=[("last-event-id", str(len(seen.events)))]):
                return
            seen.broke()
            i += 1
            time.sleep(PAUSE)
        seen.error = f"job {seen.job_id}: no finished event within {FOLLOW_SECONDS} s"

    def generate(self, seen, request, start):
        """Generate, and after a break, Watch. Before the first event the job is not accepted:
        it is sent again to the next coordinator."""
        deadline = time.monotonic() + FOLLOW_SECONDS
        i = start
        while seen.job_id is None and time.monotonic() < deadline:
            if self._stream(seen, i, "Generate", request):
                return
            i += 1
            time.sleep(PAUSE)
        if seen.job_id is None:
            seen.error = f"Generate: no coordinator accepted the job within {FOLLOW_SECONDS} s"
            return
        seen.broke()
        self.follow(seen, i)

    def watch(self, seen, request, start):
        """Submit, then Watch from the next coordinator, which does not hold the job: it
        relays the holder's events (or answers UNAVAILABLE, and the client moves on)."""
        seen.job_id, i = self.submit(request, start)
        self.follow(seen, i + 1)

    def sse(self, seen, request, start):
        """Submit over gRPC, then follow GET /v1/jobs/{id}/events over HTTP, from the next
        coordinator as watch() does."""
        seen.job_id, i = self.submit(request, start)
        i += 1
        deadline = time.monotonic() + FOLLOW_SECONDS
        while time.monotonic() < deadline:
            url = f"{self.bases[i % len(self.bases)]}/v1/jobs/{seen.job_id}/events"
            headers = {"Last-Event-ID": str(seen.ids[-1])} if seen.ids else {}
            try:
                with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                            timeout=CALL_TIMEOUT) as response:
                    for message in sse_messages(response):
                        event = json_format.Parse(message["data"], self.pb.GenerateEvent())
                        seen.got(event, int(message["id"]))
                        if event.HasField("finished"):
                            return
            except urllib.error.HTTPError as e:
                if e.code != 503:  # 503: down, or another coordinator holds the job.
                    seen.error = f"job {seen.job_id}: {url} answered {e.code}: {e.read()!r}"
                    return
            except HTTP_BREAKS:
                pass
            seen.broke()
            i += 1
            time.sleep(PAUSE)
        seen.error = f"job {seen.job_id}: no finished event within {FOLLOW_SECONDS} s"

    def chat(self, seen, body, base=None):
        """A streamed chat completion through the gateway (or the coordinator at HTTP `base`);
        sent again until its job is named."""
        deadline = time.monotonic() + FOLLOW_SECONDS
        data = json.dumps({**body, "stream": True}).encode()
        url = (base or self.gateway) + "/v1/chat/completions"
        while seen.job_id is None and time.monotonic() < deadline:
            request = urllib.request.Request(url, data=data,
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=CALL_TIMEOUT) as response:
                    if self._read_chat(seen, response):
                        return
            except urllib.error.HTTPError as e:
                if e.code < 500:
                    seen.error = f"chat answered {e.code}: {e.read()!r}"
                    return
            except HTTP_BREAKS:
                pass
            time.sleep(PAUSE)
        seen.broke()  # Accepted, then cut off: the job goes on without this client.

    @staticmethod
    def _read_chat(seen, response):
        """Reads a streamed chat into `seen`: True when it ran to its end. A gateway whose
        backend died mid-stream sends an error event and then [DONE]: only a stream whose
        choice finished has ended."""
        text, finished = "", False
        for message in sse_messages(response):
            if message.get("data") == "[DONE]":
                if finished:
                    seen.text = text
                return finished
            chunk = json.loads(message["data"])
            if "error" in chunk:
                return False
            for choice in chunk.get("choices", []):
                seen.job_id = seen.job_id or (choice.get("arbor") or {}).get("job_id")
                text += (choice.get("delta") or {}).get("content") or ""
                finished = finished or bool(choice.get("finish_reason"))
        return False
