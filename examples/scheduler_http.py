"""A scheduler asking a running ``cotune serve`` over HTTP (standard library only).

    cotune serve --port 8000 &          # pip install 'cotune[serve]'
    python examples/scheduler_http.py http://127.0.0.1:8000 [TARGET]

TARGET (default 0.94) is the top-1 accuracy to reach in 30 minutes; one no plan reaches
(0.999) shows the answer that says what to relax.
"""

import json
import sys
import urllib.error
import urllib.request

url = (sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000") + "/v1/recommend"
target = float(sys.argv[2]) if len(sys.argv) > 2 else 0.94
request = {"profile": "cifar10-resnet18", "target": target, "deadline_s": 1800, "max_workers": 16, "prices": {"t4": 0.526}}
# X-Request-ID: the scheduler's own id for this job's question; the answer (and the service's
# log line, should cotune fail) carries it, so the two sides' logs can be matched.
headers = {"Content-Type": "application/json", "X-Request-ID": "example-job-1"}
req = urllib.request.Request(url, data=json.dumps(request).encode(), headers=headers)
try:
    with urllib.request.urlopen(req, timeout=60) as resp:
        answer = json.load(resp)
        request_id = resp.headers["X-Request-ID"]
except urllib.error.HTTPError as exc:
    text = exc.read().decode("utf-8", "replace")
    try:  # cotune's 4xx/5xx: an error document says which field and why
        error = json.loads(text)["error"]
        why = f"{error['code']} at {error['path']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        # Not cotune's document: the HTTP server's own plain-text answer (503 past its
        # connection limit, 400 for a malformed request) or a proxy's page.
        why = " ".join(text.split())[:200] or exc.reason
    retry = exc.headers.get("Retry-After")
    raise SystemExit(f"{exc.code} {why}" + (f" (retry after {retry} s)" if retry else "")
                     + f" (request {exc.headers.get('X-Request-ID', 'unknown')})")
except urllib.error.URLError as exc:  # nothing listening, a name that does not resolve
    raise SystemExit(f"cannot reach {url}: {exc.reason}")
if answer["status"] != "ok":  # infeasible: no plan, and 'relax' says what to change
    raise SystemExit(f"cannot meet it: {'; '.join(answer['relax'])} (request {request_id})")
plan = answer["plan"]
print(answer["status"], f"{plan['workers']} x {plan['gpu']}, local batch {plan['local_batch']}, "
      f"elastic {plan['elastic']['min_workers']}..{plan['elastic']['max_workers']} (request {request_id})")
