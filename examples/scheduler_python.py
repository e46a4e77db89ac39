"""A scheduler sizing a job with cotune in-process: plain data in, plain data out; then
re-planning it when it runs out of memory, and rendering the switch as a new submission.

    PYTHONPATH=. python examples/scheduler_python.py
"""

import json

from cotune import recommend_request
from cotune.api import replan_request
from cotune.examples import example_path
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

# Later the job, tracked by cotune.track.Tracker, runs out of memory an epoch in: its
# records (here made up inline: the plan's steps, one evaluation, the out-of-memory after
# them) go back with the question, and the switch is rendered as the new submission.
records = [json.loads(line) for line in example_path("cifar10-resnet18").read_text().splitlines() if line.strip()]
where = {"gpu": plan["gpu"], "workers": plan["workers"], "hosts": plan["hosts"], "local_batch": plan["local_batch"]}
records += [
    {"record": "step", **where, "step_time_s": answer["recommendation"]["step_time_s"], "job": "cifar10", "timed_steps": 100},
    {"record": "eval", "global_batch": answer["recommendation"]["global_batch"], "epoch": 1.0, "metric": 0.45,
     "job": "cifar10", "elapsed_s": 120.0},
    {"record": "failure", **where, "failure": "oom", "message": "CUDA out of memory"},
]
again = replan_request({"profile": {"records": records}, "target": 0.94, "deadline_s": 1800, "max_workers": 16,
                        "prices": {"t4": 0.526}})
print(f"{again['decision']}: {again['reason']}")
if again["decision"] == "switch":
    print(to_yaml(render_manifests(again, JobOptions(name="cifar10-2", image="ghcr.io/me/train:1", gang="kueue"))))
