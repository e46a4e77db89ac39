"""A scheduler asking a running ``cotune serve`` over HTTP (standard library only).

    cotune serve --port 8000 &          # pip install 'cotune[serve]'
    python examples/scheduler_http.py http://127.0.0.1:8000
"""

import json
import sys
import urllib.error
import urllib.request

url = (sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000") + "/v1/recommend"
request = {"profile": "cifar10-resnet18", "target": 0.94, "deadline_s": 1800, "max_workers": 16, "prices": {"t4": 0.526}}
# X-Request-ID: the scheduler's own id for this job's question; the answer (and the service's
# log line, should cotune fail) carries it, so the two sides' logs can be matched.
headers = {"Content-Type": "application/json", "X-Request-ID": "example-job-1"}
req = urllib.request.Request(url, data=json.dumps(request).encode(), headers=headers)
try:
    with urllib.request.urlopen(req, timeout=60) as resp:
        answer = json.load(resp)
        request_id = resp.headers["X-Request-ID"]
except urllib.error.HTTPError as exc:  # 4xx: the error document says which field and why
    error = json.load(exc)["error"]
    raise SystemExit(f"{exc.code} {error['code']} at {error['path']}: {error['message']} "
                     f"(request {exc.headers['X-Request-ID']})")
plan = answer["plan"]
print(answer["status"], f"{plan['workers']} x {plan['gpu']}, local batch {plan['local_batch']}, "
      f"elastic {plan['elastic']['min_workers']}..{plan['elastic']['max_workers']} (request {request_id})")
