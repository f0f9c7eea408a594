"""Task functions of the Python walkthrough (docs/python.md). Workers import this
module to run them: it must be importable from their working directory."""

from taskyard import Yard

yard = Yard()  # $TASKYARD_DB, else sqlite:///taskyard.db; no connection is opened yet


@yard.task_type(retries=2)
def add(a: int, b: int) -> int:
    return a + b


@yard.task_type()
def total(values: list[int]) -> int:
    return sum(values)


@yard.task_type(rate_limit="5/s", rate_key="customer:{customer}")
def send_receipt(customer: str, amount: int) -> str:
    return f"receipt for {customer}: {amount}"
