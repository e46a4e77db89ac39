"""A scheduler sizing a job with cotune in-process: plain data in, plain data out.

    PYTHONPATH=. python examples/scheduler_python.py
"""

from cotune import recommend_request
from cotune.k8s import JobOptions, render_manifests, to_yaml

answer = recommend_request({
    "profile": {"example": "cifar10-resnet18"},  # or {"records": [...]} sent by the job's owner
    "target": 0.94,
    "deadline_s": 1800,
    "max_workers": 16,
    "prices": {"t4": 0.526},
})
if answer["status"] != "ok":
    raise SystemExit("cannot meet it: " + "; ".join(answer["relax"]))
plan = answer["plan"]
print(f"run {plan['workers']} x {plan['gpu']} on {plan['hosts']} host(s), local batch {plan['local_batch']}, "
      f"may resize within {plan['elastic']['min_workers']}..{plan['elastic']['max_workers']} workers")
print(to_yaml(render_manifests(answer, JobOptions(name="cifar10", image="ghcr.io/me/train:1", gang="kueue"))))
