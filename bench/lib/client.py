"""Writers and readers over keep-alive loopback HTTP connections (http.client)."""
import email.utils
import http.client
import json
import queue
import threading
import time
import urllib.parse

WRITE_PATH = "/api/v2/write?precision=ns"
MAX_RETRY_AFTER_S = 30.0


def retry_after_seconds(value, default):
    """Retry-After as delay-seconds or an HTTP date; `default` when absent or unreadable."""
    if not value:
        return default
    try:
        return min(MAX_RETRY_AFTER_S, max(0.0, float(value)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
        return min(MAX_RETRY_AFTER_S, max(0.0, when - time.time()))
    except (TypeError, ValueError):
        return default


def bodies(lines, per=5000):
    """Line-protocol request bodies of at most `per` lines each, from any iterable of lines (a generator
    keeps only the bodies in memory)."""
    out, buf = [], []
    for line in lines:
        buf.append(line)
        if len(buf) == per:
            out.append(("\n".join(buf) + "\n").encode())
            buf = []
    if buf:
        out.append(("\n".join(buf) + "\n").encode())
    return out


def retry_wait(resp, backoff, stats, lock):
    """Sleeps out a 429/503 answer (its Retry-After, else `backoff`), counts it in `stats` ("retries",
    "retry_wait_s") under `lock`, and returns the next backoff."""
    wait = retry_after_seconds(resp.getheader("Retry-After"), backoff)
    with lock:
        stats["retries"] += 1
        stats["retry_wait_s"] += wait
    time.sleep(wait)
    return min(2.0, backoff * 2)


class WriteError(Exception):
    pass


def ingest(port, batches, writers=2, path=WRITE_PATH, max_attempts=100, timeout=300,
           content_type="text/plain; charset=utf-8"):
    """Send every batch once, `writers` threads each on its own keep-alive connection, taking batches from
    a shared queue in order. 429/503 are retried after Retry-After (or a backoff from 50 ms doubling to 2 s).
    Returns a dict: first_send / last_ack (time.monotonic), retries, retry_wait_s, reconnects, bytes."""
    work = queue.Queue()
    for i, b in enumerate(batches):
        work.put((i, b))
    lock = threading.Lock()
    stats = {"first_send": None, "last_ack": None, "retries": 0, "retry_wait_s": 0.0, "reconnects": 0,
             "bytes": sum(len(b) for b in batches), "statuses": {}}
    errors = []
    start = threading.Barrier(writers)
    headers = {"Content-Type": content_type}

    def writer():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        start.wait()
        try:
            while not errors:
                try:
                    _, body = work.get_nowait()
                except queue.Empty:
                    return
                backoff = 0.05
                for attempt in range(max_attempts):
                    sent = time.monotonic()
                    with lock:
                        if stats["first_send"] is None or sent < stats["first_send"]:
                            stats["first_send"] = sent
                    try:
                        conn.request("POST", path, body=body, headers=headers)
                        r = conn.getresponse()
                        text = r.read()
                    except (http.client.HTTPException, ConnectionError, TimeoutError) as e:
                        conn.close()
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
                        with lock:
                            stats["reconnects"] += 1
                        if attempt + 1 == max_attempts:
                            raise WriteError(f"write failed after {max_attempts} attempts: {e!r}")
                        time.sleep(backoff)
                        backoff = min(2.0, backoff * 2)
                        continue
                    acked = time.monotonic()
                    with lock:
                        stats["statuses"][r.status] = stats["statuses"].get(r.status, 0) + 1
                    if r.status in (200, 204):
                        with lock:
                            if stats["last_ack"] is None or acked > stats["last_ack"]:
                                stats["last_ack"] = acked
                        break
                    if r.status in (429, 503):
                        backoff = retry_wait(r, backoff, stats, lock)
                        continue
                    raise WriteError(f"write answered {r.status}: {text[:300]!r}")
                else:
                    raise WriteError(f"write still refused after {max_attempts} attempts")
        except Exception as e:  # reported to the caller, which fails the run
            errors.append(e)
        finally:
            conn.close()

    threads = [threading.Thread(target=writer, name=f"writer-{i}") for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    stats["retry_wait_s"] = round(stats["retry_wait_s"], 3)
    return stats


def get_json(port, path, params, timeout=60):
    """GET path?params; returns (status, parsed JSON or None, raw text on parse failure)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path + "?" + urllib.parse.urlencode(params, doseq=True))
        r = conn.getresponse()
        raw = r.read()
    finally:
        conn.close()
    try:
        return r.status, json.loads(raw), None
    except ValueError:
        return r.status, None, raw[:300].decode(errors="replace")


def time_range_reads(port, query, start, end, step, reps, warmup=5, timeout=60):
    """Time `reps` query_range requests on one keep-alive connection. Each repetition moves start and end
    by a different few milliseconds so no result cache can answer it. Returns (latencies in ms to the last
    byte, points returned by the first answer, response bytes, error text or None, latencies in ms to the
    response headers, server-side evaluation times in ms from the `Server-Timing` header where the server
    sends one)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    lat, ttfb, server, points, size, err = [], [], [], None, None, None
    try:
        for i in range(warmup + reps):
            off = (i % 9 + 1) / 1000.0  # 1..9 ms
            qs = urllib.parse.urlencode({"query": query, "start": f"{start + off:.3f}",
                                         "end": f"{end + off:.3f}", "step": step})
            t = time.perf_counter()
            conn.request("GET", "/api/v1/query_range?" + qs)
            r = conn.getresponse()
            t_head = time.perf_counter()
            timing = r.getheader("Server-Timing") or ""
            body = r.read()
            dt = (time.perf_counter() - t) * 1000.0
            if r.status != 200:
                return lat, points, size, f"query_range answered {r.status}: {body[:300]!r}", ttfb, server
            if points is None:
                size = len(body)
                try:
                    res = json.loads(body)["data"]["result"]
                    points = sum(len(s.get("values", [])) for s in res)
                    if len(res) != 1:
                        err = f"expected 1 series, got {len(res)}"
                except (ValueError, KeyError, TypeError) as e:
                    err = f"unreadable query_range answer: {e!r}"
            if i >= warmup:
                lat.append(dt)
                ttfb.append((t_head - t) * 1000.0)
                dur = [p.split("=", 1)[1] for p in timing.replace(",", ";").split(";") if p.strip().startswith("dur=")]
                if dur:
                    server.append(float(dur[0]))
    except (http.client.HTTPException, OSError) as e:
        err = f"query_range failed: {e!r}"
    finally:
        conn.close()
    return lat, points, size, err, ttfb, server
