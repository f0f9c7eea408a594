"""Submit, wait, graphs and schedules from application code (docs/python.md)."""

from shop import add, send_receipt, total, yard

from taskyard import Graph, JobFailed

job = add.submit(2, 3)                      # a JobHandle: job.id, job.state(), job.result()
print("add:", job.result(timeout=60))

jobs = add.submit_many([(1, 1), {"a": 2, "b": 2}])  # one transaction, all or nothing
print("many:", [j.result(timeout=60) for j in jobs])

urgent = add.options(priority=10).submit(a=20, b=22)
print("urgent:", urgent.result(timeout=60))

once = send_receipt.options(unique_key="order-42", unique_for="1h")  # one per order, per hour
first = once.submit("ada", 30)
again = once.submit("ada", 30)              # the same job: the key is held for an hour
print("unique:", again == first, first.result(timeout=60))

try:
    add.submit("2", 3).result(timeout=60)   # "2" + 3 raises in the handler
except JobFailed as failed:
    print("failed:", failed.job.state, failed.job.attempt, "attempts")

g = Graph(routing="sums")
left = g.task("left", add, {"a": 1, "b": 2})
right = g.task("right", add, {"a": 3, "b": 4})
g.task("sum", total, {"values": [left.result, right.result]}, requires=[left, right])
graph = yard.wait_graph(yard.submit_graph(g), timeout=60)
print("graph:", graph.state, [j.result for j in graph.jobs if j.label == "sum"])

yard.add_schedule("hourly-sum", add, every="1h", args={"a": 1, "b": 1}, replace=True)
print("schedules:", [s.name for s in yard.list_schedules()])
